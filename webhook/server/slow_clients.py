"""Bound how long one connection may hold a worker thread: the TLS handshake and each read or write.

A new connection waits for its first bytes in the worker's poller, within IO_TIMEOUT
(webhook/server/worker.py); once they arrive gunicorn's gthread worker serves it on a thread,
with a blocking socket and no timeout. A client that sends part of a ClientHello, or of
a request, and then nothing held that thread for good: threads x workers such clients (8 with
the defaults on 2 cores) and the webhook answered nobody, `/healthz` included, while the API
server's calls failed into `failurePolicy`. With a timeout on every socket operation, such a
thread is back within about IO_TIMEOUT, 5 s: the API server gives up on a call after the
webhook's `timeoutSeconds` (5 in deploy/), so a request that takes longer to arrive would be
answered to nobody. This bounds the harm, it does not make a thread per connection immune to a
flood of stalled clients: keep the webhook's Service reachable from the API server alone.

The timeout goes on the TLS socket class the SSLContext makes (`sslsocket_class`), since gunicorn
sets each connection blocking again (`setblocking(True)`, which clears a timeout) before every
request it reads.
"""

from __future__ import annotations

import logging
import ssl
import time
from collections.abc import Callable
from typing import Any, Final, cast

IO_TIMEOUT: Final = 5.0
"""Seconds one handshake, read or write may take before the connection is closed (the default
of `serve --io-timeout`)."""

ContextHook = Callable[[Any, Any], ssl.SSLContext]


class BoundedSSLSocket(ssl.SSLSocket):
    """A TLS socket whose blocking mode has a timeout, from the handshake on; and a request (its
    headers and body) must have arrived within the timeout of its first read, so a client that
    trickles a byte now and then does not hold the thread either."""

    io_timeout = IO_TIMEOUT
    read_deadline: float | None = None

    def setblocking(self, flag: bool) -> None:
        if flag:  # gunicorn, before each request it reads
            self.read_deadline = time.monotonic() + self.io_timeout
            self.settimeout(self.io_timeout)
        else:
            super().setblocking(False)

    def do_handshake(self, block: bool = False) -> None:
        if self.gettimeout() is None:
            self.settimeout(self.io_timeout)
            self.read_deadline = time.monotonic() + self.io_timeout
        super().do_handshake(block)

    def recv(self, buflen: int = 1024, flags: int = 0) -> bytes:
        self._before_read()
        return super().recv(buflen, flags)

    def recv_into(self, buffer: Any, nbytes: int | None = None, flags: int = 0) -> int:
        self._before_read()
        return super().recv_into(buffer, nbytes, flags)

    def sendall(self, data: Any, flags: int = 0) -> None:
        if self.gettimeout() not in (None, 0.0):
            self.settimeout(self.io_timeout)  # an answer gets the whole timeout, whatever the read left
        super().sendall(data, flags)

    def _before_read(self) -> None:
        """Shorten the timeout to what the request has left; never lengthen one the caller set:
        gunicorn drains a connection it closes on the worker's main thread with 2 s, and the
        whole --io-timeout there blocked the worker's loop until gunicorn killed it."""
        deadline, timeout = self.read_deadline, self.gettimeout()
        if deadline is None or timeout is None or timeout == 0.0:
            return
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request did not arrive within --io-timeout")
        if left < timeout:
            self.settimeout(left)


def bounded_io(hook: ContextHook, seconds: float = IO_TIMEOUT) -> ContextHook:
    """gunicorn's `ssl_context(conf, default_ssl_context_factory)` hook, with its contexts making
    BoundedSSLSocket connections that time out after `seconds`."""
    socket_class = cast(
        type[ssl.SSLSocket], type("BoundedSSLSocket", (BoundedSSLSocket,), {"io_timeout": seconds})
    )

    def context(conf: Any, default_factory: Any) -> ssl.SSLContext:
        made = hook(conf, default_factory)
        made.sslsocket_class = socket_class
        return made

    return context


class QuietTimeouts(logging.Filter):
    """gunicorn logs a connection that timed out as an error with a traceback ("Socket error
    processing request."): a slow or stalled client is a warning of one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if record.msg == "Socket error processing request." and isinstance(error, TimeoutError):
            record.msg, record.args, record.exc_info = (
                "closed a connection that stalled (--io-timeout)",
                (),
                None,
            )
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True
