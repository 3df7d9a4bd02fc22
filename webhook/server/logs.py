"""One JSON object per log line: reviews, errors (with the traceback as a field) and TLS events.

The review line, written on every review, skips the LogRecord when nothing but our own handler
would see it (`write_line`): making the record and passing it down the logger hierarchy cost
about as much as the rest of the line. Whatever else is configured (a filter, another handler,
propagation, a level) gets the record as before.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import sys
import time
import warnings
from typing import IO, Any

from webhook import jsoncodec

LOGGER = "gpu_webhook"
PACKAGE_LOGGER = "webhook"
"""The modules that log under their own names (`webhook.catalog.reload`, `webhook.inventory.watch`):
without a handler of their own their lines went to Python's last-resort handler, plain text and
warnings only (a catalog that loaded again was never logged)."""
WARNINGS_LOGGER = "py.warnings"
"""Where `logging.captureWarnings` sends Python warnings: urllib3's `InsecureRequestWarning`
(a kubeconfig with `insecure-skip-tls-verify`, as kind and dev clusters have) came as two plain
lines on every list and watch request, among the JSON ones."""
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
    """A stream handler of JSON lines that can also write a line from its fields alone."""

    def __init__(self, stream: IO[str]) -> None:
        super().__init__(stream)
        self.json = JsonLineFormatter()
        self.setFormatter(self.json)

    def write_fields(self, logger: str, event: str, fields: dict[str, Any]) -> None:
        """What `emit` writes for an INFO record of `event` with these fields, made without one."""
        line = self.json.line(time.time(), "info", logger, event, os.getpid())
        line.update(fields)
        text = jsoncodec.encode_line(line) + self.terminator
        self.acquire()
        try:
            self.stream.write(text)
            self.stream.flush()
        except Exception:  # as emit does: report on stderr, never fail the review
            self.handleError(logging.makeLogRecord({"name": logger, "msg": event, "levelno": logging.INFO}))
        finally:
            self.release()


def bounded(value: Any, limit: int) -> Any:
    """`value`, a text cut to `limit` characters saying how many more there were: a line over
    16 KiB is split by container runtimes into pieces that are no JSON."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]}... ({len(value) - limit} more characters)"
    return value


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


def configure_logging(stream: IO[str] | None = None, level: int = logging.INFO) -> None:
    """Send the webhook's loggers to stderr as JSON lines (once; safe to call again).

    Records stop looking up the thread and the multiprocessing process names, and the caller's
    file and line (by walking the stack), which no line of this process shows (the logging
    HOWTO's "Optimization"): together near half of what a review's log line cost. This is
    process-wide, as `serve` and gunicorn's workers are the webhook's own.
    """
    logging.logThreads = False
    logging.logMultiprocessing = False
    logging._srcfile = None  # the HOWTO's own way to skip the stack walk (findCaller)
    _capture_warnings()
    handler: JsonLineHandler | None = None
    for name in (LOGGER, PACKAGE_LOGGER, WARNINGS_LOGGER):
        logger = logging.getLogger(name)
        if any(isinstance(h.formatter, JsonLineFormatter) for h in logger.handlers):
            continue
        handler = handler or JsonLineHandler(stream or sys.stderr)
        logger.addHandler(handler)
        logger.setLevel(level)
        logger.propagate = False


def _capture_warnings() -> None:
    """Python warnings become JSON lines (level warning, the warning as the event); urllib3's
    warning about unverified HTTPS, which it asks to show on every request, is shown once per
    process: the kubeconfig that asked for it does not change while the server runs."""
    logging.captureWarnings(True)
    warnings.filterwarnings("once", message="Unverified HTTPS request")
