"""gunicorn's post_worker_init: the worker's sources start, then what exists is frozen out of the
garbage collector's later work, after the garbage of start-up has been collected."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from tests.conftest import INVENTORIES, ROOT
from webhook.server import gunicorn_conf
from webhook.server.app import create_app, runtime_of, stop_sources
from webhook.sources import FileInventorySource, StaticCatalogSource


class Cycle:
    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def thawed() -> Iterator[None]:
    """No automatic collection meanwhile (it could collect the start-up garbage first), and
    whatever this test freezes is handed back to the collector afterwards."""
    gc.unfreeze()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.unfreeze()


@pytest.mark.usefixtures("thawed")
def test_a_started_worker_is_ready_and_frozen_without_its_garbage() -> None:
    catalog = StaticCatalogSource([ROOT / "templates", ROOT / "policies"])
    app = create_app(catalog, FileInventorySource(INVENTORIES / "mixed-cluster.yaml"))
    garbage = Cycle()
    gone = weakref.ref(garbage)
    del garbage
    assert gc.get_freeze_count() == 0
    gunicorn_conf.post_worker_init(SimpleNamespace(wsgi=app))
    try:
        assert runtime_of(app).readiness()["ready"] is True
        assert gone() is None, "a cycle left from start-up would have been kept for good"
        assert gc.get_freeze_count() > 10_000, "the libraries and the catalog are frozen"
        after = Cycle()
        collected = weakref.ref(after)
        del after
        gc.collect()
        assert collected() is None, "what comes after the freeze is collected as before"
    finally:
        stop_sources(app)
