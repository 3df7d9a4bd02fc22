"""Devices DRA hands out are in ResourceSlices, which the report does not read: it says so, in
every output, instead of showing a DRA cluster as one without GPUs and nothing more."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT
from tests.report.dashboard_support import dashboard_page
from webhook.cli import main

DRA_INVENTORY = ROOT / "tests" / "inventories" / "dra-extended-resources.yaml"
GPU_CLASS = "deviceclass.resource.kubernetes.io/gpu.nvidia.com"


def test_the_json_report_lists_what_dra_serves(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--inventory", str(DRA_INVENTORY), "-o", "json"]) == 0
    assert GPU_CLASS in json.loads(capsys.readouterr().out)["draServed"]


def test_the_text_report_says_it_does_not_count_them(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--inventory", str(DRA_INVENTORY)]) == 0
    notes = [line for line in capsys.readouterr().out.splitlines() if line.startswith("note: DRA")]
    assert len(notes) == 1 and GPU_CLASS in notes[0] and "ResourceSlices" in notes[0]


def test_a_cluster_without_device_classes_has_no_such_note(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "report",
                "--inventory",
                str(ROOT / "examples" / "inventories" / "mixed-cluster.yaml"),
                "-o",
                "json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["draServed"] == []


def test_the_dashboard_says_it_too(tmp_path: Path) -> None:
    items = yaml.safe_load(DRA_INVENTORY.read_text())["items"]
    page = dashboard_page(tmp_path, items, None)
    assert 'id="dra-served"' in page and GPU_CLASS in page
