"""The ConfigMaps carry exactly the repository's templates and policies, and they load."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT
from tests.deploy.conftest import Objects, all_of
from webhook.catalog import load_catalog

SYNC = ROOT / "tools" / "sync_deploy_configmaps.py"
MAX_CONFIGMAP_BYTES = 1024 * 1024


def test_deploy_copy_has_not_drifted_from_templates_and_policies() -> None:
    result = subprocess.run(
        [sys.executable, str(SYNC), "--check"], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _config_maps(objects: Objects) -> dict[str, dict[str, str]]:
    found = {}
    for config_map in all_of(objects, "ConfigMap"):
        base = config_map["metadata"]["name"].rsplit("-", 1)[0]
        found[base] = config_map["data"]
    return found


def test_rendered_config_maps_equal_the_source_folders(objects: Objects) -> None:
    maps = _config_maps(objects)
    for folder in ("templates", "policies"):
        data = maps[f"gpu-webhook-{folder}"]
        sources = {p.name: p.read_text(encoding="utf-8") for p in (ROOT / folder).glob("*.yaml")}
        assert data == sources
        assert sum(len(v.encode()) for v in data.values()) < MAX_CONFIGMAP_BYTES


def test_rendered_config_maps_load_as_a_catalog(objects: Objects, tmp_path: Path) -> None:
    maps = _config_maps(objects)
    for folder in ("templates", "policies"):
        (tmp_path / folder).mkdir()
        for name, text in maps[f"gpu-webhook-{folder}"].items():
            (tmp_path / folder / name).write_text(text, encoding="utf-8")
    catalog = load_catalog([tmp_path / "templates", tmp_path / "policies"])
    shipped = load_catalog([ROOT / "templates", ROOT / "policies"])
    assert set(catalog.templates) == set(shipped.templates)
    assert [p.name for p in catalog.policies] == [p.name for p in shipped.policies]
    assert [t.name for t in catalog.ranked] == [t.name for t in shipped.ranked]
