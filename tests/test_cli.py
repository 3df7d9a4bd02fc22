"""`gpu-webhook check` and `lint` as a user runs them: real subprocesses, real files, real exit codes.

Exit codes: 0 every object allowed, 1 any denied, 2 bad input (a clear message, never a traceback).

Each scenario is one `python -m webhook ...` run; they are started together (the CLI's start-up,
mostly imports, dominates) and each test asserts on its own run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
import yaml

from tests.builders import make_pod
from tests.conftest import ROOT
from webhook.cli import build_parser

EXAMPLES = ROOT / "examples"
MIXED = str(EXAMPLES / "inventories" / "a100-mixed.yaml")
VECTORADD = str(EXAMPLES / "pods" / "cuda-vectoradd.yaml")
BROKEN = str(EXAMPLES / "pods" / "broken.yaml")
Result = subprocess.CompletedProcess[str]


@dataclass(frozen=True)
class Run:
    args: tuple[str, ...]
    stdin: str | None = None


def gpu_webhook(run: Run) -> Result:
    return subprocess.run(
        [sys.executable, "-m", "webhook", *run.args],
        input=run.stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )


def pod(name: str, gpu: object = 1) -> dict[str, Any]:
    return make_pod(name).container("main", gpu=gpu, image="nvidia/cuda:12.4.1-base-ubuntu22.04").build()


def write(path: Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return str(path)


def write_bytes(path: Path, data: bytes) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return str(path)


LATIN1_POD = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: café\n".encode("latin-1")  # é at 4:12


def broken_catalog(root: Path) -> tuple[str, str]:
    """A template with a misspelt field and a policy with a wrong type: two problems, two files."""
    templates = write(
        root / "templates" / "typo.yaml",
        "apiVersion: gpu.aethervirt.io/v1\nkind: WorkloadTemplate\nmetadata:\n  name: typo\n"
        "spec:\n  kind: batch\n  acelerator:\n    gpu: required\n",
    )
    policies = write(
        root / "policies" / "all.yaml",
        "apiVersion: gpu.aethervirt.io/v1\nkind: GpuPolicy\nmetadata:\n  name: all\n"
        "spec:\n  namespaces: ['*']\n  maxGpusPerPod: many\n",
    )
    return str(Path(templates).parent), str(Path(policies).parent)


def scenarios(tmp: Path) -> dict[str, Run]:
    two_pods = write(tmp / "two-pods.yaml", yaml.safe_dump_all([pod("ok"), pod("half", gpu="0.5")]))
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"}}
    listed = write(
        tmp / "list.yaml", yaml.safe_dump({"kind": "List", "items": [pod("a"), pod("b"), service]})
    )
    nan = write(tmp / "nan.yaml", yaml.safe_dump(pod("nan", gpu=float("nan"))))
    inner = {"apiVersion": "v1", "kind": "List", "items": [pod("deep", gpu="1.5")]}
    outer = {"kind": "List", "items": [pod("a"), inner]}
    nested_list = write(tmp / "nested-list.yaml", yaml.safe_dump(outer))
    vectoradd = yaml.safe_load(Path(VECTORADD).read_text(encoding="utf-8"))
    vectoradd["metadata"]["namespace"] = "ml"
    own_namespace = write(tmp / "own-namespace.yaml", yaml.safe_dump(vectoradd))
    nested = write(tmp / "k8s" / "apps" / "pod.yaml", yaml.safe_dump(pod("nested")))
    templates, policies = broken_catalog(tmp / "catalog")
    not_sent = write(tmp / "not-sent.yaml", NOT_SENT)
    stdin = Path(two_pods).read_text(encoding="utf-8")
    runs = {
        "allowed": Run(("check", VECTORADD, "--inventory", MIXED)),
        "denied": Run(("check", BROKEN, VECTORADD, nan, "--inventory", MIXED, "-o", "json")),
        "stdin": Run(("check", "-", "--inventory", MIXED, "-o", "json"), stdin=stdin),
        "empty-stdin": Run(("check", "-", "--inventory", MIXED), stdin=""),
        "stdin-twice": Run(("check", "-", VECTORADD, "-"), stdin=stdin),
        "only-subfolders": Run(("check", str(Path(nested).parent.parent), "--inventory", MIXED)),
        "yaml": Run(("check", two_pods, "--inventory", MIXED, "-o", "yaml")),
        "list": Run(("check", listed)),
        **{f"list-{output}": Run(("check", listed, "-o", output)) for output in ("json", "yaml", "patch")},
        "nested-list": Run(("check", nested_list, "-o", "json")),
        "patch": Run(("check", VECTORADD, "--inventory", MIXED, "-o", "patch")),
        "namespace": Run(("check", VECTORADD, "--inventory", MIXED, "-n", "prod-serving", "-o", "json")),
        "own-namespace": Run(
            ("check", own_namespace, "--inventory", MIXED, "-n", "prod-serving", "-o", "json")
        ),
        "missing-file": Run(("check", "no-such-pod.yaml")),
        "missing-inventory": Run(("check", VECTORADD, "--inventory", "no-such-nodes.yaml")),
        "missing-templates": Run(("check", VECTORADD, "--templates", str(tmp / "nowhere"))),
        "broken-catalog": Run(("check", VECTORADD, "--templates", templates, "--policies", policies)),
        "lint-shipped": Run(("lint",)),
        "lint-broken": Run(("lint", templates, policies)),
        "lint-missing": Run(("lint", str(tmp / "nowhere"))),
        "aliases-yaml": Run(
            ("check", write(tmp / "aliased.yaml", ALIASED_POD), "--inventory", MIXED, "-o", "yaml")
        ),
        "aliases-text": Run(("check", str(tmp / "aliased.yaml"), "--inventory", MIXED)),
        "not-utf8-check": Run(
            ("check", write_bytes(tmp / "latin1.yaml", LATIN1_POD), VECTORADD, "-o", "json")
        ),
        "not-utf8-lint": Run(("lint", write_bytes(tmp / "latin1-catalog" / "t.yaml", LATIN1_POD))),
        "not-utf8-test": Run(("test", str(tmp / "latin1.yaml"))),
        "templates-without-inventory": Run(
            (
                "check",
                VECTORADD,
                "--node-templates",
                str(ROOT / "tests/inventories/aks-autoscaled-pools.yaml"),
            )
        ),
        "foreign-job": Run(("check", write(tmp / "foreign-job.yaml", FOREIGN_JOB), VECTORADD, "-o", "json")),
        "syntax-error-in-document-2": Run(("check", write(tmp / "broken-middle.yaml", BROKEN_MIDDLE))),
        "syntax-error-in-document-2-stdin": Run(("check", "-", "-o", "json"), stdin=BROKEN_MIDDLE),
        **{
            f"not-sent{suffix}": Run(("check", not_sent, "-n", "prod-serving", *options))
            for suffix, options in NOT_SENT_RUNS.items()
        },
        "not-sent-json": Run(("check", not_sent, VECTORADD, "-n", "prod-serving", "-o", "json")),
        "duplicate-key-in-document-2": Run(
            ("check", write(tmp / "duplicate-middle.yaml", DUPLICATE_MIDDLE), "-o", "json")
        ),
    }
    for name, (text, _) in BAD_MANIFESTS.items():
        # each bad file comes with a good one: a bad file must not hide the others
        runs[f"manifest-{name}"] = Run(("check", write(tmp / f"{name}.yaml", text), VECTORADD, "-o", "json"))
    for name, text in BAD_INVENTORIES.items():
        runs[f"inventory-{name}"] = Run(
            ("check", VECTORADD, "--inventory", write(tmp / f"nodes-{name}.yaml", text))
        )
    return runs


ALIASED_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: shared
  labels: &labels {app: demo}
  annotations:
    <<: *labels
    note: merged
spec:
  containers:
  - name: a
    image: nvidia/cuda:12.4.1-base-ubuntu22.04
    resources: &gpu
      limits: {nvidia.com/gpu: 1}
  - name: b
    image: nvidia/cuda:12.4.1-base-ubuntu22.04
    resources: *gpu
"""
FOREIGN_JOB = """\
apiVersion: example.com/v1
kind: Job
metadata: {name: not-batch}
spec: {template: 3}
"""
BROKEN_MIDDLE = """\
apiVersion: v1
kind: Pod
metadata: {name: p1}
spec:
  containers:
  - name: c
    image: x
    resources: {limits: {nvidia.com/gpu: 0.5}}
---
apiVersion: v1
kind: Pod
metadata: {name: p2
spec: {}
---
apiVersion: v1
kind: Pod
metadata: {name: p3}
spec: {containers: [{name: c, image: x}]}
"""
NOT_SENT = """\
apiVersion: v1
kind: Pod
metadata: {name: nginx}
spec: {containers: [{name: web, image: nginx}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {template: {spec: {containers: [{name: web, image: nginx}]}}}
---
apiVersion: v1
kind: Pod
metadata: {name: h100}
spec: {containers: [{name: c, image: x, resources: {limits: {example.com/h100: 1}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: mirror, annotations: {kubernetes.io/config.mirror: abc}}
spec: {containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]}
"""
NOT_SENT_RUNS = {
    "": (),
    "-as-if-sent": ("--as-if-sent",),
    "-yaml": ("-o", "yaml"),
    "-extra-resource": ("--extra-resource", "example.com/h100", "-o", "json"),
    "-extra-prefix": ("--extra-resource", "example.com/*", "-o", "json"),
    "-bad-extra-resource": ("--extra-resource", "h100"),
}
DUPLICATE_MIDDLE = BROKEN_MIDDLE.replace("metadata: {name: p2\n", "metadata: {name: p2}\nkind: Pod\n")
BAD_MANIFESTS = {  # name: (text, where the message must point)
    "invalid-yaml": ("apiVersion: v1\nkind: Pod\nmetadata: {name: x\n", ":4:1:"),
    "duplicate-key": ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  name: b\n", ":5"),
    "not-a-mapping": ("- just\n- a list\n", "#1"),
    "list-item-not-a-mapping": (
        "apiVersion: v1\nkind: List\nitems:\n- just a string\n",
        "#1[0]: a List item must be a mapping, got str",
    ),
    "spec-not-an-object": (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: 7\n",
        "#1: Pod x: spec: must be an object, not a number",
    ),
    "metadata-a-string": (
        'apiVersion: v1\nkind: Pod\nmetadata: "meta"\nspec: {containers: [{name: a, image: b}]}\n',
        "#1: Pod: metadata: must be an object, not a string",
    ),
    "metadata-a-list": (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: [1]\n"
        "spec: {template: {spec: {containers: [{name: a, image: b}]}}}\n",
        "#1: Deployment: metadata: must be an object, not a list",
    ),
    "name-a-number": (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: 5}\nspec: {containers: [{name: a, image: b}]}\n",
        "#1: Pod: metadata.name: must be a string, not a number",
    ),
    "template-metadata-a-number": (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n"
        "spec: {template: {metadata: 5, spec: {containers: [{name: a, image: b}]}}}\n",
        "#1: Deployment d: spec.template.metadata: must be an object, not a number",
    ),
    "kind-a-list": (
        "apiVersion: v1\nkind: [Pod]\nmetadata: {name: x}\n",
        "#1: no kind x: kind: must be a string",
    ),
    "api-version-a-number": (
        "apiVersion: 1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: a, image: b}]}\n",
        "#1: Pod x: apiVersion: must be a string, not a number",
    ),
    "alias-bomb": (
        "apiVersion: v1\nkind: Pod\nx0: &l0 [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n"
        + "".join(f"x{n}: &l{n} [" + ",".join([f"*l{n - 1}"] * 9) + "]\n" for n in range(1, 9))
        + "metadata: {name: *l8}\n",
        ":7: invalid YAML: its aliases expand to",
    ),
    "no-api-version": (
        "kind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: a, image: b}]}\n",
        "#1: Pod x: apiVersion: missing: the API server refuses an object without one",
    ),
    "replica-specs-a-number": (
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: pj}\n"
        "spec:\n  pytorchReplicaSpecs: 5\n",
        "#1: PyTorchJob pj: spec.pytorchReplicaSpecs: must be an object, not a number",
    ),
    "pod-in-apps-v1": (
        "apiVersion: apps/v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: a, image: b}]}\n",
        "#1: Pod x: apiVersion: kind Pod is in apiVersion v1, not apps/v1",
    ),
    "kind-in-lower-case": (
        "apiVersion: v1\nkind: pod\nmetadata: {name: x}\nspec: {containers: [{name: a, image: b}]}\n",
        "#1: pod x: kind: kinds are case-sensitive: did you mean Pod?",
    ),
    "deployment-in-core-v1": (
        "apiVersion: v1\nkind: Deployment\nmetadata: {name: d}\n"
        "spec: {template: {spec: {containers: [{name: a, image: b}]}}}\n",
        "#1: Deployment d: apiVersion: kind Deployment is in apiVersion apps/v1, not v1",
    ),
    "deployment-without-template": (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: 1}\n",
        "#1: Deployment d: spec.template: missing",
    ),
}
BAD_INVENTORIES = {
    "invalid-yaml": "items: [\n",
    "pods-not-nodes": "apiVersion: v1\nkind: List\nitems:\n- kind: Pod\n  metadata: {name: p}\n",
}


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Result], Path]:
    tmp = tmp_path_factory.mktemp("cli")
    runs = scenarios(tmp)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = dict(zip(runs, pool.map(gpu_webhook, runs.values()), strict=True))
    return results, tmp


