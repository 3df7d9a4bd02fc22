"""gunicorn's gthread worker, changed in how it takes new connections.

A new connection waits for its first bytes in the worker's poller, not on a pool thread, and
is closed if none arrive within --io-timeout. gunicorn handed it to a thread that waited 5 s
for them, then parked it for the 120 s keepalive: with `--threads 2`, two silent TCP
connections delayed `/healthz` by 5 s, six by 15 s, and none was closed within 20 s. Once
bytes arrive, slow_clients.BoundedSSLSocket bounds the handshake and the request.
"""

from __future__ import annotations

import selectors
import time
from functools import partial
from typing import Any, Final

from gunicorn.workers.gthread import TConn, ThreadWorker

from webhook.server.slow_clients import IO_TIMEOUT

GTHREAD: Final = "gthread"
WORKER_CLASS: Final = "webhook.server.worker.WebhookThreadWorker"


class WebhookThreadWorker(ThreadWorker):  # type: ignore[misc]  # gunicorn ships no type hints
    """ThreadWorker whose new connections wait for their first bytes in the poller."""

    io_timeout: float = IO_TIMEOUT

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
        """Wake up by the first pending deadline too: gunicorn polls for up to 1 s, which would let a
        silent connection stay up to a second past --io-timeout."""
        if self.pending_conns:
            timeout = min(timeout, max(self.pending_conns[0].timeout - time.monotonic(), 0.0))
        super().wait_for_and_dispatch_events(timeout)

    def accept_one(self, listener: Any) -> bool:
        """Accept one queued connection, which reaches a thread when its first bytes do; False once
        the queue is empty."""
        try:
            client, address = listener.accept()
        except (BlockingIOError, InterruptedError):
            return False
        except ConnectionAbortedError:
            return True  # reset by its client while queued: look at the next
        self.wait_for_first_bytes(TConn(self.cfg, client, address, listener.getsockname()))
        return True


def worker_class(name: str, io_timeout: float) -> str | type[Any]:
    """What gunicorn's `worker_class` setting gets for `name`: gthread (by that name or this module's)
    is WebhookThreadWorker with `io_timeout`; any other class (sync, for the benchmark) as named."""
    if name not in (GTHREAD, WORKER_CLASS):
        return name
    return type(WebhookThreadWorker.__name__, (WebhookThreadWorker,), {"io_timeout": io_timeout})
