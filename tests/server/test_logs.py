"""The review log line's time field: formatted once a second, written as datetime writes it."""

from __future__ import annotations

import datetime as dt
import logging

from hypothesis import given
from hypothesis import strategies as st

from webhook.server.logs import JsonLineFormatter


def isoformat(created: float) -> str:
    return dt.datetime.fromtimestamp(created, dt.UTC).isoformat(timespec="milliseconds")


@given(st.floats(min_value=0, max_value=4e9, allow_nan=False))
def test_the_time_is_what_isoformat_writes(created: float) -> None:
    record = logging.LogRecord("gpu_webhook.server", logging.INFO, __file__, 1, "review", (), None)
    record.created = created
    assert JsonLineFormatter().format(record).startswith(f'{{"time":"{isoformat(created)}"')


def test_the_cached_second_follows_the_clock_and_rounds_up_into_the_next() -> None:
    formatter = JsonLineFormatter()
    for created in (100.2, 100.9, 100.9999996, 101.0, 99.5, 1_764_000_000.0005, 1_764_000_000.9994):
        record = logging.LogRecord("gpu_webhook.server", logging.INFO, __file__, 1, "review", (), None)
        record.created = created
        assert formatter.format(record).startswith(f'{{"time":"{isoformat(created)}"')