def result(ran: tuple[dict[str, Result], Path], name: str) -> Result:
    return ran[0][name]


def records(found: Result) -> list[dict[str, Any]]:
    parsed: list[dict[str, Any]] = json.loads(found.stdout)
    return parsed


def assert_bad_input(found: Result, *names: str) -> None:
    """Exit 2 and one line on stderr that says what and where (besides notes); never a traceback."""
    assert found.returncode == 2, found.stdout + found.stderr
    assert "Traceback" not in found.stderr + found.stdout
    lines = [line for line in found.stderr.strip().splitlines() if not line.startswith("note: ")]
    assert len(lines) == 1 and lines[0].startswith("gpu-webhook: "), found.stderr
    assert all(name in lines[0] for name in names), lines[0]


@pytest.mark.parametrize(("name", "hint"), [("empty-stdin", "<stdin>"), ("only-subfolders", "-R")])
def test_inputs_without_objects_exit_2_so_a_mistyped_path_fails_ci(
    ran: tuple[dict[str, Result], Path], name: str, hint: str
) -> None:
    assert_bad_input(result(ran, name), "no Kubernetes objects found", hint)


def test_stdin_given_twice_is_a_usage_error_as_it_can_be_read_only_once(
    ran: tuple[dict[str, Result], Path],
) -> None:
    found = result(ran, "stdin-twice")
    assert_bad_input(found, "- (stdin) is given more than once")
    assert found.stdout == ""


