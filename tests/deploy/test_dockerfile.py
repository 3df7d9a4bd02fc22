"""The Dockerfile agrees with deploy/: same user, same serve command, and it copies what exists.

Docker cannot build here; these checks keep the file and the manifests from drifting apart.
"""

from __future__ import annotations

import fnmatch
import json
import re
from typing import Any

from tests.conftest import ROOT
from tests.deploy.conftest import Objects, one
from tests.deploy.test_workloads import SERVE_ARGS

DOCKERFILE = (ROOT / "Dockerfile").read_text(encoding="utf-8")


def _instructions(name: str) -> list[str]:
    joined = re.sub(r"\\\n\s*", " ", DOCKERFILE)
    return [line.split(None, 1)[1] for line in joined.splitlines() if line.split(None, 1)[:1] == [name]]


def test_base_is_slim_python_311() -> None:
    (argument,) = [a for a in _instructions("ARG") if a.startswith("PYTHON_IMAGE=")]
    assert re.fullmatch(r"PYTHON_IMAGE=python:3\.11(\.\d+)?-slim(-\w+)?", argument)


def test_runs_as_the_numeric_user_the_manifests_require(objects: Objects) -> None:
    (user,) = _instructions("USER")
    uid = user.split(":")[0]
    assert uid.isdigit() and int(uid) > 0
    pod: dict[str, Any] = one(objects, "Deployment", "gpu-webhook")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsUser"] == int(uid)


def test_entrypoint_and_default_command_serve_like_the_deployment() -> None:
    (entrypoint,) = _instructions("ENTRYPOINT")
    (command,) = _instructions("CMD")
    assert json.loads(entrypoint) == ["gpu-webhook"]
    assert json.loads(command) == SERVE_ARGS


def test_the_image_ships_the_compiled_core() -> None:
    """The package wheel is built with the mypyc switch (setup.py), in the stage that has gcc."""
    builds = [run for run in _instructions("RUN") if "pip wheel" in run]
    assert len(builds) == 1 and "GPU_WEBHOOK_MYPYC=1 python -m pip wheel" in builds[0]
    assert any("gcc" in run for run in _instructions("RUN"))


def test_copied_sources_exist_and_are_not_docker_ignored() -> None:
    ignore = [line for line in (ROOT / ".dockerignore").read_text().splitlines() if line and line[0] != "#"]
    for copy in _instructions("COPY"):
        if copy.startswith("--from"):
            continue
        for source in copy.split()[:-1]:
            assert (ROOT / source).exists(), source
            assert _included(source, ignore), f"{source} is excluded by .dockerignore"
    assert not _included(".venv", ignore) and not _included(".git", ignore)


def _included(path: str, patterns: list[str]) -> bool:
    """Docker's rule: the last matching pattern wins; `!` re-includes."""
    included = True
    for pattern in patterns:
        negated = pattern.startswith("!")
        if fnmatch.fnmatch(path, pattern.lstrip("!").rstrip("/")):
            included = negated
    return included


def _options(arguments: list[str]) -> dict[str, str]:
    return dict(a.split("=", 1) for a in arguments if a.startswith("--") and "=" in a)


def test_the_folder_left_writable_is_the_default_cert_dir_of_the_image_user() -> None:
    """The comment's claim: `serve` can self-sign into the default --cert-dir as USER."""
    (user,) = _instructions("USER")
    made = [run.split() for run in _instructions("RUN") if run.startswith("install -d")]
    assert len(made) == 1
    words = made[0]
    owner, group = words[words.index("-o") + 1], words[words.index("-g") + 1]
    assert f"{owner}:{group}" == user
    assert words[-1] == _options(json.loads(_instructions("CMD")[0]))["--cert-dir"]


def test_the_baked_in_catalog_is_where_the_deployment_mounts_its_config_maps(objects: Objects) -> None:
    """The comment's claim: deploy/ mounts the ConfigMaps over the defaults the image carries."""
    options = _options(json.loads(_instructions("CMD")[0]))
    copied = {copy.split()[-1] for copy in _instructions("COPY") if not copy.startswith("--from")}
    pod: dict[str, Any] = one(objects, "Deployment", "gpu-webhook")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounted = {m["mountPath"] for m in container["volumeMounts"] if "configMap" in volumes[m["name"]]}
    assert {options["--templates"], options["--policies"]} <= copied
    assert mounted == {options["--templates"], options["--policies"]}


def test_the_stated_speed_of_the_compiled_core_agrees_with_the_readme() -> None:
    """The build stage's comment gives the compiled core's speed-up; README measures it."""
    (stated,) = re.findall(r"about (\d+(?:\.\d+)?)x as fast", DOCKERFILE)
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert f"about {stated}x faster" in readme, (
        "the Dockerfile and README disagree on the compiled core's speed"
    )
