"""gunicorn's gthread worker with two changes to how it takes and gives up connections.

- A new connection waits for its first bytes in the worker's poller, not on a pool thread, and
  is closed if none arrive within --io-timeout. gunicorn handed it to a thread that waited 5 s
  for them, then parked it for the 120 s keepalive: with `--threads 2`, two silent TCP
  connections delayed `/healthz` by 5 s, six by 15 s, and none was closed within 20 s. Once
  bytes arrive, slow_clients.BoundedSSLSocket bounds the handshake and the request.
- A stopping worker (SIGHUP's reload, SIGTERM, max requests) accepts what is queued on its
  listening socket and closes it at once. With reuse_port each worker has its own socket in the
  kernel's SO_REUSEPORT group, and gunicorn only stopped polling it while the worker finished
  its connections: the kernel kept queueing new connections there, and all were reset when the
  socket closed up to graceful_timeout later (2-17 resets per 5 SIGHUPs under a load of new
  connections). Closed, it leaves the group and the kernel sends new connections to the other
  workers; it waits (accepting and serving) until one of them listens first, 2 s at most, since
  SIGHUP stops the old workers right after forking the new ones. What is left: a connection the
  kernel queues between the last accept and the close, or whose TCP handshake is under way
  then, is still reset (Linux's net.ipv4.tcp_migrate_req=1 moves those to another worker's
  socket instead): microseconds on loopback unless the worker is descheduled between the two,
  one round trip over a network; 1 reset in 11 runs of 5 SIGHUPs, on a machine loaded well past
  its cores.
- A connection closed after its answer lingers in the poller, not on the worker's main thread.
  gunicorn closes one as RFC 9112 9.6 asks (FIN, then read what the client still sends until it
  closes, 2 s and 64 KiB at most, so that no RST cuts the answer), but it waited for the client
  right there: clients that stalled (cut by --io-timeout) or did not close after an HTTP/1.0
  answer held the loop 2 s each, one after another, so 60 of them kept `/healthz` waiting 30-40 s
  and the worker, sending no heartbeat, was killed by gunicorn's timeout with every connection
  it held.
- A worker out of file descriptors (accept(2) fails with EMFILE, ENFILE, ENOBUFS or ENOMEM)
  stops accepting for ACCEPT_PAUSE and serves what it holds. gunicorn let the error out of its
  loop, which killed the worker with every connection it held.
"""

from __future__ import annotations

import contextlib
import errno
import os
import selectors
import socket
import ssl
import time
from collections import deque
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, Final

from gunicorn.workers.gthread import TConn, ThreadWorker

from webhook.server.slow_clients import IO_TIMEOUT

HANDOVER_SECONDS: Final = 2.0
"""How long a stopping worker keeps its listening socket, accepting, until another one listens."""
HANDOVER_POLL: Final = 0.01
LISTEN: Final = "0A"
"""TCP_LISTEN in /proc/net/tcp's `st` column."""
LINGER_SECONDS: Final = 2.0
LINGER_BYTES: Final = 65536
"""How long, and for how much of what the client still sends, a closed connection lingers: what
gunicorn's close_graceful allows."""
GTHREAD: Final = "gthread"
ACCEPT_PAUSE: Final = 0.1
"""How long a worker that ran out of file descriptors (or kernel memory) stops accepting."""
OUT_OF_RESOURCES: Final = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


class LingeringConn(TConn):  # type: ignore[misc]  # gunicorn ships no type hints
    """gunicorn's connection, whose graceful close is handed to the worker's poller."""

    linger: Callable[[Any], None]

    def close(self, graceful: bool = False) -> None:
        if graceful:
            self.linger(self.sock)
        else:
            super().close()


WORKER_CLASS: Final = "webhook.server.worker.WebhookThreadWorker"