def test_all_allowed_exits_0_and_shows_the_mutation(ran: tuple[dict[str, Result], Path]) -> None:
    found = result(ran, "allowed")
    assert found.returncode == 0, found.stderr
    assert found.stdout.startswith("ALLOWED  Pod cuda-vectoradd")
    assert "RewrittenToMig" in found.stdout and "+        nvidia.com/mig-1g.10gb: 1" in found.stdout
    assert found.stderr == ""


def test_any_denied_exits_1_and_lists_every_problem(ran: tuple[dict[str, Result], Path]) -> None:
    found = result(ran, "denied")
    assert found.returncode == 1, found.stderr
    broken, vectoradd, _ = records(found)
    assert (broken["name"], broken["allowed"], vectoradd["allowed"]) == ("broken-trainer", False, True)
    denied = {(v["code"], v["path"]) for v in broken["violations"] if v["outcome"] == "deny"}
    assert {
        ("UnknownAcceleratorResource", 'spec.containers[name=trainer].resources.limits["nvidia.com/gpus"]'),
        ("FractionalGpu", 'spec.containers[name=trainer].resources.limits["nvidia.com/gpu"]'),
        ("GpuRequestWithoutLimit", 'spec.initContainers[name=fetch].resources.requests["nvidia.com/gpu"]'),
        ("MixedAcceleratorKinds", "spec.containers[name=helper].resources.limits"),
    } <= denied


