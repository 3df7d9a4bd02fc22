"""One JSON object per log line: reviews, errors (with the traceback as a field) and TLS events."""

from __future__ import annotations

import json
import logging
import math
import sys
import time
from typing import IO, Any

LOGGER = "gpu_webhook"
_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)
"""One encoder for every line: `json.dumps` with options builds a new one per call."""


class JsonLineFormatter(logging.Formatter):
    """`{"time", "level", "event", "pid", ...fields}`; fields come from `extra={"fields": {...}}`."""

    def __init__(self) -> None:
        super().__init__()
        self._second: tuple[float, str] = (math.nan, "")  # the last second formatted, and its text

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
        return _ENCODER.encode(line)

    def _time(self, created: float) -> str:
        """What `datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds")` says
        (rounded to the microsecond, then cut to the millisecond), at a third of its cost: the
        date and time of day change once a second."""
        whole, micros = _split_seconds(created)
        second, text = self._second
        if second != whole:
            text = time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(whole))
            self._second = (whole, text)  # one tuple, replaced whole: safe across threads
        return f"{text}{micros // 1000:03d}+00:00"


def _split_seconds(timestamp: float) -> tuple[float, int]:
    """Whole seconds and microseconds, rounded half to even as `datetime.fromtimestamp` does."""
    fraction, whole = math.modf(timestamp)
    micros = round(fraction * 1_000_000)
    if micros >= 1_000_000:
        return whole + 1, micros - 1_000_000
    if micros < 0:
        return whole - 1, micros + 1_000_000
    return whole, micros


def configure_logging(stream: IO[str] | None = None, level: int = logging.INFO) -> None:
    """Send the webhook's loggers to stderr as JSON lines (once; safe to call again)."""
    logger = logging.getLogger(LOGGER)
    if any(isinstance(h.formatter, JsonLineFormatter) for h in logger.handlers):
        return
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonLineFormatter())
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
