"""Render deploy/ and its overlay with the real `kubectl kustomize` once per session."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT

DEPLOY = ROOT / "deploy"
TARGETS = {"default": DEPLOY, "cert-manager": DEPLOY / "overlays" / "cert-manager"}

Objects = list[dict[str, Any]]


def render(target: str) -> Objects:
    return render_path(TARGETS[target])


def render_path(directory: Path) -> Objects:
    """`kubectl kustomize DIRECTORY`, parsed."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed (scripts/setup-system.sh installs it); cannot render deploy/")
    result = subprocess.run(
        [kubectl, "kustomize", str(directory)], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, f"kubectl kustomize {directory} failed:\n{result.stderr}"
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


@pytest.fixture(scope="session")
def rendered() -> Iterator[Callable[[str], Objects]]:
    cache: dict[str, Objects] = {}

    def get(target: str) -> Objects:
        if target not in cache:
            cache[target] = render(target)
        return cache[target]

    yield get


@pytest.fixture(scope="session", params=sorted(TARGETS))
def objects(request: pytest.FixtureRequest, rendered: Callable[[str], Objects]) -> Objects:
    return rendered(str(request.param))


def one(objects: Objects, kind: str, name: str | None = None) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def all_of(objects: Objects, kind: str) -> Objects:
    return [o for o in objects if o["kind"] == kind]