def test_a_quantity_yaml_reads_as_not_a_number_is_a_denial_not_a_crash(
    ran: tuple[dict[str, Result], Path],
) -> None:
    nan = records(result(ran, "denied"))[2]
    assert (nan["name"], nan["allowed"]) == ("nan", False)
    assert "InvalidGpuQuantity" in [v["code"] for v in nan["violations"]]


def test_stdin_with_several_documents(ran: tuple[dict[str, Result], Path]) -> None:
    found = result(ran, "stdin")
    assert found.returncode == 1
    assert [(r["source"], r["name"], r["allowed"]) for r in records(found)] == [
        ("<stdin>#1", "ok", True),
        ("<stdin>#2", "half", False),
    ]


def test_json_records_name_the_kind_as_the_text_does(ran: tuple[dict[str, Result], Path]) -> None:
    """A CI step reading `-o json` names a denied object as `DENIED  Pod half` does: kind and name."""
    listed = records(result(ran, "list-json"))
    assert [(r["source"].rsplit("#", 1)[1], r["kind"], r["name"]) for r in listed] == [
        ("1[0]", "Pod", "a"),
        ("1[1]", "Pod", "b"),
    ]
    as_yaml = list(yaml.safe_load_all(result(ran, "list-yaml").stdout))
    assert [r["kind"] for r in as_yaml] == ["Pod", "Pod"]


