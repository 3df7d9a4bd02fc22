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

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
            "pid": record.process,
        }
        line.update(getattr(record, "fields", {}))
        if record.exc_info:
            line["traceback"] = self.formatException(record.exc_info)
        return jsoncodec.encode_line(line)


def configure_logging(stream: IO[str] | None = None, level: int = logging.INFO) -> None:
    """Send the webhook's loggers to stderr as JSON lines (once; safe to call again).

    Records stop looking up the thread and the multiprocessing process names, which no line of
    this process shows (the logging HOWTO's "Optimization"): a third of what a review's log
    line cost. This is process-wide, as `serve` and gunicorn's workers are the webhook's own.
    """
    logging.logThreads = False
    logging.logMultiprocessing = False
    logger = logging.getLogger(LOGGER)
    if any(isinstance(h.formatter, JsonLineFormatter) for h in logger.handlers):
        return
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonLineFormatter())
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
