"""The KRM function: a ResourceList in, mutated items and one result per violation out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT
from webhook.authoring.krm import FunctionConfig, KrmInputError, read_config, run_function
from webhook.manifests import MAX_LIST_DEPTH

INVENTORY = str(ROOT / "examples" / "inventories" / "a100-mixed.yaml")
CONFIG = FunctionConfig(
    templates=str(ROOT / "templates"), policies=str(ROOT / "policies"), inventory=INVENTORY
)


def pod(name: str, gpu: object = 1, image: str = "vllm/vllm-openai:v0.6.3", **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, **meta},
        "spec": {
            "containers": [{"name": "main", "image": image, "resources": {"limits": {"nvidia.com/gpu": gpu}}}]
        },
    }


def deployment(name: str) -> dict[str, Any]:
    template = pod("x")
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "serving"},
        "spec": {"replicas": 1, "template": {"metadata": {}, "spec": template["spec"]}},
    }


CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"a": "b"}}


def resource_list(*items: dict[str, Any], config: dict[str, str] | None = None) -> dict[str, Any]:
    listed: dict[str, Any] = {
        "apiVersion": "config.kubernetes.io/v1",
        "kind": "ResourceList",
        "items": list(items),
    }
    if config is not None:
        listed["functionConfig"] = {"apiVersion": "v1", "kind": "ConfigMap", "data": config}
    return listed


def test_items_are_mutated_in_place_and_others_pass_through_in_order() -> None:
    outcome = run_function(resource_list(CONFIG_MAP, pod("vllm"), deployment("web")), CONFIG)
    items = outcome.resource_list["items"]
    assert [i["kind"] for i in items] == ["ConfigMap", "Pod", "Deployment"]
    assert items[0] == CONFIG_MAP
    assert items[1]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/mig-3g.40gb"] == 1
    template = items[2]["spec"]["template"]
    assert template["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/mig-3g.40gb"] == 1
    assert not outcome.failed


def test_one_result_per_violation_with_ref_field_and_tags() -> None:
    outcome = run_function(resource_list(pod("vllm", namespace="team")), CONFIG)
    codes = [r["tags"]["code"] for r in outcome.results]
    assert codes[:2] == ["RewrittenToMig", "SteeredToMigNodes"]
    first = outcome.results[0]
    assert first["severity"] == "info"
    assert first["resourceRef"] == {"apiVersion": "v1", "kind": "Pod", "name": "vllm", "namespace": "team"}
    assert first["field"] == {"path": 'spec.containers[name=main].resources.limits["nvidia.com/gpu"]'}
    assert first["tags"]["template"] == "llm-serving" and first["tags"]["policy"] == "default"
    assert outcome.resource_list["results"] == outcome.results


def test_denials_are_errors_warnings_are_warnings_and_the_file_is_named() -> None:
    annotations = {"config.kubernetes.io/path": "pods/x.yaml", "internal.config.kubernetes.io/index": "2"}
    outcome = run_function(resource_list(pod("bad", gpu="0.5", annotations=annotations)), CONFIG)
    (error,) = [r for r in outcome.results if r["tags"]["code"] == "FractionalGpu"]
    assert error["severity"] == "error" and error["file"] == {"path": "pods/x.yaml", "index": 2}
    assert outcome.failed
    research = run_function(resource_list(pod("bad", gpu="0.5", namespace="research-x")), CONFIG)
    assert {r["severity"] for r in research.results if r["tags"]["code"] == "FractionalGpu"} == {"warning"}
    assert not research.failed


def test_a_malformed_pod_spec_is_an_error_at_its_field_and_passes_through() -> None:
    broken = pod("broken") | {"spec": {"containers": 5}}
    outcome = run_function(resource_list(broken, pod("vllm")), CONFIG)
    (error,) = [r for r in outcome.results if r["resourceRef"]["name"] == "broken"]
    assert error["severity"] == "error" and error["field"] == {"path": "spec.containers"}
    assert outcome.failed and outcome.resource_list["items"][0] == broken


@pytest.mark.parametrize("metadata", ["meta", [1], 5])
def test_metadata_that_is_not_an_object_is_an_error_on_its_item_and_the_others_are_decided(
    metadata: Any,
) -> None:
    broken = pod("broken") | {"metadata": metadata}
    wrong_kind = {"apiVersion": "v1", "kind": 5, "metadata": {"name": "odd", "annotations": "x"}}
    outcome = run_function(resource_list(broken, wrong_kind, pod("vllm")), CONFIG)
    errors = [r for r in outcome.results if r["severity"] == "error"]
    assert [(r["resourceRef"]["kind"], r["field"]["path"]) for r in errors] == [
        ("Pod", "metadata"),
        ("", "kind"),
    ]
    assert "must be an object" in errors[0]["message"] and "must be a string" in errors[1]["message"]
    assert outcome.resource_list["items"][:2] == [broken, wrong_kind]
    assert outcome.resource_list["items"][2]["spec"]["containers"][0]["resources"]["limits"] != {
        "nvidia.com/gpu": 1
    }


def listed(*items: Any, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "metadata": meta, "items": list(items)}


def test_the_objects_of_a_list_item_are_decided_and_mutated_in_place_nested_lists_too() -> None:
    annotations = {"config.kubernetes.io/path": "all.yaml", "config.kubernetes.io/index": "0"}
    item = listed(CONFIG_MAP, pod("vllm"), listed(pod("frac", gpu="1.5")), annotations=annotations)
    outcome = run_function(resource_list(item), CONFIG)
    (out,) = outcome.resource_list["items"]
    assert [i["kind"] for i in out["items"]] == ["ConfigMap", "Pod", "List"]
    assert out["metadata"] == item["metadata"] and out["items"][0] == CONFIG_MAP
    assert out["items"][1]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/mig-3g.40gb"] == 1
    assert out["items"][2] == item["items"][2], "a denied pod is left as it is"
    (denial,) = [r for r in outcome.results if r["severity"] == "error"]
    assert (denial["resourceRef"]["name"], denial["tags"]["code"]) == ("frac", "FractionalGpu")
    assert denial["file"] == {"path": "all.yaml", "index": 0}
    assert {r["resourceRef"]["name"] for r in outcome.results} == {"vllm", "frac"}
    assert outcome.failed


def test_a_list_item_that_is_not_an_object_is_an_error_and_the_others_are_decided() -> None:
    outcome = run_function(resource_list(listed(42, pod("vllm"))), CONFIG)
    errors = [r for r in outcome.results if r["severity"] == "error"]
    assert [(r["resourceRef"]["kind"], r["field"]["path"]) for r in errors] == [("List", "items[0]")]
    assert "must be a mapping, got int" in errors[0]["message"]
    assert outcome.resource_list["items"][0]["items"][0] == 42
    assert (
        "nvidia.com/mig-3g.40gb"
        in outcome.resource_list["items"][0]["items"][1]["spec"]["containers"][0]["resources"]["limits"]
    )


def test_an_item_that_is_not_an_object_is_an_error_and_the_others_are_decided() -> None:
    outcome = run_function(resource_list(pod("vllm"), "some text", ["a"]), CONFIG)
    errors = [r for r in outcome.results if r["severity"] == "error"]
    assert [r["field"]["path"] for r in errors] == ["items[1]", "items[2]"]
    assert outcome.failed and outcome.resource_list["items"][1:] == ["some text", ["a"]]
    assert "nvidia.com/mig-3g.40gb" in str(outcome.resource_list["items"][0])


def test_cli_a_stream_document_that_is_not_an_object_fails_the_run() -> None:
    """`helm template | gpu-webhook krm` of a stream with a stray text document exited 0."""
    result = krm("just some text\n---\n" + yaml.safe_dump(pod("vllm")))
    assert result.returncode == 1, result.stderr
    assert "error: items[0]:" in result.stderr
    assert list(yaml.safe_load_all(result.stdout))[0] == "just some text"


def test_a_kind_the_api_server_refuses_is_an_error_not_passed_through_undecided() -> None:
    wrong_group = pod("grouped", gpu="1.5") | {"apiVersion": "apps/v1"}
    wrong_case = pod("cased", gpu="1.5") | {"kind": "pod"}
    local = wrong_case | {
        "metadata": {"name": "local", "annotations": {"config.kubernetes.io/local-config": "true"}}
    }
    outcome = run_function(resource_list(wrong_group, wrong_case, local), CONFIG)
    assert [(r["resourceRef"]["name"], r["field"]["path"], r["message"]) for r in outcome.results] == [
        ("grouped", "apiVersion", "malformed: apiVersion: kind Pod is in apiVersion v1, not apps/v1"),
        ("cased", "kind", "malformed: kind: kinds are case-sensitive: did you mean Pod?"),
    ]
    assert outcome.failed and outcome.resource_list["items"] == [wrong_group, wrong_case, local]


def test_mutate_false_leaves_items_unchanged_but_reports() -> None:
    items = (pod("vllm"), deployment("web"))
    outcome = run_function(resource_list(*items, config={"mutate": "false"}), CONFIG)
    assert outcome.resource_list["items"] == list(items)
    rewritten = [r for r in outcome.results if r["tags"]["code"] == "RewrittenToMig"]
    assert len(rewritten) == 1 and rewritten[0]["message"].endswith("(not applied: mutate is false)")


@pytest.mark.parametrize(
    ("spelled", "mutate"),
    [("mutate: no", False), ('mutate: "no"', False), ("mutate: Off", False), ("mutate: 'OFF'", False)]
    + [('mutate: "false"', False), ("mutate: false", False), ("mutate: yes", True), ('mutate: "on"', True)]
    + [("mutate: true", True), ('mutate: "True"', True)],
)
def test_mutate_means_the_same_quoted_or_not(spelled: str, mutate: bool) -> None:
    """YAML 1.1 reads a bare `no` as false; kustomize and kpt pass the same word on as text."""
    data = yaml.safe_load(f"data:\n  {spelled}\n")
    assert read_config(data, CONFIG).mutate is mutate


@pytest.mark.parametrize("spelled", ["mutate: 0", 'mutate: "n"', "mutate: n", "mutate: []", 'mutate: ""'])
def test_mutate_that_is_no_boolean_either_way_is_refused(spelled: str) -> None:
    with pytest.raises(ValueError, match="mutate must be true or false"):
        read_config(yaml.safe_load(f"data:\n  {spelled}\n"), CONFIG)


def test_function_config_overrides_defaults_and_namespace_default_applies() -> None:
    config = {"inventory": "none", "namespace": "prod-chat", "templates": CONFIG.templates}
    assert not run_function(resource_list(pod("shell", image="busybox", gpu=0)), CONFIG).failed
    strict = run_function(resource_list(pod("shell", image="busybox", gpu=0), config=config), CONFIG)
    assert [r["tags"]["code"] for r in strict.results] == ["NoMatchingTemplate"] and strict.failed


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"mutate": "maybe"}, "mutate"),
        ({"colour": "red"}, "unknown key"),
        ({"templates": "/nowhere"}, "no such templates"),
        ({"inventory": "/nowhere.yaml"}, "nowhere.yaml"),
    ],
)
def test_bad_function_config_is_an_error_result_and_items_are_kept(data: dict[str, str], words: str) -> None:
    items = (pod("vllm"),)
    outcome = run_function(resource_list(*items, config=data), CONFIG)
    assert outcome.failed and outcome.resource_list["items"] == list(items)
    assert words in outcome.results[0]["message"]


def test_a_broken_catalog_names_each_problem_file(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(
        "apiVersion: gpu.aethervirt.io/v1\nkind: WorkloadTemplate\nmetadata: {}\n"
    )
    outcome = run_function(resource_list(pod("vllm"), config={"templates": str(tmp_path)}), CONFIG)
    assert outcome.failed
    assert str(tmp_path / "t.yaml") in {r["file"]["path"] for r in outcome.results}


def test_read_config_accepts_spec_and_bools() -> None:
    config = read_config({"kind": "GpuWebhook", "spec": {"mutate": False, "namespace": "ml"}}, CONFIG)
    assert config.mutate is False and config.namespace == "ml" and config.inventory == INVENTORY


@pytest.mark.parametrize("bad", [[], {"kind": "Pod"}, {"kind": "ResourceList", "items": {}}])
def test_input_that_is_not_a_resource_list_is_refused(bad: Any) -> None:
    with pytest.raises(KrmInputError):
        run_function(bad, CONFIG)


def krm(stdin: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "webhook", "krm", "--inventory", INVENTORY, *args]
    return subprocess.run(command, input=stdin, cwd=ROOT, capture_output=True, text=True, check=False)


def test_cli_round_trip_yaml() -> None:
    result = krm(yaml.safe_dump(resource_list(CONFIG_MAP, pod("vllm"), pod("bad", gpu="0.5"))))
    assert result.returncode == 1
    out = yaml.safe_load(result.stdout)
    assert out["kind"] == "ResourceList" and out["items"][0] == CONFIG_MAP
    assert "nvidia.com/mig-3g.40gb" in out["items"][1]["spec"]["containers"][0]["resources"]["limits"]
    assert out["items"][2] == pod("bad", gpu="0.5")
    assert "FractionalGpu" in result.stderr and "RewrittenToMig" not in result.stderr


def test_cli_results_on_stderr_show_control_characters_in_names_escaped() -> None:
    """A pod named with an ESC or a carriage return was printed as it is in the result line: a
    manifest in a render pipeline could recolour the CI log or hide the denial (found by QA)."""
    result = krm(json.dumps(resource_list(pod("bad\x1b[2K\r", gpu="0.5"))))
    assert result.returncode == 1
    assert "Pod/bad\\x1b[2K\\r: " in result.stderr, result.stderr
    assert "\x1b" not in result.stderr and "\r" not in result.stderr
    assert json.loads(result.stdout)["items"][0]["metadata"]["name"] == "bad\x1b[2K\r"


def test_cli_json_in_json_out_and_no_mutate_flag() -> None:
    result = krm(json.dumps(resource_list(pod("vllm"))), "--no-mutate")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["items"] == [pod("vllm")]


def test_cli_stream_with_config_file_as_kustomize_exec_plugins_call_it(tmp_path: Path) -> None:
    config = tmp_path / "fn.yaml"
    config.write_text("apiVersion: gpu.aethervirt.io/v1\nkind: GpuWebhook\nmetadata: {name: g}\nspec: {}\n")
    stream = yaml.safe_dump_all([CONFIG_MAP, pod("vllm")])
    result = krm(stream, str(config))
    assert result.returncode == 0, result.stderr
    items = list(yaml.safe_load_all(result.stdout))
    assert items[0] == CONFIG_MAP and "nvidia.com/mig-3g.40gb" in str(items[1])
    assert "info: Pod/vllm: RewrittenToMig" in result.stderr


@pytest.mark.parametrize("stdin", ["items: [unclosed\n", "apiVersion: v1\nkind: Pod\n---\n- a list\n"])
def test_cli_bad_input_is_a_message_not_a_traceback(stdin: str) -> None:
    result = krm(stdin)
    assert "Traceback" not in result.stderr
    if result.returncode == 2:
        assert result.stderr.startswith("gpu-webhook: krm:")
    else:  # the odd document is an error result, and so is the Pod without a spec
        assert result.returncode == 1 and "error: Pod/: malformed: spec: missing" in result.stderr


def test_cli_stdin_that_is_not_utf8_is_named_at_its_line_and_column() -> None:
    command = [sys.executable, "-m", "webhook", "krm"]
    data = "apiVersion: v1\nkind: Pod\nmetadata: {name: caf\xe9}\n".encode("latin-1")
    result = subprocess.run(command, input=data, cwd=ROOT, capture_output=True, check=False)
    stderr = result.stderr.decode()
    assert result.returncode == 2 and "Traceback" not in stderr
    assert "<stdin>:3:" in stderr, stderr


def test_cli_documents_before_a_yaml_error_are_decided_and_not_written_back() -> None:
    stream = yaml.safe_dump(pod("half", gpu="0.5")) + "---\nmetadata: {name: p2\nspec: {}\n---\n"
    result = krm(stream + yaml.safe_dump(pod("later")))
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("error: Pod/half: FractionalGpu"), result.stderr
    assert lines[-1].startswith("gpu-webhook: krm: <stdin>:14:") and "invalid YAML" in lines[-1]
    assert "later" not in result.stderr


def test_every_function_config_problem_is_reported_at_once() -> None:
    """An unknown key, a bad mutate, missing templates and a missing inventory took four runs."""
    data = {"colour": "red", "mutate": "maybe", "templates": "/nowhere", "inventory": "/nowhere.yaml"}
    outcome = run_function(resource_list(pod("vllm"), config=data), CONFIG)
    messages = [r["message"] for r in outcome.results]
    assert len(messages) == 4, messages
    for words in ("unknown key(s) colour", "mutate must be", "no such templates", "/nowhere.yaml"):
        assert any(words in m for m in messages), (words, messages)
    assert outcome.bad_config and outcome.resource_list["items"] == [pod("vllm")]


def test_read_config_names_every_problem() -> None:
    with pytest.raises(ValueError, match=r"unknown key\(s\) colour.*mutate must be"):
        read_config({"data": {"colour": "red", "mutate": "maybe"}}, CONFIG)


def test_cli_a_bad_function_config_is_bad_input_exit_2_not_a_denial() -> None:
    """Exit 1 is for denials (README); a config that cannot be used decides nothing."""
    listed = resource_list(pod("vllm"), config={"colour": "red", "mutate": "maybe"})
    result = krm(yaml.safe_dump(listed))
    assert result.returncode == 2, result.stderr
    assert "unknown key(s) colour" in result.stderr and "mutate must be" in result.stderr
    out = yaml.safe_load(result.stdout)
    assert out["items"] == [pod("vllm")] and len(out["results"]) == 2


def test_lists_nested_too_deep_are_an_error_not_a_recursion() -> None:
    deep: dict[str, Any] = pod("frac", gpu="1.5")
    for _ in range(MAX_LIST_DEPTH + 1):
        deep = listed(deep)
    outcome = run_function(resource_list(deep), CONFIG)
    (error,) = outcome.results
    assert error["severity"] == "error" and "Lists nested more than" in error["message"]
    assert outcome.resource_list["items"] == [deep]
