"""The review log line: the line a record would make, its time formatted once a second as datetime
writes it, and review lines written in batches without losing, doubling or reordering any."""

from __future__ import annotations

import datetime as dt
import io
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webhook.server.logs import BATCH_BYTES, JsonLineFormatter, JsonLineHandler, write_line


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


Logger = tuple[logging.Logger, io.StringIO]
FIELDS = {"uid": "u-1", "endpoint": "mutate", "codes": ["RewrittenToMig"], "allowed": True, "latencyMs": 0.5}


@pytest.fixture
def logger(request: pytest.FixtureRequest) -> Iterator[tuple[logging.Logger, io.StringIO]]:
    """`gpu_webhook_test.server` under a parent set up as `configure_logging` sets up ours; each
    line written at once unless the test is parametrized with `flush_seconds`."""
    stream = io.StringIO()
    parent, child = unregistered("gpu_webhook_test"), unregistered("gpu_webhook_test.server")
    child.parent = parent
    parent.addHandler(JsonLineHandler(stream, getattr(request, "param", 0.0)))
    parent.setLevel(logging.INFO)
    parent.propagate = False
    yield child, stream


def unregistered(name: str) -> logging.Logger:
    """A logger outside logging's registry: pytest adds its capture handlers to every registered
    logger that does not propagate, and with them the review line takes the record's way."""
    return logging.Logger(name)


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


def test_a_filter_still_stops_the_line(logger: Logger) -> None:
    log, stream = logger
    log.addFilter(lambda record: False)
    write_line(log, "review", FIELDS)
    assert stream.getvalue() == ""


def test_a_level_still_stops_the_line(logger: Logger) -> None:
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


def kept(seconds: float) -> pytest.MarkDecorator:
    return pytest.mark.parametrize("logger", [seconds], indirect=True)


@kept(60)
def test_review_lines_are_kept_then_written_in_order_on_flush(logger: Logger) -> None:
    log, stream = logger
    for uid in ("u-1", "u-2", "u-3"):
        write_line(log, "review", {**FIELDS, "uid": uid})
    assert stream.getvalue() == ""
    (handler,) = log.parent.handlers  # type: ignore[union-attr]
    handler.flush()
    assert [line["uid"] for line in lines(stream)] == ["u-1", "u-2", "u-3"]
    handler.flush()
    assert len(lines(stream)) == 3, "each line once"


@kept(0.2)
def test_a_kept_line_is_written_within_flush_seconds_without_another_review(
    logger: Logger,
) -> None:
    log, stream = logger
    write_line(log, "review", FIELDS)
    deadline = time.monotonic() + 5
    while not stream.getvalue() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert [line["uid"] for line in lines(stream)] == ["u-1"]


@kept(60)
def test_a_warning_comes_after_the_review_lines_kept_before_it(logger: Logger) -> None:
    log, stream = logger
    write_line(log, "review", FIELDS)
    log.warning("bad request", extra={"fields": {"uid": "u-2"}})
    written = [(line["event"], line["uid"]) for line in lines(stream)]
    assert written == [("review", "u-1"), ("bad request", "u-2")]


@kept(60)
def test_lines_past_the_batch_size_are_written_at_once(logger: Logger) -> None:
    log, stream = logger
    written = 0
    while not stream.getvalue():
        write_line(log, "review", {**FIELDS, "uid": f"u-{written}"})
        written += 1
    assert len(stream.getvalue()) >= BATCH_BYTES
    assert [line["uid"] for line in lines(stream)] == [f"u-{n}" for n in range(written)]


def test_lines_kept_before_a_fork_are_written_once_by_the_parent(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    with path.open("a") as stream:
        log = unregistered("gpu_webhook_fork_test")
        handler = JsonLineHandler(stream, 60)
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
        write_line(log, "review", {"uid": "parent"})
        child = os.fork()
        if child == 0:  # the child exits here, through os._exit
            write_line(log, "review", {"uid": "child"})
            handler.flush()
            os._exit(0)
        assert os.waitpid(child, 0)[1] == 0
        handler.flush()
    uids = sorted(json.loads(line)["uid"] for line in path.read_text().splitlines())
    assert uids == ["child", "parent"]


def test_kept_lines_are_written_when_the_process_exits(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    program = f"""
import logging, sys
from webhook.server.logs import configure_logging, write_line
configure_logging(open({str(path)!r}, "a"), flush_seconds=60)
write_line(logging.getLogger("gpu_webhook.server"), "review", {{"uid": "at-exit"}})
sys.exit(0)
"""
    subprocess.run([sys.executable, "-c", program], check=True, timeout=60)
    assert [json.loads(line)["uid"] for line in path.read_text().splitlines()] == ["at-exit"]