def test_yaml_output_holds_the_same_decisions_as_json(ran: tuple[dict[str, Result], Path]) -> None:
    as_json = records(result(ran, "stdin"))
    as_yaml = list(yaml.safe_load_all(result(ran, "yaml").stdout))
    assert [{**r, "source": ""} for r in as_yaml] == [{**r, "source": ""} for r in as_json]
    fields = {
        "source",
        "kind",
        "name",
        "allowed",
        "template",
        "policy",
        "mode",
        "violations",
        "warnings",
        "patch",
        "mutated",
    }
    assert fields <= set(as_json[0])


def test_merge_keys_are_read_and_no_output_has_yaml_anchors(ran: tuple[dict[str, Result], Path]) -> None:
    as_yaml, as_text = result(ran, "aliases-yaml"), result(ran, "aliases-text")
    assert (as_yaml.returncode, as_text.returncode) == (0, 0), as_yaml.stderr + as_text.stderr
    for output in (as_yaml.stdout, as_text.stdout):
        assert "&id0" not in output and "*id0" not in output
    (record,) = yaml.safe_load_all(as_yaml.stdout)
    mutated = record["mutated"]
    assert {"app": "demo", "note": "merged"}.items() <= mutated["metadata"]["annotations"].items()
    limits = [c["resources"]["limits"] for c in mutated["spec"]["containers"]]
    assert [sorted(k for k in lim if k.startswith("nvidia.com/")) for lim in limits] == [
        ["nvidia.com/mig-1g.10gb"]
    ] * 2


def list_notes(tmp: Path) -> list[str]:
    return [
        f"skipped {tmp / 'list.yaml'}#1[2]: Service svc holds no pod template",
        "note: no --inventory given; slice choice and node checks were skipped",
    ]


def test_a_list_is_read_item_by_item_and_other_kinds_are_skipped(ran: tuple[dict[str, Result], Path]) -> None:
    found = result(ran, "list")
    assert found.returncode == 0, found.stderr
    verdicts = [line.split() for line in found.stdout.splitlines() if line.startswith("ALLOWED")]
    assert [(v[2], v[3].rsplit("#", 1)[1]) for v in verdicts] == [("a", "1[0])"), ("b", "1[1])")]
    assert "skipped" not in found.stdout and "note:" not in found.stdout, "notes go to stderr"
    assert found.stderr.splitlines() == list_notes(ran[1])


@pytest.mark.parametrize("output", ["json", "yaml", "patch"])
def test_skipped_objects_are_noted_on_stderr_in_every_format(
    ran: tuple[dict[str, Result], Path], output: str
) -> None:
    found = result(ran, f"list-{output}")
    assert found.returncode == 0, found.stderr
    parsed = json.loads(found.stdout) if output != "yaml" else list(yaml.safe_load_all(found.stdout))
    assert len(parsed) == 2, "stdout holds only the decisions"
    assert found.stderr.splitlines() == list_notes(ran[1])


def test_a_list_inside_a_list_is_read_item_by_item_as_kubectl_does(
    ran: tuple[dict[str, Result], Path],
) -> None:
    found = result(ran, "nested-list")
    assert found.returncode == 1, found.stderr
    assert [(r["source"].rsplit("#", 1)[1], r["name"], r["allowed"]) for r in records(found)] == [
        ("1[0]", "a", True),
        ("1[1][0]", "deep", False),
    ]