class WebhookThreadWorker(ThreadWorker):  # type: ignore[misc]  # gunicorn ships no type hints
    """ThreadWorker whose new connections wait in the poller and whose listeners close on stop."""

    io_timeout: float = IO_TIMEOUT
    sockets: list[Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lingering: dict[Any, int] = {}
        """Sockets closed after their answer, each with the bytes read from it since."""
        self.accept_paused_until = 0.0
        """Until when (monotonic) the worker accepts nothing: it ran out of file descriptors."""
        self.linger_deadlines: deque[tuple[float, Any]] = deque()
        """When each lingering socket is closed at the latest, in that order (all linger as long)."""

    def finish_request(self, conn: Any, fs: Any) -> None:
        """gunicorn's, but a kept-alive TLS connection whose next request OpenSSL has already read
        and decrypted goes straight back to a thread: those bytes do not make the socket readable,
        so the poller never woke for it (a pipelined request sent in one TLS record with a body
        over 8 KiB that came before it waited for the 120 s keepalive and was never answered)."""
        if not fs.cancelled() and fs.exception() is None and fs.result() is True and pending_bytes(conn.sock):
            self.enqueue_req(conn)
            return
        super().finish_request(conn, fs)

    def linger(self, sock: Any) -> None:
        """Close `sock` as gunicorn's close_graceful does, waiting for the client in the poller."""
        try:
            sock.shutdown(socket.SHUT_WR)
            sock.setblocking(False)
            self.poller.register(sock, selectors.EVENT_READ, self.drain)
        except (OSError, ValueError, KeyError):
            close_quietly(sock)
            return
        self.lingering[sock] = 0
        self.linger_deadlines.append((time.monotonic() + LINGER_SECONDS, sock))

    def drain(self, sock: Any) -> None:
        """Read what the lingering client sent; closed at its end of file, or past LINGER_BYTES."""
        try:
            data = sock.recv(4096)
        except (BlockingIOError, InterruptedError, ssl.SSLWantReadError):
            return
        except OSError:
            data = b""
        drained = self.lingering.get(sock, 0) + len(data)
        if not data or drained >= LINGER_BYTES:
            self.end_linger(sock)
        else:
            self.lingering[sock] = drained

    def end_linger(self, sock: Any) -> None:
        if self.lingering.pop(sock, None) is None:
            return
        with contextlib.suppress(KeyError, ValueError, OSError):
            self.poller.unregister(sock)
        close_quietly(sock)

    def end_expired_lingers(self) -> None:
        now = time.monotonic()
        while self.linger_deadlines and self.linger_deadlines[0][0] <= now:
            self.end_linger(self.linger_deadlines.popleft()[1])

    def accept(self, listener: Any) -> None:
        """Take one connection (the poller found `listener` readable)."""
        self.accept_one(listener)

    def wait_for_first_bytes(self, conn: Any) -> None:
        """Park `conn` with gunicorn's pending connections (those it defers from a thread): readable,
        it goes to a thread (`on_pending_socket_readable`); past its deadline `murder_pending`
        closes it. Every pending connection gets the same timeout, so the deque stays in deadline
        order, which `murder_pending` relies on; gunicorn defers none of these again, since they
        reach `handle` readable."""
        self.nr_conns += 1
        conn.timeout = time.monotonic() + self.io_timeout
        self.pending_conns.append(conn)
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self.on_pending_socket_readable, conn))

    def wait_for_and_dispatch_events(self, timeout: float) -> None:
        """Wake up by the first pending or lingering deadline too: gunicorn polls for up to 1 s,
        which would let a silent connection stay up to a second past --io-timeout."""
        now = time.monotonic()
        if self.pending_conns:
            timeout = min(timeout, max(self.pending_conns[0].timeout - now, 0.0))
        if self.linger_deadlines:
            timeout = min(timeout, max(self.linger_deadlines[0][0] - now, 0.0))
        if self.accept_paused_until > now:
            timeout = min(timeout, self.accept_paused_until - now)
        super().wait_for_and_dispatch_events(timeout)
        self.end_expired_lingers()

    def set_accept_enabled(self, enabled: bool) -> None:
        """gunicorn calls this with False when the worker stops (and when it holds its maximum of
        connections, while alive): stopping, the listeners are emptied and closed. While accepts
        are paused, enabling them waits: gunicorn's loop asks again on each turn."""
        if enabled and time.monotonic() < self.accept_paused_until:
            return
        super().set_accept_enabled(enabled)
        if not enabled and not self.alive:
            self.close_listeners()

    def close_listeners(self) -> None:
        """Accept every connection queued on each listener (served as usual while the worker
        finishes), then close it so the kernel queues no more there. First, for HANDOVER_SECONDS at
        most, wait (accepting) until another socket listens on the port: on SIGHUP gunicorn stops
        the old workers as soon as it has forked the new ones, which bind a moment later, and
        closing before then refused the connections that came meanwhile."""
        deadline = time.monotonic() + HANDOVER_SECONDS
        while not others_listen(self.sockets) and time.monotonic() < deadline:
            self.accept_queued()
            self.wait_for_and_dispatch_events(HANDOVER_POLL)  # serving what it has meanwhile
        self.accept_queued()
        for listener in self.sockets:
            listener.close()
        self.sockets = []

    def accept_queued(self) -> None:
        for listener in self.sockets:
            listener.setblocking(False)
            while self.accept_one(listener):
                pass

    def accept_one(self, listener: Any) -> bool:
        """Accept one queued connection, which reaches a thread when its first bytes do; False once
        the queue is empty."""
        try:
            client, address = listener.accept()
        except (BlockingIOError, InterruptedError):
            return False
        except ConnectionAbortedError:
            return True  # reset by its client while queued: look at the next
        except OSError as error:
            if error.errno not in OUT_OF_RESOURCES:
                raise
            self.pause_accepting(error)
            return False
        conn = LingeringConn(self.cfg, client, address, listener.getsockname())
        conn.linger = self.linger
        self.wait_for_first_bytes(conn)
        return True

    def pause_accepting(self, error: OSError) -> None:
        """Stop polling the listeners for ACCEPT_PAUSE: the queued connections wait in the kernel
        while the worker finishes (and closes) some of those it holds."""
        self.log.error("cannot accept connections: %s; pausing accepts for %.1f s", error, ACCEPT_PAUSE)
        self.accept_paused_until = time.monotonic() + ACCEPT_PAUSE
        ThreadWorker.set_accept_enabled(self, False)


