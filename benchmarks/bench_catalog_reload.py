"""What live reload costs: one poll of an unchanged catalog against a full load, measured in one run.

The reloading source polls every N seconds in each gunicorn worker. A poll reads and hashes the
files; only a changed digest pays for a load. Figures for the shipped catalog and a synthetic one
of --templates templates laid out as a mounted ConfigMap (`..data` symlink): each with its own
priority, and all at one priority kept apart by their own namespaces (one team's each), which the
load's tie check compared pair by pair before its index (webhook/catalog/tie_index.py) named the
pairs that could tie. Also the cost of `current()` on the request path,
against a plain attribute read.

    python benchmarks/bench_catalog_reload.py [--templates 200] [--rounds 50]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from prometheus_client import CollectorRegistry

from webhook.catalog import load_catalog
from webhook.catalog.reload import ReloadingCatalogSource, catalog_files, files_digest

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = """\
apiVersion: gpu.aethervirt.io/v1
kind: WorkloadTemplate
metadata:
  name: t{index:04}
  description: synthetic template {index}
spec:
  kind: inference
  priority: {priority}
  match:
    images: ["registry.example.com/team-{index}/*"]{namespaces}
  accelerator:
    gpu: required
    gpuMemory: 18Gi
    devices: {{min: 1, max: 1}}
    mig: preferred
  inject:
    resources:
      perGpu:
        requests: {{cpu: "4", memory: 16Gi}}
"""


def per_call(function: Callable[[], object], rounds: int) -> float:
    started = time.perf_counter()
    for _ in range(rounds):
        function()
    return (time.perf_counter() - started) / rounds


def configmap_catalog(root: Path, count: int, same_priority: bool = False) -> list[Path]:
    templates, policies = root / "templates", root / "policies"
    for folder in (templates, policies):
        (folder / "..2026_01_01").mkdir(parents=True)
        (folder / "..data").symlink_to("..2026_01_01")
    for index in range(count):
        name = f"t{index:04}.yaml"
        priority = 100 if same_priority else index
        namespaces = f'\n    namespaces: ["team-{index}", "team-{index}-*"]' if same_priority else ""
        text = TEMPLATE.format(index=index, priority=priority, namespaces=namespaces)
        (templates / "..data" / name).write_text(text)
        (templates / name).symlink_to(f"..data/{name}")
    policy = (ROOT / "policies" / "default.yaml").read_text()
    (policies / "..data" / "default.yaml").write_text(policy)
    (policies / "default.yaml").symlink_to("..data/default.yaml")
    return [templates, policies]


def report(label: str, paths: list[Path], rounds: int) -> None:
    poll = per_call(lambda: files_digest(paths), rounds)
    load = per_call(lambda: load_catalog(catalog_files(paths)), max(3, rounds // 10))
    files = len(catalog_files(paths))
    print(f"{label}: {files} files")
    print(f"  poll, unchanged (read + sha256):  {poll * 1e3:8.2f} ms")
    print(f"  full load (parse, validate, build): {load * 1e3:8.2f} ms")
    print(f"  poll / load:                      {poll / load:8.3f}")


def request_path(paths: list[Path], rounds: int) -> None:
    source = ReloadingCatalogSource(paths, registry=CollectorRegistry())
    source.check_now()
    catalog = source.current()

    class Holder:
        value = catalog

    holder = Holder()
    reads = rounds * 20_000
    current = per_call(source.current, reads)
    plain = per_call(lambda: holder.value, reads)
    print(f"  current() per request:         {current * 1e9:8.0f} ns")
    print(f"  attribute read through a lambda: {plain * 1e9:6.0f} ns")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--templates", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()
    shipped = [ROOT / "templates", ROOT / "policies"]
    report("shipped catalog", shipped, args.rounds)
    request_path(shipped, args.rounds)
    with tempfile.TemporaryDirectory() as tmp:
        paths = configmap_catalog(Path(tmp), args.templates)
        report(f"synthetic ConfigMap mount ({args.templates} templates)", paths, args.rounds)
    with tempfile.TemporaryDirectory() as tmp:
        paths = configmap_catalog(Path(tmp), args.templates, same_priority=True)
        label = f"the same, one priority, kept apart by namespace ({args.templates} templates)"
        report(label, paths, args.rounds)
    print(f"(pid {os.getpid()}; polls run every interval in each worker, default 10 s)")


if __name__ == "__main__":
    main()