def test_patch_output_applies_to_the_input(ran: tuple[dict[str, Result], Path]) -> None:
    found = result(ran, "patch")
    assert found.returncode == 0, found.stderr
    patches = json.loads(found.stdout)
    (source,) = patches
    assert source.startswith(VECTORADD)
    original = yaml.safe_load(Path(VECTORADD).read_text(encoding="utf-8"))
    mutated = jsonpatch.apply_patch(original, patches[source])
    assert mutated["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/mig-1g.10gb"] == 1


def test_namespace_option_selects_the_policy(ran: tuple[dict[str, Result], Path]) -> None:
    (record,) = records(result(ran, "namespace"))
    assert (record["policy"], record["allowed"]) == ("production", False)
    assert [v["code"] for v in record["violations"]] == ["NoMatchingTemplate"]


def test_a_manifests_own_namespace_wins_over_the_option(ran: tuple[dict[str, Result], Path]) -> None:
    """`-n` is for manifests that name no namespace, as `--help` says (kubectl refuses a mismatch)."""
    (record,) = records(result(ran, "own-namespace"))
    assert (record["policy"], record["allowed"]) == ("default", True)


@pytest.mark.parametrize("name", sorted(BAD_MANIFESTS))
def test_unreadable_manifests_exit_2_naming_file_and_line(
    ran: tuple[dict[str, Result], Path], name: str
) -> None:
    found = result(ran, f"manifest-{name}")
    assert_bad_input(found, f"{ran[1] / name}.yaml{BAD_MANIFESTS[name][1]}")
    assert [r["name"] for r in records(found)] == ["cuda-vectoradd"], "a bad file must not hide the others"


def test_a_file_that_is_not_utf8_exits_2_naming_file_line_and_column(
    ran: tuple[dict[str, Result], Path],
) -> None:
    found = result(ran, "not-utf8-check")
    assert_bad_input(found, f"{ran[1] / 'latin1.yaml'}:4:12:")
    assert [r["name"] for r in records(found)] == ["cuda-vectoradd"], "a bad file must not hide the others"
    for name in ("not-utf8-lint", "not-utf8-test"):
        found = result(ran, name)
        assert found.returncode == 2 and "Traceback" not in found.stdout + found.stderr, found.stderr
        assert "latin1.yaml:4:" in found.stdout or "t.yaml:4:" in found.stdout, found.stdout


def test_a_missing_file_exits_2(ran: tuple[dict[str, Result], Path]) -> None:
    assert_bad_input(result(ran, "missing-file"), "no-such-pod.yaml")


@pytest.mark.parametrize("name", sorted(BAD_INVENTORIES))
def test_a_bad_inventory_exits_2(ran: tuple[dict[str, Result], Path], name: str) -> None:
    assert_bad_input(result(ran, f"inventory-{name}"), str(ran[1] / f"nodes-{name}.yaml"))


def test_a_missing_inventory_exits_2(ran: tuple[dict[str, Result], Path]) -> None:
    assert_bad_input(result(ran, "missing-inventory"), "no-such-nodes.yaml")


def test_a_missing_templates_folder_exits_2(ran: tuple[dict[str, Result], Path]) -> None:
    assert_bad_input(result(ran, "missing-templates"), "nowhere")


def test_a_broken_catalog_exits_2_listing_each_problem(ran: tuple[dict[str, Result], Path]) -> None:
    """One headline, then one line per problem (file:line: path: message)."""
    found, catalog = result(ran, "broken-catalog"), ran[1] / "catalog"
    assert found.returncode == 2 and "Traceback" not in found.stderr
    first, *problems = found.stderr.strip().splitlines()
    assert first.startswith("gpu-webhook: ")
    assert any(f"{catalog / 'templates' / 'typo.yaml'}:" in line for line in problems)
    assert any(f"{catalog / 'policies' / 'all.yaml'}:7: spec.maxGpusPerPod" in line for line in problems)


def test_lint_passes_the_shipped_catalog(ran: tuple[dict[str, Result], Path]) -> None:
    found = result(ran, "lint-shipped")
    assert (found.returncode, found.stdout.startswith("ok: ")) == (0, True), found.stdout


