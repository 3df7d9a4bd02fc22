"""What `pip install gpu-webhook` takes from pyproject.toml: dependency versions that run the code."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest
from gunicorn.workers.gthread import TConn, ThreadWorker
from packaging.version import Version

import webhook
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


SDIST_SOURCES = ("pyproject.toml", "setup.py", "README.md", "MANIFEST.in")


def test_the_sdist_ships_the_package_and_not_a_few_of_the_tests(tmp_path: Path) -> None:
    """setuptools adds the top-level tests/test*.py to every sdist: 13 files of the suite, without
    the conftest and examples they import, so none of them ran from it."""
    setuptools = pytest.importorskip("setuptools")
    if Version(setuptools.__version__) < Version("77"):
        pytest.skip("building needs setuptools 77 or later (pyproject.toml's license expression)")
    source = tmp_path / "source"
    shutil.copytree(
        ROOT / "webhook", source / "webhook", ignore=shutil.ignore_patterns("__pycache__", "*.so")
    )
    (source / "tests").mkdir()
    for path in [*(ROOT / name for name in SDIST_SOURCES), *(ROOT / "tests").glob("test_*.py")]:
        if path.is_file():
            shutil.copy(path, source / path.relative_to(ROOT))
    build = "from setuptools import build_meta; print(build_meta.build_sdist('dist'))"
    result = subprocess.run(
        [sys.executable, "-c", build], cwd=source, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    with tarfile.open(source / "dist" / result.stdout.split()[-1]) as sdist:
        shipped = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    assert not {name for name in shipped if name.startswith("tests")}
    package_data = {
        str(p.relative_to(ROOT)) for p in (ROOT / "webhook").rglob("*") if p.suffix in {".json", ".html"}
    }
    assert package_data <= shipped


def test_the_version_is_the_same_wherever_it_is_written() -> None:
    """A release bumps pyproject.toml; the package, the image tag kustomize deploys and the
    Dockerfile's build line must say the same, or `kubectl apply -k deploy/` runs another image."""
    version = PYPROJECT["project"]["version"]
    image = (ROOT / "deploy/components/image/kustomization.yaml").read_text(encoding="utf-8")
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert webhook.__version__ == version
    assert re.findall(r'newTag:\s*"?([^"\s]+)"?', image) == [version]
    assert re.findall(r"gpu-webhook:(\S+)", dockerfile) == [version]
