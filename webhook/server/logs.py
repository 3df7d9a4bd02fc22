"""One JSON object per log line: reviews, errors (with the traceback as a field) and TLS events.

The review line, written on every review, skips the LogRecord when nothing but our own handler
would see it (`write_line`): making the record and passing it down the logger hierarchy cost
about as much as the rest of the line. Whatever else is configured (a filter, another handler,
propagation, a level) gets the record as before.

Review lines are kept and written in batches, at most `flush_seconds` after the first one kept
(and at once past BATCH_BYTES, before any other line, and at exit): under load a write per
review cost its thread the GIL, about 30 us of CPU per review in a gunicorn worker, where the
line itself costs 8. A worker killed outright loses at most that much of its review lines;
warnings and errors are written at once. `flush_seconds=0` writes every line at once.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import sys
import threading
import time
import weakref
from typing import IO, Any

from webhook import jsoncodec

LOGGER = "gpu_webhook"
DEFAULT_FLUSH_SECONDS = 1.0
BATCH_BYTES = 64 * 1024
_MILLIS = tuple(f".{n:03d}+00:00" for n in range(1000))
"""What ends a line's time, by millisecond: looked up, not formatted, on each line."""


class JsonLineFormatter(logging.Formatter):
    """`{"time", "level", "event", "pid", ...fields}`; fields come from `extra={"fields": {...}}`."""

    def __init__(self) -> None:
        super().__init__()
        self._second: tuple[int, str] = (-1, "")

    def format(self, record: logging.LogRecord) -> str:
        level, event = record.levelname.lower(), record.getMessage()
        line = self.line(record.created, level, record.name, event, record.process)
        line.update(getattr(record, "fields", {}))
        if record.exc_info:
            line["traceback"] = self.formatException(record.exc_info)
        return jsoncodec.encode_line(line)

    def line(self, created: float, level: str, logger: str, event: str, pid: int | None) -> dict[str, Any]:
        """The fields every line starts with."""
        return {"time": self._time(created), "level": level, "logger": logger, "event": event, "pid": pid}

    def _time(self, created: float) -> str:
        """RFC 3339 in UTC to the millisecond, as `isoformat(timespec="milliseconds")` writes it;
        the date and time of day are formatted once a second, not on every line."""
        second = int(created)
        micros = round((created - second) * 1_000_000)  # rounded to the microsecond first, as datetime does
        if micros == 1_000_000:
            second, micros = second + 1, 0
        cached, prefix = self._second  # one tuple: threads swap it whole
        if cached != second:
            prefix = dt.datetime.fromtimestamp(second, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
            self._second = (second, prefix)
        return prefix + _MILLIS[micros // 1000]


class JsonLineHandler(logging.StreamHandler[IO[str]]):
    """A stream handler of JSON lines that can also write a line from its fields alone, in batches
    (see the module docstring). A flusher thread per process writes what is kept every
    `flush_seconds`; lines kept before a fork are the parent's to write, not the child's."""

    def __init__(self, stream: IO[str], flush_seconds: float = DEFAULT_FLUSH_SECONDS) -> None:
        super().__init__(stream)
        self.json = JsonLineFormatter()
        self.setFormatter(self.json)
        self.flush_seconds = flush_seconds
        self._kept: list[str] = []
        self._kept_bytes = 0
        self._kept_since = 0.0
        self._owner = os.getpid()
        """The process whose lines `_kept` holds, and that runs the flusher thread once started."""
        self._flusher_started = False

    def write_fields(self, logger: str, event: str, fields: dict[str, Any]) -> None:
        """What `emit` writes for an INFO record of `event` with these fields, made without one."""
        now, pid = time.time(), os.getpid()
        line = self.json.line(now, "info", logger, event, pid)
        line.update(fields)
        text = jsoncodec.encode_line(line) + self.terminator
        self.acquire()
        try:
            self._adopt(pid)
            if not self._kept:
                self._kept_since = now
            self._kept.append(text)
            self._kept_bytes += len(text)
            if self._kept_bytes >= BATCH_BYTES or now - self._kept_since >= self.flush_seconds:
                self._write_kept()
            elif not self._flusher_started:
                self._start_flusher()
        finally:
            self.release()

    def emit(self, record: logging.LogRecord) -> None:
        """Kept review lines first, then the record (called with the lock held, by `handle`)."""
        self._adopt(os.getpid())
        self._write_kept()
        super().emit(record)

    def flush(self) -> None:
        self.acquire()
        try:
            self._adopt(os.getpid())
            self._write_kept()
            super().flush()
        finally:
            self.release()

    def _adopt(self, pid: int) -> None:
        """After a fork: drop the parent's kept lines (it writes them) and start afresh."""
        if pid != self._owner:
            self._owner, self._flusher_started = pid, False
            self._kept, self._kept_bytes = [], 0

    def _write_kept(self) -> None:
        if not self._kept:
            return
        text = "".join(self._kept)
        self._kept, self._kept_bytes = [], 0
        try:
            self.stream.write(text)
            self.stream.flush()
        except Exception:  # as emit does: report on stderr, never fail the review
            record = {"name": LOGGER, "msg": "review", "levelno": logging.INFO}
            self.handleError(logging.makeLogRecord(record))

    def _start_flusher(self) -> None:
        self._flusher_started = True
        flusher = threading.Thread(target=_flush_every, args=(weakref.ref(self),), name="log-flush")
        flusher.daemon = True
        flusher.start()


def _flush_every(handler: weakref.ref[JsonLineHandler]) -> None:
    """Write the handler's kept lines every `flush_seconds`, until it is gone or another process's."""
    pid = os.getpid()
    while True:
        alive = handler()
        if alive is None or alive._owner != pid:
            return
        seconds = alive.flush_seconds
        del alive
        time.sleep(max(seconds, 0.05))
        alive = handler()
        if alive is not None:
            alive.flush()
        del alive


def write_line(log: logging.Logger, event: str, fields: dict[str, Any]) -> None:
    """`log.info(event, extra={"fields": fields})`, without the LogRecord when the only one to
    see it would be a `JsonLineHandler` (as `configure_logging` sets up)."""
    if not log.isEnabledFor(logging.INFO):
        return
    handler = _sole_json_handler(log)
    if handler is None:
        log.info(event, extra={"fields": fields})
    else:
        handler.write_fields(log.name, event, fields)


def _sole_json_handler(log: logging.Logger) -> JsonLineHandler | None:
    """The handler an INFO record of `log` reaches, when it is the only handler on the way and
    nothing filters; else None. Walks the hierarchy as `Logger.callHandlers` does (only the
    logger the record starts at applies its filters)."""
    found: JsonLineHandler | None = None
    logger: logging.Logger | None = log
    while logger is not None:
        if logger.filters and logger is log:
            return None
        for handler in logger.handlers:
            if found is not None or type(handler) is not JsonLineHandler or handler.filters:
                return None
            if handler.level <= logging.INFO:
                found = handler
        logger = logger.parent if logger.propagate else None
    return found


def flush_logs() -> None:
    """Write every review line kept so far (a gunicorn worker on its way out)."""
    for handler in logging.getLogger(LOGGER).handlers:
        handler.flush()


def configure_logging(
    stream: IO[str] | None = None, level: int = logging.INFO, flush_seconds: float | None = None
) -> None:
    """Send the webhook's loggers to stderr as JSON lines (once; safe to call again, and
    `flush_seconds`, when given, applies to the handler already there).

    Records stop looking up the thread and the multiprocessing process names, and the caller's
    file and line (by walking the stack), which no line of this process shows (the logging
    HOWTO's "Optimization"): together near half of what a review's log line cost. This is
    process-wide, as `serve` and gunicorn's workers are the webhook's own.
    """
    logging.logThreads = False
    logging.logMultiprocessing = False
    logging._srcfile = None  # the HOWTO's own way to skip the stack walk (findCaller)
    logger = logging.getLogger(LOGGER)
    for handler in logger.handlers:
        if isinstance(handler, JsonLineHandler):
            if flush_seconds is not None:
                handler.flush_seconds = flush_seconds
            return
    seconds = DEFAULT_FLUSH_SECONDS if flush_seconds is None else flush_seconds
    logger.addHandler(JsonLineHandler(stream or sys.stderr, seconds))
    logger.setLevel(level)
    logger.propagate = False