def test_lint_reports_every_problem_with_file_line_and_path(ran: tuple[dict[str, Result], Path]) -> None:
    found, catalog = result(ran, "lint-broken"), ran[1] / "catalog"
    assert found.returncode == 2 and "Traceback" not in found.stderr
    lines = found.stdout.strip().splitlines()
    assert lines[-1] == f"{len(lines) - 1} problem(s)" and len(lines) >= 3
    assert any(line.startswith(f"{catalog / 'templates' / 'typo.yaml'}:6: spec: ") for line in lines)
    assert any(
        line.startswith(f"{catalog / 'policies' / 'all.yaml'}:7: spec.maxGpusPerPod: ") for line in lines
    )


def test_lint_of_a_missing_path_exits_2(ran: tuple[dict[str, Result], Path]) -> None:
    found = result(ran, "lint-missing")
    assert found.returncode == 2 and "Traceback" not in found.stderr + found.stdout
    assert "nowhere" in found.stdout


def test_a_kind_of_another_api_group_is_skipped_not_decided(ran: tuple[dict[str, Result], Path]) -> None:
    found = result(ran, "foreign-job")
    assert found.returncode == 0 and "Traceback" not in found.stderr, found.stderr
    assert [r["name"] for r in records(found)] == ["cuda-vectoradd"]


def test_node_templates_need_a_node_list(ran: tuple[dict[str, Result], Path]) -> None:
    assert_bad_input(result(ran, "templates-without-inventory"), "--node-templates goes with --inventory")


def test_documents_before_a_yaml_syntax_error_are_still_decided(ran: tuple[dict[str, Result], Path]) -> None:
    found = result(ran, "syntax-error-in-document-2")
    assert found.returncode == 2 and "Traceback" not in found.stderr
    assert found.stdout.startswith("DENIED  Pod p1"), found.stdout
    assert "FractionalGpu" in found.stdout and "p3" not in found.stdout
    assert f"{ran[1] / 'broken-middle.yaml'}:13:5: invalid YAML" in found.stderr


@pytest.mark.parametrize(
    ("name", "where"),
    [("syntax-error-in-document-2-stdin", "<stdin>:13:5:"), ("duplicate-key-in-document-2", ":13:")],
)
def test_documents_before_a_yaml_error_are_decided_and_the_error_named(
    ran: tuple[dict[str, Result], Path], name: str, where: str
) -> None:
    found = result(ran, name)
    assert [(r["name"], r["allowed"]) for r in records(found)] == [("p1", False)]
    assert_bad_input(found, where, "invalid YAML")


def test_objects_the_webhook_configurations_skip_are_marked_and_not_counted(
    ran: tuple[dict[str, Result], Path],
) -> None:
    """A plain pod in a namespace that requires a template is denied by `check`, but the shipped
    matchConditions never send it: the cluster admits it, so a CI gate must not fail on it."""
    found = result(ran, "not-sent")
    assert found.returncode == 0, found.stdout + found.stderr
    lines = found.stdout.splitlines()
    headers = [line for line in lines if not line.startswith(" ")]
    assert [h.split("  (")[0] for h in headers] == [
        "NOT SENT (DENIED if sent)  Pod nginx",
        "NOT SENT (DENIED if sent)  Deployment web",
        "NOT SENT (DENIED if sent)  Pod h100",
        "NOT SENT (ALLOWED if sent)  Pod mirror",
    ]
    assert lines[1] == (
        "  not sent to the webhook (matchCondition accelerator-or-template): it asks for no accelerator "
        "resource the conditions know and has no gpu.aethervirt.io/template label"
    )
    assert "(matchCondition not-a-mirror-pod): it is a mirror pod" in found.stdout
    assert "NoMatchingTemplate" in found.stdout
    assert "note: 3 denied object(s) marked NOT SENT" in found.stderr


def test_as_if_sent_counts_every_denial(ran: tuple[dict[str, Result], Path]) -> None:
    found = result(ran, "not-sent-as-if-sent")
    assert found.returncode == 1, found.stderr
    assert "NOT SENT (DENIED if sent)  Pod nginx" in found.stdout and "marked NOT SENT" not in found.stderr


def test_json_and_yaml_say_whether_each_object_is_sent(ran: tuple[dict[str, Result], Path]) -> None:
    ran_json = result(ran, "not-sent-json")
    assert ran_json.returncode == 1, "a denied object that is sent still counts"
    found = records(ran_json)
    assert [(r["name"], r["sent"], r["allowed"]) for r in found] == [
        ("nginx", False, False),
        ("web", False, False),
        ("h100", False, False),
        ("mirror", False, True),
        ("cuda-vectoradd", True, False),
    ]
    assert found[1]["notSent"].startswith("not sent to the webhook (matchCondition accelerator-or-template)")
    assert "notSent" not in found[4]
    assert list(yaml.safe_load_all(result(ran, "not-sent-yaml").stdout)) == found[:4]


