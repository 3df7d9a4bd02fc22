"""The review log line's time field: formatted once a second, written as datetime writes it."""

from __future__ import annotations

import datetime as dt
import io
import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webhook.server.logs import JsonLineFormatter, JsonLineHandler, _sole_json_handler, write_line


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


FIELDS = {"uid": "u-1", "endpoint": "mutate", "codes": ["RewrittenToMig"], "allowed": True, "latencyMs": 0.5}


@pytest.fixture
def logger() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    """`gpu_webhook_test.server` under a parent set up as `configure_logging` sets up ours."""
    stream = io.StringIO()
    parent, child = unregistered("gpu_webhook_test"), unregistered("gpu_webhook_test.server")
    child.parent = parent
    parent.addHandler(JsonLineHandler(stream))
    parent.setLevel(logging.INFO)
    parent.propagate = False
    yield child, stream


def unregistered(name: str) -> logging.Logger:
    """A logger outside logging's registry: pytest attaches its capture handlers to every
    registered logger that does not propagate, and with one of them there the review line takes
    the record's way, which left the record-less way (`write_fields`) untested."""
    return logging.Logger(name)


def test_the_fixture_takes_the_record_less_way(logger: tuple[logging.Logger, io.StringIO]) -> None:
    log, _ = logger
    (handler,) = log.parent.handlers  # type: ignore[union-attr]
    assert _sole_json_handler(log) is handler


def lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def without_time(line: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in line.items() if key != "time"}


def test_the_review_line_is_the_line_a_record_makes(logger: tuple[logging.Logger, io.StringIO]) -> None:
    log, stream = logger
    write_line(log, "review", FIELDS)
    log.info("review", extra={"fields": FIELDS})
    written, recorded = lines(stream)
    assert list(written) == list(recorded), "the same fields in the same order"
    assert without_time(written) == without_time(recorded)
    expected = {"level": "info", "logger": log.name, "event": "review", "pid": os.getpid(), **FIELDS}
    assert without_time(written) == expected


def test_a_name_can_neither_end_nor_reorder_its_line(logger: tuple[logging.Logger, io.StringIO]) -> None:
    """NEL, the line separator and bidirectional controls were written as they came: a reader
    that splits at them (Python's splitlines) got pieces that are no JSON, and a viewer showed
    the rest of the line reordered (RTL override)."""
    log, stream = logger
    name = "gpu\u2028pod\x85x\u202e}eurt:dewolla{\u2066é"
    write_line(log, "review", {**FIELDS, "name": name})
    log.info("review", extra={"fields": {**FIELDS, "name": name}})
    assert stream.getvalue().isascii() is False  # é stands as it is
    assert not any(c in stream.getvalue() for c in "\u2028\x85\u202e\u2066")
    assert [line["name"] for line in lines(stream)] == [name, name]


def test_another_handler_still_gets_the_record(logger: tuple[logging.Logger, io.StringIO]) -> None:
    log, stream = logger
    records: list[logging.LogRecord] = []
    capture = logging.Handler()
    capture.emit = records.append  # type: ignore[method-assign]
    log.addHandler(capture)
    try:
        write_line(log, "review", FIELDS)
    finally:
        log.removeHandler(capture)
    assert [r.fields for r in records] == [FIELDS]  # type: ignore[attr-defined]
    assert without_time(lines(stream)[0])["uid"] == "u-1"


def test_a_filter_still_stops_the_line(logger: tuple[logging.Logger, io.StringIO]) -> None:
    log, stream = logger
    log.addFilter(lambda record: False)
    write_line(log, "review", FIELDS)
    assert stream.getvalue() == ""


def test_a_level_still_stops_the_line(logger: tuple[logging.Logger, io.StringIO]) -> None:
    """Its own test: setLevel does not empty the level cache of a logger outside the registry."""
    log, stream = logger
    log.setLevel(logging.WARNING)
    write_line(log, "review", FIELDS)
    assert stream.getvalue() == ""


def test_a_broken_stream_is_reported_not_raised(
    logger: tuple[logging.Logger, io.StringIO], capsys: pytest.CaptureFixture[str]
) -> None:
    log, stream = logger
    stream.close()
    write_line(log, "review", FIELDS)
    assert "ValueError" in capsys.readouterr().err


WARN_TWICE = """
import sys, warnings
{first}
from webhook.server.logs import configure_logging
configure_logging()
{then}
from urllib3.exceptions import InsecureRequestWarning
def request():  # as urllib3 warns: from one place, on every request
    warnings.warn("Unverified HTTPS request is being made to host '127.0.0.1'.", InsecureRequestWarning)
request(); request()
warnings.warn("something else", UserWarning)
"""


@pytest.mark.parametrize("urllib3_first", [True, False], ids=["urllib3-imported-first", "logging-first"])
def test_python_warnings_are_json_lines_and_the_insecure_request_one_comes_once(urllib3_first: bool) -> None:
    """A kubeconfig with insecure-skip-tls-verify made urllib3 print two plain lines on every
    list and watch request among the JSON ones (urllib3 asks for them `always`)."""
    imports = ("import urllib3", "") if urllib3_first else ("", "import urllib3")
    script = WARN_TWICE.format(first=imports[0], then=imports[1])
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    found = [json.loads(line) for line in result.stderr.splitlines()]  # every line is JSON
    assert [(line["level"], line["logger"]) for line in found] == [("warning", "py.warnings")] * 2
    assert "Unverified HTTPS request" in found[0]["event"] and "something else" in found[1]["event"]
