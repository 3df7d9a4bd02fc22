"""What `pip install gpu-webhook` takes from pyproject.toml: dependency versions that run the code."""

from __future__ import annotations

import re
import tomllib

from gunicorn.workers.gthread import TConn, ThreadWorker

from tests.conftest import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))

GTHREAD_NEEDS = (27, 0)
"""The gunicorn the server's worker (webhook/server/worker.py) is written against: it parks new
connections with gthread's pending ones (`pending_conns`, `on_pending_socket_readable`, which
gunicorn 25 and earlier do not have) and takes over its graceful close (`TConn.close(graceful)`)."""


def minimum(name: str) -> tuple[int, ...]:
    """The `>=` bound pyproject.toml declares for the runtime dependency `name`."""
    (bound,) = [
        match.group(1)
        for requirement in PYPROJECT["project"]["dependencies"]
        if (match := re.fullmatch(rf"{name}>=([\d.]+)", requirement.replace(" ", "")))
    ]
    return tuple(int(part) for part in bound.split("."))


def test_the_declared_gunicorn_has_the_gthread_worker_the_server_extends() -> None:
    """An install that keeps an older gunicorn (23, as many environments pin) satisfied the
    declared bound, and every worker of `serve` then failed on the first missing method."""
    assert hasattr(ThreadWorker, "on_pending_socket_readable")
    assert "graceful" in TConn.close.__code__.co_varnames
    assert minimum("gunicorn") >= GTHREAD_NEEDS
