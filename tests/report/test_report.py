"""The report: per node and totals, waste found by `decide`, costs from the policies' prices; the CLI."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.builders import A100, make_catalog, make_pod, mixed_node, policy_doc, template_doc, whole_node
from tests.conftest import ROOT
from tests.inventory.fake_apiserver import FakeApiServer
from webhook.catalog import load_catalog
from webhook.cli import main
from webhook.core.model import Catalog
from webhook.inventory.nodes import build_inventory
from webhook.inventory.usage import pod_usage
from webhook.report.build import build_report
from webhook.report.files import load_with_pods
from webhook.report.model import HOURS_PER_MONTH, Report
from webhook.report.render import CSV_FIELDS, render

EXAMPLE_NODES = ROOT / "examples" / "inventories" / "mixed-cluster.yaml"
EXAMPLE_PODS = ROOT / "examples" / "inventories" / "mixed-cluster-pods.yaml"
H100_PRICE = 4.916  # policies/default.yaml
PRICE = 7.0


@pytest.fixture(scope="module")
def example() -> Report:
    inventory, usages = load_with_pods(EXAMPLE_NODES, EXAMPLE_PODS)
    return build_report(inventory, load_catalog([ROOT / "templates", ROOT / "policies"]), usages)


def test_example_nodes_show_allocatable_allocated_and_free(example: Report) -> None:
    lines = {(n.name, line.profile): line for n in example.nodes for line in n.lines}
    assert (lines["a100-mig-0", "1g.10gb"].allocatable, lines["a100-mig-0", "1g.10gb"].allocated) == (16, 12)
    assert (lines["a100-mig-1", "gpu"].allocated, lines["a100-mig-1", "gpu"].free) == (3, 1)
    assert lines["a100-whole-0", "gpu"].allocated == 6  # the finished smoke test and the CPU pod do not count
    assert lines["h100-1g-0", "1g.10gb"].resource == "nvidia.com/gpu"
    assert (lines["h100-1g-0", "1g.10gb"].allocated, lines["h100-1g-0", "1g.10gb"].free) == (40, 16)
    assert example.usage_known


def test_example_waste_is_what_decide_would_rewrite(example: Report) -> None:
    wasteful = {(w.namespace, w.name): (w.profile, w.gpus) for w in example.wasteful}
    assert wasteful == {
        ("default", "smoke-test"): ("1g.10gb", 1),
        ("notebooks", "notebook-h100"): ("1g.10gb", 1),
        ("notebooks", "notebook-whole"): ("1g.10gb", 1),
        ("team-chat", "vllm-legacy"): ("3g.40gb", 1),
        ("team-search", "embedder-legacy"): ("1g.10gb", 1),
    }
    # tensor-parallel serving, a distributed job and a pod no template matches are not waste;
    # neither are single-strategy pods, whose nvidia.com/gpu is already a slice
    assert not {"vllm-70b-tp4", "ddp-trainer-0", "finetune-lora", "h100-small-0"} & {
        w.name for w in example.wasteful
    }


def test_example_costs_follow_the_price_table(example: Report) -> None:
    free_h100 = 2 * H100_PRICE + 16 * H100_PRICE / 7 + 6 * H100_PRICE / 2  # 3g.40gb: 4 of 8 memory slices
    assert example.costs.unallocated_per_hour == pytest.approx(free_h100)
    assert example.costs.wasteful_per_hour == pytest.approx(2 * H100_PRICE * 6 / 7)
    assert example.costs.idle_per_hour is None
    assert example.unpriced_products == ("NVIDIA-A100-SXM4-80GB", "nvidia-l4")
    data = example.to_dict()
    assert data["costs"]["wasteful"]["perMonth"] == pytest.approx(
        2 * H100_PRICE * 6 / 7 * HOURS_PER_MONTH, 1e-3
    )


def _small_catalog() -> Catalog:
    small = template_doc(
        "notebook", {"gpu": "optional", "gpuMemory": "8Gi", "mig": "preferred"}, match={"images": ["nb*"]}
    )
    return make_catalog(small, policy_doc("all", prices={A100: PRICE}))


def _pod(name: str, node: str, limits: dict[str, int], image: str = "nb:1") -> dict[str, Any]:
    pod = make_pod(name).namespace("ns").container("c", image=image, limits=limits).build()
    pod["spec"]["nodeName"] = node
    pod["status"] = {"phase": "Running"}
    return pod


def test_a_slice_costs_its_share_of_the_gpu() -> None:
    nodes = [mixed_node("mig", A100, {"1g.10gb": (7, 9856), "3g.40gb": (2, 40192)}), whole_node("w", A100, 2)]
    pods = [_pod("a", "mig", {"nvidia.com/mig-1g.10gb": 3}), _pod("b", "w", {"nvidia.com/gpu": 1})]
    report = build_report(build_inventory(nodes, pods), _small_catalog(), [pod_usage(p) for p in pods])  # type: ignore[misc]
    node = {n.name: n for n in report.nodes}
    assert node["mig"].unallocated_cost_per_hour == pytest.approx(4 * PRICE / 7 + 2 * PRICE / 2)
    assert node["w"].unallocated_cost_per_hour == pytest.approx(PRICE)
    (waste,) = report.wasteful
    assert (waste.name, waste.profile, waste.gpus_freed) == ("b", "1g.10gb", pytest.approx(6 / 7))
    assert waste.cost_per_hour == pytest.approx(PRICE * 6 / 7)
    total = 7 / 7 + 2 / 2 + 2
    assert report.gpu_equivalents() == pytest.approx((total, 3 / 7 + 1, total - 3 / 7 - 1))


def test_a_full_cluster_does_not_hide_waste() -> None:
    """Waste is about capacity: the rewrite is possible even when every slice is taken right now."""
    nodes = [mixed_node("mig", A100, {"1g.10gb": (1, 9856)}), whole_node("w", A100, 1)]
    pods = [_pod("slice", "mig", {"nvidia.com/mig-1g.10gb": 1}), _pod("whole", "w", {"nvidia.com/gpu": 1})]
    usages = [u for u in map(pod_usage, pods) if u is not None]
    report = build_report(build_inventory(nodes, pods), _small_catalog(), usages)
    assert [w.name for w in report.wasteful] == ["whole"]


def test_a_pod_pinned_away_from_the_slices_is_not_waste() -> None:
    """Its nodeSelector admits only the whole-GPU node: decide would keep its GPU, so would the report."""
    nodes = [mixed_node("mig", A100, {"1g.10gb": (7, 9856)}), whole_node("w", A100, 2)]
    for node in nodes:
        node["metadata"]["labels"]["pool"] = node["metadata"]["name"]
    pinned = _pod("pinned", "w", {"nvidia.com/gpu": 1})
    pinned["spec"]["nodeSelector"] = {"pool": "w"}
    free = _pod("free", "w", {"nvidia.com/gpu": 1})
    usages = [u for u in map(pod_usage, [pinned, free]) if u is not None]
    report = build_report(build_inventory(nodes, [pinned, free]), _small_catalog(), usages)
    assert [w.name for w in report.wasteful] == ["free"]


def test_a_pod_that_does_not_tolerate_the_slice_pool_is_not_waste() -> None:
    """The only slices sit on a spot pool: a pod that does not tolerate its taint could not use them."""
    spot = mixed_node("spot", A100, {"1g.10gb": (7, 9856)})
    spot["spec"] = {"taints": [{"key": "cloud.google.com/gke-spot", "value": "true", "effect": "NoSchedule"}]}
    nodes = [spot, whole_node("w", A100, 2)]
    tolerant = _pod("tolerant", "w", {"nvidia.com/gpu": 1})
    tolerant["spec"]["tolerations"] = [{"key": "cloud.google.com/gke-spot", "operator": "Exists"}]
    strict = _pod("strict", "w", {"nvidia.com/gpu": 1})
    usages = [u for u in map(pod_usage, [tolerant, strict]) if u is not None]
    report = build_report(build_inventory(nodes, [tolerant, strict]), _small_catalog(), usages)
    assert [w.name for w in report.wasteful] == ["tolerant"]


def test_without_pods_the_report_says_usage_is_unknown() -> None:
    inventory, usages = load_with_pods(EXAMPLE_NODES, None)
    report = build_report(inventory, load_catalog([ROOT / "templates", ROOT / "policies"]), usages)
    assert not report.usage_known
    assert report.wasteful == ()
    assert (report.costs.unallocated_per_hour, report.costs.wasteful_per_hour) == (None, None)
    assert report.to_dict()["usageKnown"] is False


def test_json_and_csv_carry_the_same_figures(example: Report) -> None:
    data = json.loads(render(example, "json"))
    rows = list(csv.DictReader(io.StringIO(render(example, "csv"))))
    assert tuple(rows[0]) == CSV_FIELDS
    devices = [r for r in rows if r["section"] == "device"]
    assert len(devices) == sum(len(n["devices"]) for n in data["nodes"])
    assert {r["pod"] for r in rows if r["section"] == "wasteful"} == {w["name"] for w in data["wasteful"]}
    total = next(r for r in rows if r["section"] == "total-unallocated")
    assert float(total["cost_per_hour"]) == pytest.approx(data["costs"]["unallocated"]["perHour"], abs=1e-3)


def test_cli_report_from_files(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["report", "--inventory", str(EXAMPLE_NODES), "--pods", str(EXAMPLE_PODS), "-o", "json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert [n["name"] for n in data["nodes"]][:2] == ["a100-mig-0", "a100-mig-1"]
    assert len(data["wasteful"]) == 5
    assert main(["report", "--inventory", str(EXAMPLE_NODES), "--pods", str(EXAMPLE_PODS)]) == 0
    text = capsys.readouterr().out
    assert all(name in text for name in ("a100-mig-0", "gke-l4-0", "smoke-test"))


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["report"], "--kubeconfig"),
        (["report", "--inventory", "missing.yaml"], "missing.yaml"),
        (["report", "--inventory", str(EXAMPLE_NODES), "--pods", str(EXAMPLE_NODES)], "Node"),
        (
            [
                "report",
                "--inventory",
                str(EXAMPLE_NODES),
                "--prometheus",
                "http://127.0.0.1:9",
                "--window",
                "1 hour",
            ],
            "--window",
        ),
    ],
)
def test_cli_bad_input_is_a_clear_error(
    argv: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert named in captured.err
    assert "Traceback" not in captured.err


def test_cli_missing_kubeconfig_is_named_as_serve_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere"
    assert main(["report", "--kubeconfig", str(missing)]) == 2
    assert capsys.readouterr().err == f"gpu-webhook: --kubeconfig: no such file: {missing}\n"


@pytest.mark.parametrize(
    "text",
    [
        "current-context: c\ncontexts: [{name: c, context: prod}]\n",  # a name where a mapping belongs
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",  # the CA, given by mistake
    ],
    ids=["context-not-a-map", "not-a-map"],
)
def test_cli_a_kubeconfig_of_the_wrong_shape_is_one_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    """As certs says it: the client's AttributeError was a traceback, its TypeError said only
    "'str' object does not support item assignment"."""
    (tmp_path / "config").write_text(text)
    assert main(["report", "--kubeconfig", str(tmp_path / "config")]) == 2
    err = capsys.readouterr().err
    assert "not a valid kubeconfig" in err and "Traceback" not in err


def test_cli_unreachable_prometheus_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["report", "--inventory", str(EXAMPLE_NODES), "--prometheus", "http://127.0.0.1:9"]
    assert main(argv) == 2
    assert "127.0.0.1:9" in capsys.readouterr().err


def test_cli_report_from_a_cluster(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    server = FakeApiServer(tmp_path).start()
    try:
        server.put("nodes", whole_node("w", A100, 4))
        server.put("nodes", mixed_node("mig", A100, {"1g.10gb": (7, 9856)}))
        server.put("pods", _pod("nb", "w", {"nvidia.com/gpu": 1}, image="quay.io/jupyter/base-notebook:1"))
        assert main(["report", "--kubeconfig", str(server.kubeconfig()), "-o", "json"]) == 0
    finally:
        server.stop()
    data = json.loads(capsys.readouterr().out)
    assert data["usageKnown"] is True
    whole = next(n for n in data["nodes"] if n["name"] == "w")["devices"][0]
    assert (whole["allocated"], whole["free"]) == (1, 3)
    assert [w["name"] for w in data["wasteful"]] == ["nb"]


def _profile_table(text: str) -> list[list[str]]:
    lines = text.splitlines()
    start = lines.index("BY MODEL AND SLICE (all nodes together)") + 1
    end = lines.index("", start)
    assert lines[start].split()[:5] == ["PRODUCT", "DEVICE", "ALLOC", "USED", "FREE"]
    return [line.split() for line in lines[start + 1 : end]]


def test_text_and_csv_give_the_totals_per_model_and_slice(example: Report) -> None:
    by_profile = example.to_dict()["totals"]["byProfile"]
    expected = [
        [r["product"], r["profile"], str(r["allocatable"]), str(r["allocated"]), str(r["free"])]
        for r in by_profile
    ]
    assert [row[:5] for row in _profile_table(render(example, "text"))] == expected
    rows = [r for r in csv.DictReader(io.StringIO(render(example, "csv"))) if r["section"] == "profile"]
    fields = ("product", "profile", "allocatable", "allocated", "free")
    assert [[r[f] for f in fields] for r in rows] == expected
    h100 = next(r for r in rows if (r["product"], r["profile"]) == ("NVIDIA-H100-80GB-HBM3", "gpu"))
    assert float(h100["cost_per_hour"]) == pytest.approx(2 * H100_PRICE, abs=1e-3)


POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec:\n  nodeName: a100-mig-0\n"
BAD_PODS = {
    "a Node": ("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n", "kind"),
    "nodeName a number": (POD.replace("a100-mig-0", "5") + "  containers: []\n", "spec.nodeName"),
    "containers a string": (POD + '  containers: "oops"\n', "spec.containers"),
    "a limit that is no quantity": (
        POD + "  containers:\n  - name: c\n    resources: {limits: {nvidia.com/gpu: x}}\n",
        'spec.containers[name=c].resources.limits["nvidia.com/gpu"]',
    ),
    "a negative limit": (
        POD + '  containers:\n  - name: c\n    resources: {limits: {nvidia.com/gpu: "-3"}}\n',
        'spec.containers[name=c].resources.limits["nvidia.com/gpu"]',
    ),
    "a fraction of a device": (
        POD + '  containers:\n  - name: c\n    resources: {limits: {nvidia.com/mig-1g.10gb: "1.5"}}\n',
        'spec.containers[name=c].resources.limits["nvidia.com/mig-1g.10gb"]',
    ),
}


@pytest.mark.parametrize("case", BAD_PODS)
def test_report_refuses_a_pod_list_serve_would_refuse(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, case: str
) -> None:
    """Each problem named with the file, the pod and the field; exit 2, no report printed."""
    text, field = BAD_PODS[case]
    pods = tmp_path / "pods.yaml"
    pods.write_text(text)
    assert main(["report", "--inventory", str(EXAMPLE_NODES), "--pods", str(pods)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    assert str(pods) in err and field in err
    assert "(n1)" in err if case == "a Node" else "(ns/p)" in err


def test_csv_profile_rows_add_up_to_the_device_rows_to_the_cent(example: Report) -> None:
    # per month is computed from the unrounded hourly cost (1g.10gb on H100 said 8202.72, not 8202.70)
    rows = list(csv.DictReader(io.StringIO(render(example, "csv"))))
    for profile in (r for r in rows if r["section"] == "profile" and r["cost_per_month"]):
        devices = [
            r
            for r in rows
            if r["section"] == "device"
            and r["profile"] == profile["profile"]
            and r["product"].startswith(profile["product"])
            and r["state"] == "ready"
        ]
        monthly = sum(float(r["cost_per_month"]) for r in devices if r["cost_per_month"])
        assert float(profile["cost_per_month"]) == pytest.approx(monthly, abs=0.011), profile


def test_cli_report_from_a_cluster_that_refuses_says_what_was_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The API server's own message names the verb, the resource and the user RBAC refused; the
    status line alone did not (found by QA)."""
    server = FakeApiServer(tmp_path).start()
    try:
        server.put("nodes", whole_node("w", A100, 4))
        server.refused["pods"] = 403
        assert main(["report", "--kubeconfig", str(server.kubeconfig())]) == 2
    finally:
        server.stop()
    error = capsys.readouterr().err
    assert "the API server answered 403 Forbidden: pods is forbidden: " in error, error
    assert len(error.strip().splitlines()) == 1
