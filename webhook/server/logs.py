"""One JSON object per log line: reviews, errors (with the traceback as a field) and TLS events."""

from __future__ import annotations

import datetime as dt
import logging
import sys
from typing import IO, Any

from webhook import jsoncodec

LOGGER = "gpu_webhook"


class JsonLineFormatter(logging.Formatter):
    """`{"time", "level", "event", "pid", ...fields}`; fields come from `extra={"fields": {...}}`."""

    def __init__(self) -> None:
        super().__init__()
        self._second: tuple[int, str] = (-1, "")

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": self._time(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
            "pid": record.process,
        }
        line.update(getattr(record, "fields", {}))
        if record.exc_info:
            line["traceback"] = self.formatException(record.exc_info)
        return jsoncodec.encode_line(line)

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
        return f"{prefix}.{micros // 1000:03d}+00:00"


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
    logger = logging.getLogger(LOGGER)
    if any(isinstance(h.formatter, JsonLineFormatter) for h in logger.handlers):
        return
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonLineFormatter())
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
