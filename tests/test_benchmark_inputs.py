"""The benchmarks that read ../shared say in one line that it is missing, and where they looked,
instead of ending in a traceback (ZeroDivisionError, FileNotFoundError) on a fresh checkout."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from benchmarks import bench_decide, simulate_packing
from tests.builders import make_pod

CPU_POD = make_pod("cpu").container("c").build()
GPU_POD = make_pod("gpu").container("c", gpu=1, image="nvidia/cuda:12.4.1-base-ubuntu22.04").build()


def _simulate(monkeypatch: pytest.MonkeyPatch, corpus: Path) -> None:
    monkeypatch.setattr("sys.argv", ["simulate_packing.py", "--corpus", str(corpus)])
    simulate_packing.main()


def _exit_message(excinfo: pytest.ExceptionInfo[SystemExit]) -> str:
    message = excinfo.value.code
    assert isinstance(message, str) and "\n" not in message  # sys.exit(str): exit status 1
    return message


def _write(folder: Path, name: str, text: str) -> None:
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")


def test_simulate_packing_without_the_corpus_names_where_it_looked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with pytest.raises(SystemExit) as excinfo:
        _simulate(monkeypatch, tmp_path / "shared" / "corpus" / "manifests")
    assert f"no corpus at {tmp_path / 'shared' / 'corpus' / 'manifests'}" in _exit_message(excinfo)


def test_simulate_packing_of_an_empty_folder_is_an_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with pytest.raises(SystemExit) as excinfo:
        _simulate(monkeypatch, tmp_path)
    assert f"no corpus at {tmp_path}" in _exit_message(excinfo)


def test_simulate_packing_without_a_gpu_pod_has_nothing_to_place(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _write(tmp_path, "cpu.yaml", yaml.safe_dump(CPU_POD))
    with pytest.raises(SystemExit) as excinfo:
        _simulate(monkeypatch, tmp_path)
    assert str(tmp_path) in _exit_message(excinfo)


def test_simulate_packing_names_the_files_it_leaves_out(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(tmp_path, "gpu.yaml", yaml.safe_dump(GPU_POD))
    _write(tmp_path, "broken.yaml", "kind: Pod\nspec: {containers: [\n")
    _simulate(monkeypatch, tmp_path)
    out, err = capsys.readouterr()
    assert "pods with a GPU or MIG request: 1 " in out
    (left_out,) = err.splitlines()
    assert str(tmp_path / "broken.yaml") in left_out


def test_bench_decide_without_the_reference_request_names_where_it_looked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    missing = tmp_path / "shared" / "reference" / "admission" / "create-pod-gpu.json"
    monkeypatch.setattr(bench_decide, "REVIEW", missing)
    monkeypatch.setattr("sys.argv", ["bench_decide.py"])
    with pytest.raises(SystemExit) as excinfo:
        bench_decide.main()
    assert str(missing) in _exit_message(excinfo)