def others_listen(listeners: list[Any]) -> bool:
    """Whether a TCP socket other than `listeners` listens on their port (in this network namespace:
    only this server's workers can, serve refuses a port in use). True where that cannot be read,
    so the listeners close at once."""
    ours = {os.fstat(listener.fileno()).st_ino for listener in listeners}
    listening = listening_inodes({listener.getsockname()[1] for listener in listeners})
    return listening is None or bool(listening - ours)


def listening_inodes(ports: set[int]) -> set[int] | None:
    """The inodes of the TCP sockets listening on `ports`, from /proc/net/tcp and tcp6 (None
    where they cannot be read)."""
    try:
        text = Path("/proc/net/tcp").read_text()
    except OSError:
        return None
    tcp6 = Path("/proc/net/tcp6")
    text += tcp6.read_text() if tcp6.exists() else ""  # absent where IPv6 is off
    hex_ports = {f"{port:04X}" for port in ports}
    found = set()
    for fields in (line.split() for line in text.splitlines()):
        if len(fields) > 9 and fields[3] == LISTEN and fields[1].rpartition(":")[2] in hex_ports:
            found.add(int(fields[9]))
    return found


def worker_class(name: str, io_timeout: float) -> str | type[Any]:
    """What gunicorn's `worker_class` setting gets for `name`: gthread (by that name or this module's)
    is WebhookThreadWorker with `io_timeout`; any other class (sync, for the benchmark) as named."""
    if name not in (GTHREAD, WORKER_CLASS):
        return name
    return type(WebhookThreadWorker.__name__, (WebhookThreadWorker,), {"io_timeout": io_timeout})


def close_quietly(sock: Any) -> None:
    with contextlib.suppress(OSError):
        sock.close()


def pending_bytes(sock: Any) -> int:
    """Bytes a TLS socket has read and decrypted that no one has taken yet (0 for plain sockets)."""
    pending = getattr(sock, "pending", None)
    try:
        return int(pending()) if callable(pending) else 0
    except (OSError, ValueError):
        return 0