@pytest.mark.parametrize("suffix", ["-extra-resource", "-extra-prefix"])
def test_extra_resources_the_conditions_were_generated_with_are_sent(
    ran: tuple[dict[str, Result], Path], suffix: str
) -> None:
    found = result(ran, f"not-sent{suffix}")
    assert found.returncode == 1
    assert [(r["name"], r["sent"]) for r in records(found)][2] == ("h100", True)


def test_an_extra_resource_that_is_no_resource_name_is_a_usage_error(
    ran: tuple[dict[str, Result], Path],
) -> None:
    found = result(ran, "not-sent-bad-extra-resource")
    assert found.returncode == 2 and "is not an extended resource name" in found.stderr


def test_a_kind_not_read_that_embeds_pods_is_not_said_to_hold_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An AppWrapper holds a PyTorchJob whose pods gpu-webhook checks when they are created; the
    note said it held no pod template (found by QA). A Service still holds none."""
    from webhook.cli import main

    job = {"kind": "PyTorchJob", "spec": {"pytorchReplicaSpecs": {"Master": {"template": {"spec": {}}}}}}
    job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"] = [{"name": "c"}]
    wrapper = {
        "apiVersion": "workload.codeflare.dev/v1beta2",
        "kind": "AppWrapper",
        "metadata": {"name": "aw"},
    }
    wrapper["spec"] = {"components": [{"template": job}]}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"}, "spec": {"ports": []}}
    (tmp_path / "objects.yaml").write_text(yaml.safe_dump_all([wrapper, service]))
    assert main(["check", str(tmp_path / "objects.yaml")]) == 0  # nothing to judge, nothing denied
    notes = capsys.readouterr().err.splitlines()
    assert any("AppWrapper aw is a kind gpu-webhook does not read" in line for line in notes), notes
    assert any("Service svc holds no pod template" in line for line in notes), notes


def test_an_admission_review_is_not_said_to_make_pods(capsys: pytest.CaptureFixture[str]) -> None:
    """The example review serve's curl line posts, given to check, was skipped as a kind that
    makes pods, "checked when created" (found by QA): it is a request, its pod in request.object."""
    from webhook.cli import main

    assert main(["check", str(EXAMPLES / "admission" / "pod-review.json")]) == 0  # nothing judged
    notes = capsys.readouterr().err.splitlines()
    skipped = [line for line in notes if line.startswith("skipped ")]
    assert len(skipped) == 1 and "AdmissionReview" in skipped[0], notes
    assert "request.object" in skipped[0] and "checked when created" not in skipped[0], notes


def test_names_with_control_characters_are_shown_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pod, container or object named with an ESC or a carriage return (YAML's `"\\e]0;..."`,
    before any API server validates the name) was printed as it is: a manifest could retitle or
    recolour a CI terminal, or hide a line of the output (found by QA)."""
    from webhook.cli import main

    bad = pod("p\x1b]0;title\x07\x1b[31m\rp", gpu="0.5")
    bad["spec"]["containers"][0]["name"] = "c\x1b[2K"
    skipped = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s\x1b[2K\r"}}
    malformed = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "m\x1b[2K"}, "spec": []}
    path = write(tmp_path / "named.yaml", yaml.safe_dump_all([bad, skipped, malformed]))
    assert main(["check", path]) == 2
    out, err = capsys.readouterr()
    assert out.startswith("DENIED  Pod p\\x1b]0;title\\x07\\x1b[31m\\rp  ("), out
    assert "c\\x1b[2K" in out
    assert "Service s\\x1b[2K\\r" in err and "m\\x1b[2K" in err, err
    assert not any(c in out + err for c in "\x1b\x07\r"), (out, err)


def test_every_option_of_every_command_says_what_it_does_in_help() -> None:
    """`check --help` and `report --help` listed `-o` with its formats and nothing of what each prints."""
    parser = build_parser()
    (commands,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    silent = [
        (name, action.dest)
        for name, command in commands.choices.items()
        for action in command._actions
        if action.help is None
    ]
    assert silent == []
