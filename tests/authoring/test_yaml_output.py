"""`gpu-webhook krm` and `check -o yaml` write text that kubectl and gpu-webhook read back as
text: label values, env values, args and a passed-through ConfigMap's data such as `y`, `1e3`,
`1234e56` (a git short SHA) or `0o17` came out bare, and go-yaml v2 read them as booleans and
numbers (kubectl: "cannot unmarshal bool into Go struct field ObjectMeta.metadata.labels")."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from tests.conftest import ROOT
from tests.unit.test_yaml_numbers import kubectl_reads, needs_kubectl
from tests.unit.test_yaml_writing import TRICKY
from webhook.yamlio import load_documents

INVENTORY = str(ROOT / "examples" / "inventories" / "a100-mixed.yaml")


def config_map(values: list[str]) -> dict[str, Any]:
    data = {f"k{i}": value for i, value in enumerate(values)}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "flags"}, "data": data}


def gpu_pod(values: list[str]) -> dict[str, Any]:
    """A pod the webhook mutates (a whole A100 to a MIG slice), the values in its text fields."""
    container = {
        "name": "vllm",
        "image": "vllm/vllm-openai:v0.6.3",
        "args": values,
        "env": [{"name": f"E{i}", "value": value} for i, value in enumerate(values)],
        "resources": {"limits": {"nvidia.com/gpu": 1}},
    }
    labels = {f"l{i}": value for i, value in enumerate(values)}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "vllm", "labels": labels},
        "spec": {"containers": [container]},
    }


def texts(pod: dict[str, Any]) -> tuple[Any, Any, Any]:
    (container,) = pod["spec"]["containers"]
    return pod["metadata"]["labels"], container["args"], container["env"]


def same_texts(found: dict[str, Any], written: dict[str, Any]) -> bool:
    """The written labels, args and env values, beside the labels the webhook (or kubectl) adds."""
    labels, args, env = texts(found)
    expected_labels, expected_args, expected_env = texts(written)
    kept = {key: labels.get(key) for key in expected_labels}
    return (kept, args, env) == (expected_labels, expected_args, expected_env)


def gpu_webhook(stdin: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "webhook", *args]
    return subprocess.run(command, input=stdin, cwd=ROOT, capture_output=True, text=True, check=False)


def read_all(text: str) -> list[Any]:
    return [document.data for document in load_documents(text, "out.yaml")]


def as_json(*documents: Any) -> str:
    """YAML whose every string is in double quotes (JSON's), so the input reads as meant; after
    `---`, since krm answers a stream that starts with `{` in JSON."""
    return "".join(f"---\n{json.dumps(document)}\n" for document in documents)


STREAM = as_json(config_map(TRICKY), gpu_pod(TRICKY))


def krm_stream() -> str:
    result = gpu_webhook(STREAM, "krm", "--inventory", INVENTORY)
    assert result.returncode == 0, result.stderr
    assert "RewrittenToMig" in result.stderr
    return result.stdout


def test_krm_writes_a_stream_back_that_reads_as_the_same_text() -> None:
    cm, pod = read_all(krm_stream())
    assert cm == config_map(TRICKY)
    assert same_texts(pod, gpu_pod(TRICKY))
    assert "nvidia.com/mig-3g.40gb" in str(pod["spec"]["containers"][0]["resources"])


def test_krm_items_that_come_back_unchanged_on_bad_config_read_as_the_same_text() -> None:
    items = [config_map(TRICKY), gpu_pod(TRICKY)]
    listed = {
        "apiVersion": "config.kubernetes.io/v1",
        "kind": "ResourceList",
        "items": items,
        "functionConfig": {"apiVersion": "v1", "kind": "ConfigMap", "data": {"colour": "y"}},
    }
    result = gpu_webhook(as_json(listed), "krm", "--inventory", INVENTORY)
    assert result.returncode == 2, result.stderr
    (written,) = read_all(result.stdout)
    assert written["items"] == items and written["functionConfig"] == listed["functionConfig"]


def test_check_o_yaml_writes_the_mutated_pod_as_the_same_text() -> None:
    result = gpu_webhook(as_json(gpu_pod(TRICKY)), "check", "-", "--inventory", INVENTORY, "-o", "yaml")
    assert result.returncode == 0, result.stderr
    (record,) = read_all(result.stdout)
    assert same_texts(record["mutated"], gpu_pod(TRICKY))


@needs_kubectl
def test_kubectl_reads_krm_s_output_as_the_same_text() -> None:
    cm, pod = kubectl_reads(krm_stream())
    assert cm["data"] == config_map(TRICKY)["data"]
    assert same_texts(pod, gpu_pod(TRICKY))
