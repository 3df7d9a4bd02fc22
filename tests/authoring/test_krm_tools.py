"""`gpu-webhook krm` under the real tools: kpt fn eval --exec, and kubectl kustomize.

kubectl's built-in kustomize has no --enable-exec, so it cannot run exec KRM functions (it
skips them without a word); it does run exec plugins with --enable-alpha-plugins, which is how
it is tested here. The exec KRM function form (config.kubernetes.io/function) is tested with a
kustomize that has --enable-exec, when one is installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT

KPT = shutil.which("kpt")
KUBECTL = shutil.which("kubectl")
INVENTORY = ROOT / "examples" / "inventories" / "a100-mixed.yaml"
WRAPPER = f"""#!/bin/sh
cd {ROOT}
exec {sys.executable} -m webhook krm "$@"
"""
VLLM = """\
# the chat server
apiVersion: v1
kind: Pod
metadata:
  name: vllm  # keep this name
spec:
  containers:
    - name: vllm
      image: vllm/vllm-openai:v0.6.3
      resources:
        limits:
          nvidia.com/gpu: 1
"""
SERVICE = "apiVersion: v1\nkind: Service\nmetadata:\n  name: vllm\nspec:\n  ports:\n    - port: 8000\n"
BROKEN = VLLM.replace("name: vllm  # keep this name", "name: half").replace("gpu: 1", 'gpu: "0.5"')


def wrapper(folder: Path, name: str = "gpu-webhook-fn") -> Path:
    script = folder / name
    script.write_text(WRAPPER)
    script.chmod(0o755)
    return script


def package(folder: Path, *files: tuple[str, str]) -> Path:
    folder.mkdir()
    for name, text in files:
        (folder / name).write_text(text)
    return folder


def run(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


needs_kpt = pytest.mark.skipif(
    KPT is None, reason="kpt is not installed (it ships with the Google Cloud SDK)"
)


def kubectl_with_plugins() -> str:
    """kubectl whose built-in kustomize runs exec plugins (--enable-alpha-plugins), else skip."""
    if KUBECTL is None:
        pytest.skip("kubectl is not installed")
    helped = subprocess.run([KUBECTL, "kustomize", "--help"], capture_output=True, text=True, check=False)
    if "--enable-alpha-plugins" not in helped.stdout:
        pytest.skip("this kubectl's kustomize has no --enable-alpha-plugins (kubectl before 1.21)")
    return KUBECTL


@needs_kpt
def test_kpt_fn_eval_rewrites_pods_keeps_the_rest_and_reports(tmp_path: Path) -> None:
    pkg = package(tmp_path / "pkg", ("vllm.yaml", VLLM), ("service.yaml", SERVICE))
    fn, results = wrapper(tmp_path), tmp_path / "results"
    args = [f"inventory={INVENTORY}"]
    done = run(
        [KPT or "kpt", "fn", "eval", str(pkg), "--exec", str(fn), "--results-dir", str(results), "--", *args],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    text = (pkg / "vllm.yaml").read_text()
    assert "# the chat server" in text and "# keep this name" in text  # kpt keeps the comments
    written = yaml.safe_load(text)
    assert written["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/mig-3g.40gb"] == 1
    assert yaml.safe_load((pkg / "service.yaml").read_text()) == yaml.safe_load(SERVICE)
    (entry,) = yaml.safe_load((results / "results.yaml").read_text())["items"]
    rewritten = [r for r in entry["results"] if r["tags"]["code"] == "RewrittenToMig"]
    assert rewritten[0]["file"]["path"] == "vllm.yaml"
    assert rewritten[0]["resourceRef"]["name"] == "vllm"
    assert rewritten[0]["field"]["path"] == 'spec.containers[name=vllm].resources.limits["nvidia.com/gpu"]'


@needs_kpt
def test_kpt_fails_on_a_denial_and_writes_nothing(tmp_path: Path) -> None:
    pkg = package(tmp_path / "pkg", ("vllm.yaml", VLLM), ("half.yaml", BROKEN))
    fn, results = wrapper(tmp_path), tmp_path / "results"
    done = run(
        [KPT or "kpt", "fn", "eval", str(pkg), "--exec", str(fn), "--results-dir", str(results)], tmp_path
    )
    assert done.returncode != 0
    assert (pkg / "vllm.yaml").read_text() == VLLM
    (entry,) = yaml.safe_load((results / "results.yaml").read_text())["items"]
    errors = [r for r in entry["results"] if r["severity"] == "error"]
    assert [(r["tags"]["code"], r["file"]["path"]) for r in errors] == [("FractionalGpu", "half.yaml")]


@needs_kpt
def test_kpt_with_mutation_off_only_validates(tmp_path: Path) -> None:
    pkg = package(tmp_path / "pkg", ("vllm.yaml", VLLM))
    fn = wrapper(tmp_path)
    done = run(
        [
            KPT or "kpt",
            "fn",
            "eval",
            str(pkg),
            "--exec",
            str(fn),
            "--",
            "mutate=false",
            f"inventory={INVENTORY}",
        ],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert yaml.safe_load((pkg / "vllm.yaml").read_text()) == yaml.safe_load(VLLM)


def exec_plugin_home(tmp_path: Path) -> Path:
    """KUSTOMIZE_PLUGIN_HOME with the function as the exec plugin for gpu.aethervirt.io/v1 GpuWebhook."""
    home = tmp_path / "plugins"
    folder = home / "gpu.aethervirt.io" / "v1" / "gpuwebhook"
    folder.mkdir(parents=True)
    wrapper(folder, "GpuWebhook")
    return home


def kustomization(folder: Path, section: str, spec: dict[str, str], *resources: tuple[str, str]) -> Path:
    package(folder, *resources)
    config = {
        "apiVersion": "gpu.aethervirt.io/v1",
        "kind": "GpuWebhook",
        "metadata": {"name": "gpu"},
        "spec": spec,
    }
    (folder / "gpu-webhook.yaml").write_text(yaml.safe_dump(config))
    listed = {"resources": [name for name, _ in resources], section: ["gpu-webhook.yaml"]}
    (folder / "kustomization.yaml").write_text(yaml.safe_dump(listed))
    return folder


def test_kubectl_kustomize_transformer_applies_the_mutation(tmp_path: Path) -> None:
    kubectl = kubectl_with_plugins()
    spec = {"inventory": str(INVENTORY)}
    folder = kustomization(
        tmp_path / "app", "transformers", spec, ("vllm.yaml", VLLM), ("service.yaml", SERVICE)
    )
    env = {"KUSTOMIZE_PLUGIN_HOME": str(exec_plugin_home(tmp_path))}
    done = run([kubectl, "kustomize", "--enable-alpha-plugins", str(folder)], tmp_path, env)
    assert done.returncode == 0, done.stderr
    items = {(i["kind"], i["metadata"]["name"]): i for i in yaml.safe_load_all(done.stdout)}
    pod = items[("Pod", "vllm")]
    assert pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/mig-3g.40gb"] == 1
    assert pod["metadata"]["annotations"]["gpu.aethervirt.io/mig-profile"] == "3g.40gb"
    assert items[("Service", "vllm")]["spec"] == {"ports": [{"port": 8000}]}


def test_kubectl_kustomize_validates_only_with_mutate_false(tmp_path: Path) -> None:
    """kustomize refuses a `validators:` exec plugin whose output differs from its input node for
    node (key order, quoting), so with kubectl the function validates as a transformer that
    changes nothing; a denial fails the build."""
    kubectl = kubectl_with_plugins()
    spec = {"mutate": "false"}
    env = {"KUSTOMIZE_PLUGIN_HOME": str(exec_plugin_home(tmp_path))}
    passing = kustomization(tmp_path / "ok", "transformers", spec, ("vllm.yaml", VLLM))
    ok = run([kubectl, "kustomize", "--enable-alpha-plugins", str(passing)], tmp_path, env)
    assert ok.returncode == 0, ok.stderr
    assert yaml.safe_load(ok.stdout) == yaml.safe_load(VLLM)
    failing = kustomization(
        tmp_path / "app", "transformers", spec, ("vllm.yaml", VLLM), ("half.yaml", BROKEN)
    )
    done = run([kubectl, "kustomize", "--enable-alpha-plugins", str(failing)], tmp_path, env)
    assert done.returncode != 0
    assert "error: Pod/half: FractionalGpu" in done.stderr


def test_relative_paths_are_read_from_the_folder_the_tools_start_the_function_in(tmp_path: Path) -> None:
    """README's script (`exec gpu-webhook krm "$@"`, no `cd`) reads the `./templates` and
    `./policies` defaults and a relative `inventory` from the kustomization's folder under
    kustomize, and from kpt's working directory under kpt; README did not say, and its
    GpuWebhook example, run from a kustomization without a catalog beside it, failed with `no
    such templates/policies folder` (found by QA)."""
    plain = f'#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m webhook krm "$@"\n'
    home = exec_plugin_home(tmp_path)
    (home / "gpu.aethervirt.io" / "v1" / "gpuwebhook" / "GpuWebhook").write_text(plain)
    app = kustomization(tmp_path / "app", "transformers", {"inventory": "nodes.yaml"}, ("vllm.yaml", VLLM))
    for folder in (app, tmp_path):
        (folder / "templates").symlink_to(ROOT / "templates")
        (folder / "policies").symlink_to(ROOT / "policies")
        shutil.copy(INVENTORY, folder / "nodes.yaml")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {"KUSTOMIZE_PLUGIN_HOME": str(home)}
    built = run([kubectl_with_plugins(), "kustomize", "--enable-alpha-plugins", str(app)], elsewhere, env)
    assert built.returncode == 0, built.stderr
    annotations = yaml.safe_load(built.stdout)["metadata"]["annotations"]
    assert annotations["gpu.aethervirt.io/mig-profile"] == "3g.40gb"
    if KPT is None:
        return
    fn = tmp_path / "fn.sh"
    fn.write_text(plain)
    fn.chmod(0o755)
    pkg = package(tmp_path / "pkg", ("vllm.yaml", VLLM))
    done = run([KPT, "fn", "eval", str(pkg), "--exec", str(fn), "--", "inventory=nodes.yaml"], tmp_path)
    assert done.returncode == 0, done.stderr
    pod = yaml.safe_load((pkg / "vllm.yaml").read_text())
    assert pod["metadata"]["annotations"]["gpu.aethervirt.io/mig-profile"] == "3g.40gb"


def kustomize_with_exec() -> list[str] | None:
    """A kustomize build command that can run exec KRM functions, if one is installed."""
    candidates = [[shutil.which("kustomize") or "", "build"], [KUBECTL or "", "kustomize"]]
    for command in candidates:
        if not command[0]:
            continue
        helped = subprocess.run([*command, "--help"], capture_output=True, text=True, check=False)
        if "--enable-exec" in helped.stdout:
            return [*command, "--enable-alpha-plugins", "--enable-exec"]
    return None


def test_kustomize_exec_krm_function(tmp_path: Path) -> None:
    command = kustomize_with_exec()
    if command is None:
        pytest.skip(
            "no kustomize with --enable-exec: kubectl's built-in kustomize cannot run exec KRM functions"
        )
    folder = package(tmp_path / "app", ("vllm.yaml", VLLM))
    wrapper(folder, "gpu-webhook-fn")
    annotation = {"config.kubernetes.io/function": "exec:\n  path: ./gpu-webhook-fn\n"}
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "gpu-webhook", "annotations": annotation},
        "data": {"inventory": str(INVENTORY)},
    }
    (folder / "gpu-webhook.yaml").write_text(yaml.safe_dump(config))
    (folder / "kustomization.yaml").write_text(
        yaml.safe_dump({"resources": ["vllm.yaml"], "transformers": ["gpu-webhook.yaml"]})
    )
    done = run([*command, str(folder)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert (
        yaml.safe_load(done.stdout)["metadata"]["annotations"]["gpu.aethervirt.io/mig-profile"] == "3g.40gb"
    )
