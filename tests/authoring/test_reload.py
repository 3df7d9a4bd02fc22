"""The live-reloading catalog source on folders laid out as the kubelet mounts a ConfigMap."""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from tests.conftest import ROOT
from webhook.catalog import lint_paths, load_catalog
from webhook.catalog import reload as reload_module
from webhook.catalog.reload import ReloadingCatalogSource
from webhook.core.model import Catalog
from webhook.server.logs import JsonLineFormatter

TEMPLATE = """\
apiVersion: gpu.aethervirt.io/v1
kind: WorkloadTemplate
metadata:
  name: {name}
  description: {version}
spec:
  kind: inference
  accelerator: {{gpu: optional}}
"""
POLICY = """\
apiVersion: gpu.aethervirt.io/v1
kind: GpuPolicy
metadata: {name: default}
spec:
  namespaces: ["*"]
"""
BROKEN = (
    "apiVersion: gpu.aethervirt.io/v1\nkind: WorkloadTemplate\nmetadata: {name: a}\nspec: {colour: red}\n"
)


class ConfigMapMount:
    """A folder as the kubelet keeps a mounted ConfigMap: `..<n>/` holds the files, `..data`
    points at it, and each key is a symlink through `..data`. An update writes a new `..<n>/`
    and swaps `..data` atomically with a rename, then drops the old folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.generation = 0
        root.mkdir()

    def publish(self, files: dict[str, str]) -> None:
        self.generation += 1
        new = self.root / f"..{self.generation}"
        new.mkdir()
        for name, text in files.items():
            (new / name).write_text(text)
        old = os.readlink(self.root / "..data") if (self.root / "..data").is_symlink() else None
        (self.root / "..data_tmp").symlink_to(new.name)
        os.replace(self.root / "..data_tmp", self.root / "..data")
        for name in files:
            if not (self.root / name).is_symlink():
                (self.root / name).symlink_to(f"..data/{name}")
        for link in self.root.iterdir():
            if link.is_symlink() and not link.name.startswith("..") and link.name not in files:
                link.unlink()
        if old is not None:
            shutil.rmtree(self.root / old)


def templates(version: str) -> dict[str, str]:
    return {f"{n}.yaml": TEMPLATE.format(name=n, version=version) for n in ("a", "b")}


@pytest.fixture
def mounts(tmp_path: Path) -> tuple[ConfigMapMount, ConfigMapMount]:
    template_mount, policy_mount = (
        ConfigMapMount(tmp_path / "templates"),
        ConfigMapMount(tmp_path / "policies"),
    )
    template_mount.publish(templates("v1"))
    policy_mount.publish({"default.yaml": POLICY})
    return template_mount, policy_mount


def source_for(
    mounts: tuple[ConfigMapMount, ConfigMapMount], registry: CollectorRegistry
) -> ReloadingCatalogSource:
    return ReloadingCatalogSource([mounts[0].root, mounts[1].root], interval=3600, registry=registry)


def version(catalog: Catalog) -> str:
    return next(iter(catalog.templates.values())).description


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def test_loads_a_configmap_mount_once_per_file(mounts: tuple[ConfigMapMount, ConfigMapMount]) -> None:
    registry = CollectorRegistry()
    source = source_for(mounts, registry)
    assert not source.ready()
    with pytest.raises(RuntimeError):
        source.current()
    source.start()
    try:
        assert source.ready()
        assert set(source.current().templates) == {"a", "b"}
        status = source.status()
        assert status["loaded"] and status["templates"] == 2 and status["policies"] == 1
        assert len(status["digest"]) == 64 and status["loadedAt"] and status["lastError"] is None
        assert sample(registry, "gpu_webhook_catalog_reloads_total", result="success") == 1
        assert sample(registry, "gpu_webhook_catalog_last_reload_success") == 1
    finally:
        source.stop()


def test_a_swap_loads_a_new_catalog_and_an_unchanged_mount_does_not(
    mounts: tuple[ConfigMapMount, ConfigMapMount],
) -> None:
    source = source_for(mounts, CollectorRegistry())
    source.check_now()
    first, digest = source.current(), source.status()["digest"]
    assert source.check_now() is False and source.current() is first
    mounts[0].publish(templates("v2"))
    assert source.check_now() is True
    assert version(source.current()) == "v2" and version(first) == "v1"
    assert source.status()["digest"] != digest


def test_a_removed_key_disappears(mounts: tuple[ConfigMapMount, ConfigMapMount]) -> None:
    source = source_for(mounts, CollectorRegistry())
    source.check_now()
    mounts[0].publish({"a.yaml": TEMPLATE.format(name="a", version="v2")})
    assert source.check_now() is True
    assert set(source.current().templates) == {"a"}


def test_a_broken_reload_keeps_the_last_good_catalog_and_says_so(
    mounts: tuple[ConfigMapMount, ConfigMapMount], caplog: pytest.LogCaptureFixture
) -> None:
    registry = CollectorRegistry()
    source = source_for(mounts, registry)
    source.check_now()
    good = source.current()
    mounts[0].publish({**templates("v2"), "a.yaml": BROKEN})
    with caplog.at_level(logging.ERROR, logger="webhook.catalog.reload"):
        assert source.check_now() is False
    assert source.current() is good and source.ready()
    error = source.status()["lastError"]
    assert error is not None and source.status()["servingLastGood"] is True
    assert any(
        p["path"] == "spec" and p["source"].endswith("a.yaml") and p["line"] for p in error["problems"]
    )
    assert sample(registry, "gpu_webhook_catalog_reloads_total", result="failure") == 1
    assert sample(registry, "gpu_webhook_catalog_last_reload_success") == 0
    (record,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert record.getMessage() == "catalog_reload_failed" and record.fields["problems"]

    assert source.check_now() is False  # the same broken files are not counted twice
    assert sample(registry, "gpu_webhook_catalog_reloads_total", result="failure") == 1

    mounts[0].publish(templates("v3"))
    assert source.check_now() is True
    assert version(source.current()) == "v3"
    assert source.status()["lastError"] is None
    assert sample(registry, "gpu_webhook_catalog_last_reload_success") == 1
    assert sample(registry, "gpu_webhook_catalog_reloads_total", result="success") == 2


def test_a_reload_failing_in_every_template_logs_one_line_a_runtime_keeps_whole(
    mounts: tuple[ConfigMapMount, ConfigMapMount], caplog: pytest.LogCaptureFixture
) -> None:
    """200 templates each refused (a renamed field, a misspelt kind) made a 40 KB line, which
    container runtimes split at 16 KiB into pieces that are no JSON; /readyz keeps every problem."""
    source = source_for(mounts, CollectorRegistry())
    source.check_now()
    long_key = "x" * 1000  # as long as a YAML key may be without "? "
    broken = {
        f"t{n:03d}.yaml": TEMPLATE.format(name=f"t{n:03d}", version="v2").replace("inference", "servng")
        for n in range(200)
    }
    broken["a-long-key.yaml"] = BROKEN.replace("{colour: red}", f"\n  {long_key}: red")
    mounts[0].publish(broken)
    with caplog.at_level(logging.ERROR, logger="webhook.catalog.reload"):
        assert source.check_now() is False
    (record,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    line = JsonLineFormatter().format(record)
    assert len(line.encode()) < 16 * 1024
    logged = json.loads(line)
    problems = source.status()["lastError"]["problems"]
    assert len(problems) > 200
    assert len(logged["problems"]) + logged["problemsNotListed"] == len(problems)
    assert [p["source"] for p in logged["problems"]] == [
        p["source"] for p in problems[: len(logged["problems"])]
    ]
    assert any(long_key in p["path"] for p in problems)
    assert logged["problems"][0]["source"].endswith("a-long-key.yaml")
    assert max(len(text) for p in logged["problems"] for text in (p["path"], p["message"])) < 400


def test_a_broken_first_load_is_not_ready_until_fixed(tmp_path: Path) -> None:
    mount, policies = ConfigMapMount(tmp_path / "templates"), ConfigMapMount(tmp_path / "policies")
    mount.publish({"a.yaml": BROKEN})
    policies.publish({"default.yaml": POLICY})
    source = ReloadingCatalogSource([mount.root, policies.root], interval=3600, registry=CollectorRegistry())
    source.check_now()
    assert not source.ready()
    with pytest.raises(RuntimeError, match="a.yaml"):
        source.current()
    mount.publish(templates("v1"))
    assert source.check_now() is True and source.ready()


def test_a_missing_folder_is_a_failure_not_a_crash(tmp_path: Path) -> None:
    source = ReloadingCatalogSource([tmp_path / "nowhere"], interval=3600, registry=CollectorRegistry())
    assert source.check_now() is False
    assert source.status()["lastError"]["problems"][0]["message"] == "no such file or directory"


def wait_for(source: ReloadingCatalogSource, wanted: str) -> None:
    deadline = time.monotonic() + 30
    while version(source.current()) != wanted and time.monotonic() < deadline:
        time.sleep(0.005)


def test_the_poll_thread_picks_up_a_swap(mounts: tuple[ConfigMapMount, ConfigMapMount]) -> None:
    source = ReloadingCatalogSource([m.root for m in mounts], interval=0.02, registry=CollectorRegistry())
    source.start()
    try:
        mounts[0].publish(templates("v2"))
        wait_for(source, "v2")
        assert version(source.current()) == "v2"
    finally:
        source.stop()
    assert source._thread is not None and not source._thread.is_alive()


def test_start_again_after_a_fork_like_reset_starts_a_new_thread(
    mounts: tuple[ConfigMapMount, ConfigMapMount],
) -> None:
    source = source_for(mounts, CollectorRegistry())
    source.start()
    first = source._thread
    source.start()  # still running: nothing new
    assert source._thread is first
    source.stop()
    source.start()  # as in a forked worker, where the parent's thread is gone
    try:
        assert source._thread is not first and source._thread is not None and source._thread.is_alive()
    finally:
        source.stop()


def test_readers_always_see_one_whole_catalog_during_swaps(tmp_path: Path) -> None:
    """Swaps land while the poll thread is reading the files: a load that straddles one must be
    thrown away, never served half old, half new."""
    names = [f"t{i:02}" for i in range(12)]
    mount, policies = ConfigMapMount(tmp_path / "templates"), ConfigMapMount(tmp_path / "policies")
    policies.publish({"default.yaml": POLICY})

    def publish(generation: int) -> None:
        mount.publish({f"{n}.yaml": TEMPLATE.format(name=n, version=f"v{generation}") for n in names})

    publish(1)
    source = ReloadingCatalogSource([mount.root, policies.root], interval=0.001, registry=CollectorRegistry())
    source.start()
    torn: list[set[str]] = []
    seen: set[str] = set()
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            catalog = source.current()
            versions = {t.description for t in catalog.templates.values()}
            seen.update(versions)
            if len(versions) != 1:
                torn.append(versions)
            time.sleep(0)  # let the writer and the poll thread run between reads

    readers = [threading.Thread(target=read) for _ in range(2)]
    for reader in readers:
        reader.start()
    try:
        for generation in range(2, 60):
            publish(generation)
            if generation % 10 == 0:  # now and then let a load settle, so readers see it change
                wait_for(source, f"v{generation}")
    finally:
        stop.set()
        for reader in readers:
            reader.join()
        source.stop()
    source.check_now()
    assert torn == []
    assert len(seen) > 2
    assert {t.description for t in source.current().templates.values()} == {"v59"}


def test_the_shipped_catalog_loads_through_the_source() -> None:
    source = ReloadingCatalogSource([ROOT / "templates", ROOT / "policies"], registry=CollectorRegistry())
    source.check_now()
    assert "llm-serving" in source.current().templates


def test_lint_and_the_static_loader_read_a_configmap_mount_once(
    mounts: tuple[ConfigMapMount, ConfigMapMount],
) -> None:
    """The `..<n>/` copy behind `..data` is not a second set of templates (no duplicate names)."""
    assert lint_paths([m.root for m in mounts]) == []
    assert set(load_catalog([m.root for m in mounts]).templates) == {"a", "b"}


def test_a_template_whose_aliases_explode_is_a_load_failure_with_a_short_message(
    mounts: tuple[ConfigMapMount, ConfigMapMount], caplog: pytest.LogCaptureFixture
) -> None:
    """Seven levels of nine aliases made /readyz answer 25 MB and log a 25 MB line."""
    registry = CollectorRegistry()
    source = source_for(mounts, registry)
    source.check_now()
    bomb = (
        "apiVersion: gpu.aethervirt.io/v1\nkind: WorkloadTemplate\n"
        "x0: &l0 [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n"
    )
    for level in range(1, 7):
        bomb += f"x{level}: &l{level} [" + ",".join([f"*l{level - 1}"] * 9) + "]\n"
    mounts[0].publish({**templates("v2"), "bomb.yaml": bomb + "metadata: {name: *l6}\nspec: {kind: batch}\n"})
    with caplog.at_level(logging.ERROR, logger="webhook.catalog.reload"):
        assert source.check_now() is False
    error = source.status()["lastError"]
    assert len(json.dumps(error)) < 1000
    (problem,) = error["problems"]
    assert problem["source"].endswith("bomb.yaml") and "aliases expand" in problem["message"]
    assert all(len(r.getMessage() + json.dumps(getattr(r, "fields", {}))) < 1000 for r in caplog.records)


def unlistable(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """`folder` cannot be listed, as a chmod 000 folder for a non-root server (root reads it)."""
    real = os.scandir

    def scandir(path: Any = ".") -> Any:
        if Path(path) == folder:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)


def test_an_unreadable_templates_folder_is_a_problem_for_lint_and_a_failure_for_the_server(
    mounts: tuple[ConfigMapMount, ConfigMapMount], monkeypatch: pytest.MonkeyPatch
) -> None:
    """It linted ok and emptied the catalog: every pod then matched no template."""
    source = source_for(mounts, CollectorRegistry())
    assert source.check_now() is True
    unlistable(monkeypatch, mounts[0].root)
    (problem,) = lint_paths([mounts[0].root, mounts[1].root])
    assert (problem.source, problem.message) == (str(mounts[0].root), "cannot read: Permission denied")
    assert source.check_now() is False and len(source.current().templates) == 2
    assert source.status()["lastError"]["problems"][0]["message"] == "cannot read: Permission denied"


def test_a_dangling_symlink_is_a_problem_for_lint_as_for_the_server(
    mounts: tuple[ConfigMapMount, ConfigMapMount],
) -> None:
    source = source_for(mounts, CollectorRegistry())
    assert source.check_now() is True
    (mounts[0].root / "zz.yaml").symlink_to(mounts[0].root / "missing" / "zz.yaml")  # nothing there, surely
    (problem,) = lint_paths([mounts[0].root, mounts[1].root])
    assert problem.source.endswith("zz.yaml") and "no such file or directory" in problem.message
    assert source.check_now() is False
    (served,) = source.status()["lastError"]["problems"]
    assert (served["source"], served["message"]) == (problem.source, problem.message)


def test_an_emptied_policies_folder_is_a_failure_that_keeps_the_last_good_catalog(
    mounts: tuple[ConfigMapMount, ConfigMapMount],
) -> None:
    """It loaded 0 policies as a success: every namespace silently got the built-in default."""
    source = source_for(mounts, CollectorRegistry())
    assert source.check_now() is True
    good = source.current()
    mounts[1].publish({})  # the ConfigMap emptied
    assert source.check_now() is False and source.current() is good
    (problem,) = source.status()["lastError"]["problems"]
    assert (problem["source"], problem["line"]) == (str(mounts[1].root), None)
    mounts[1].publish({"default.yaml": POLICY})
    assert source.check_now() is True
    shutil.rmtree(mounts[1].root)  # `mv policies policies.old; mkdir policies`
    mounts[1].root.mkdir()
    assert source.check_now() is False and source.current().policies == good.policies
    (problem,) = source.status()["lastError"]["problems"]
    assert problem["source"] == str(mounts[1].root)


def test_an_emptied_template_file_is_a_failure_that_keeps_the_last_good_catalog(
    mounts: tuple[ConfigMapMount, ConfigMapMount],
) -> None:
    """It was skipped: the template vanished from serving with a `catalog_loaded` success."""
    source = source_for(mounts, CollectorRegistry())
    assert source.check_now() is True
    mounts[0].publish({**templates("v2"), "b.yaml": "# b is being rewritten\n"})
    assert source.check_now() is False and set(source.current().templates) == {"a", "b"}
    (problem,) = source.status()["lastError"]["problems"]
    assert (problem["source"], problem["line"]) == (str(mounts[0].root / "b.yaml"), 1)


def test_a_worker_started_while_the_files_are_broken_serves_the_last_good_catalog(
    mounts: tuple[ConfigMapMount, ConfigMapMount], tmp_path: Path
) -> None:
    """gunicorn starts a worker again after a crash (all of them on SIGHUP): that worker's first
    load fails on the broken files, and it serves what the running ones serve, not nothing."""
    shared = tmp_path / "shared"
    shared.mkdir()
    running = ReloadingCatalogSource([m.root for m in mounts], interval=3600, last_good=shared)
    running.check_now()
    mounts[0].publish({**templates("v1"), "a.yaml": BROKEN})
    assert running.check_now() is False and version(running.current()) == "v1"

    started = ReloadingCatalogSource([m.root for m in mounts], interval=3600, last_good=shared)
    assert started.check_now() is False
    assert started.ready() and version(started.current()) == "v1"
    status = started.status()
    assert status["servingLastGood"] and status["lastError"]["problems"]
    assert status["digest"] == running.status()["digest"]

    alone = ReloadingCatalogSource([m.root for m in mounts], interval=3600)  # no shared folder
    alone.check_now()
    assert not alone.ready()


def test_a_worker_serving_the_last_good_catalog_says_when_it_was_loaded(
    mounts: tuple[ConfigMapMount, ConfigMapMount], tmp_path: Path
) -> None:
    """A worker started on files broken for days: /readyz loadedAt said it had just loaded its
    catalog, and its last success time stayed 0, so a stale-catalog alert on the gauge fired for
    a worker serving a copy loaded a minute ago, or said nothing of one loaded days ago."""
    shared = tmp_path / "shared"
    shared.mkdir()
    running = ReloadingCatalogSource([m.root for m in mounts], interval=3600, last_good=shared)
    running.check_now()
    days_ago = time.time() - 3 * 86400
    os.utime((shared / "catalog-current").resolve(), (days_ago, days_ago))  # loaded 3 days ago
    mounts[0].publish({**templates("v1"), "a.yaml": BROKEN})

    registry = CollectorRegistry()
    started = ReloadingCatalogSource(
        [m.root for m in mounts], interval=3600, registry=registry, last_good=shared
    )
    started.check_now()
    assert started.status()["servingLastGood"]
    assert started.status()["loadedAt"] == time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(days_ago))
    assert sample(registry, "gpu_webhook_catalog_last_reload_success_timestamp_seconds") == pytest.approx(
        days_ago
    )
    assert sample(registry, "gpu_webhook_catalog_last_reload_success") == 0


def test_the_last_good_catalog_follows_each_good_load(
    mounts: tuple[ConfigMapMount, ConfigMapMount], tmp_path: Path
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    running = ReloadingCatalogSource([m.root for m in mounts], interval=3600, last_good=shared)
    running.check_now()
    mounts[0].publish(templates("v2"))
    assert running.check_now() is True
    mounts[0].publish({"a.yaml": BROKEN})
    started = ReloadingCatalogSource([m.root for m in mounts], interval=3600, last_good=shared)
    started.check_now()
    assert version(started.current()) == "v2"
    mounts[0].publish(templates("v3"))  # fixed: the started worker loads the files again
    assert started.check_now() is True and version(started.current()) == "v3"
    assert not started.status()["servingLastGood"]


def test_a_shared_folder_that_cannot_be_written_leaves_the_catalog_served(
    mounts: tuple[ConfigMapMount, ConfigMapMount], tmp_path: Path
) -> None:
    running = ReloadingCatalogSource([m.root for m in mounts], interval=3600, last_good=tmp_path / "gone")
    assert running.check_now() is True and version(running.current()) == "v1"


def test_a_file_name_that_is_not_utf8_loads_and_is_kept_as_the_last_good(
    mounts: tuple[ConfigMapMount, ConfigMapMount], tmp_path: Path
) -> None:
    """A name of Latin-1 bytes (a folder synced from an old repository) is read as the loader and
    lint read it: the digest of the files raised UnicodeEncodeError on it, so the worker's first
    load failed for good (never ready, every review refused) and later polls logged tracebacks."""
    latin1 = os.fsdecode(b"caf\xe9.yaml")
    mounts[0].publish({**templates("v1"), latin1: TEMPLATE.format(name="c", version="v1")})
    shared = tmp_path / "shared"
    shared.mkdir()
    running = ReloadingCatalogSource([m.root for m in mounts], interval=3600, last_good=shared)
    assert running.check_now() is True
    assert set(running.current().templates) == {"a", "b", "c"}

    mounts[0].publish({**templates("v2"), latin1: BROKEN})
    assert running.check_now() is False and version(running.current()) == "v1"
    problems = running.status()["lastError"]["problems"]
    assert any(p["source"].endswith(latin1) and p["path"] == "spec" for p in problems)

    started = ReloadingCatalogSource([m.root for m in mounts], interval=3600, last_good=shared)
    assert started.check_now() is False
    assert set(started.current().templates) == {"a", "b", "c"}


def test_a_poll_that_raises_is_a_failed_reload_and_polling_goes_on(
    mounts: tuple[ConfigMapMount, ConfigMapMount], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A poll that raised (as one did for a folder its files could not be looked at in, mode r--,
    before the listing named such a file) was only logged, while /readyz said the catalog was
    current with no error and edits were never loaded (found by review)."""
    registry = CollectorRegistry()
    source = ReloadingCatalogSource([m.root for m in mounts], interval=0.02, registry=registry)
    source.start()
    real = reload_module.files_digest

    def refused(paths: Any) -> str:
        raise PermissionError(13, "Permission denied", str(paths[0]))

    try:
        monkeypatch.setattr(reload_module, "files_digest", refused)
        deadline = time.monotonic() + 10
        while source.status()["lastError"] is None and time.monotonic() < deadline:
            time.sleep(0.02)
        status = source.status()
        assert status["servingLastGood"] is True and status["lastError"]["problems"][0]["source"] == "<poll>"
        assert sample(registry, "gpu_webhook_catalog_last_reload_success") == 0
        monkeypatch.setattr(reload_module, "files_digest", real)
        mounts[0].publish(templates("v2"))
        wait_for(source, "v2")
        assert version(source.current()) == "v2" and source.status()["lastError"] is None
        assert source._thread is not None and source._thread.is_alive()
    finally:
        source.stop()
