"""docs/reference.md is what the schemas generate, and every field in it is documented."""

from __future__ import annotations

from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from tests.conftest import ROOT
from webhook.authoring.reference import MISSING_EXAMPLE, fields, load_schemas, render_reference
from webhook.catalog import lint_paths
from webhook.core.podview import GROUP_SIZE_ANNOTATIONS, GROUP_SIZE_VARS, TF_CONFIG_VAR
from webhook.core.resources import GPU_COUNTING_NAMES


def test_checked_in_reference_matches_the_schemas() -> None:
    checked_in = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    assert checked_in == render_reference(), "docs/reference.md is stale: run python tools/gen_reference.py"


@pytest.mark.parametrize("schema", load_schemas(), ids=lambda s: str(s["$id"]).rsplit("/", 1)[-1])
def test_every_field_has_a_type_a_description_and_an_example(schema: dict[str, object]) -> None:
    documented = fields(schema)
    assert len(documented) > 10
    for field in documented:
        assert field.type, field.path
        assert field.description, f"{field.path} has no description in {schema['$id']}"
        assert MISSING_EXAMPLE not in field.example and field.example != "`{}`", (
            f"{field.path} has no example"
        )


def test_reference_lists_every_top_level_spec_field() -> None:
    text = render_reference()
    for schema in load_schemas():
        spec = schema["properties"]["spec"]
        for name in spec["properties"]:
            assert f"`spec.{name}`" in text


def test_examples_in_the_schemas_are_valid_documents() -> None:
    for schema in load_schemas():
        for example in schema.get("examples", []):
            assert list(Draft202012Validator(schema).iter_errors(example)) == []


def test_an_expectation_or_a_list_of_them_is_typed_so_once() -> None:
    """The expectation's own if/then/else (`sent: false` needs no `allowed`) was read as a second
    'or a list of them' (found by QA)."""
    row = next(
        line for line in render_reference().splitlines() if line.startswith("| `spec.cases[].expect` |")
    )
    assert row.split(" | ")[1] == "object, or a list of them", row


def test_the_policy_namespace_fields_say_which_policy_governs_as_the_webhook_decides() -> None:
    """The reference said a longer pattern beats a shorter one, but patterns rank by their literal
    characters (`team-pay*`, nine characters, beats `team-[a-z]*`, eleven: a class is one
    character of a name; tests/unit/core/test_matching.py), and that excludedNamespaces are left
    alone entirely, but an exclusion reaches only the namespaces its policy names (`scratch`
    excluded by a `pay-*` policy is still governed by the `*` one)."""
    (policy,) = [s for s in load_schemas() if str(s["$id"]).endswith("/policy.v1.json")]
    described = {field.path: field.description for field in fields(policy)}
    namespaces, excluded = described["spec.namespaces"], described["spec.excludedNamespaces"]
    assert "longer pattern" not in namespaces
    assert "literal characters" in namespaces and "single-character wildcards" in namespaces
    assert "it names" in excluded and "names them exactly" in excluded


def _described(kind: str) -> dict[str, str]:
    (schema,) = [s for s in load_schemas() if str(s["$id"]).endswith(f"/{kind}.v1.json")]
    return {field.path: field.description for field in fields(schema)}


def test_the_template_tolerations_are_said_to_reach_pods_without_a_gpu_too() -> None:
    """The reference said `inject.tolerations` are added to GPU pods, but every pod the template
    applies to gets them (test_pods_without_gpus_get_only_the_template_tolerations): a CPU pod of
    a `gpu: optional` template given `nvidia.com/gpu` tolerations may land on the GPU nodes."""
    described = _described("template")["spec.inject.tolerations"]
    assert "GPU pods (" not in described
    assert "without a GPU" in described


def test_devices_min_leaves_a_pod_without_a_gpu_to_the_gpu_field() -> None:
    """The reference said `devices.min: 0` is what lets pods without a GPU in, but `devices.min`
    counts only a pod that holds some (test_no_gpu_at_all_is_not_below_the_minimum): `gpu:
    optional` with `devices.min: 2` admits a pod without a GPU, and `gpu: required` denies one
    (NoGpuOnGpuTemplate) at the default 0."""
    described = _described("template")["spec.accelerator.devices.min"]
    assert "0: pods without a GPU are fine" not in described
    assert "gpu: required" in described and "gpu: optional" in described


def test_the_template_namespaces_are_said_to_keep_its_label_to_them() -> None:
    """`match.namespaces` keeps a pod's explicit template label to those namespaces too
    (TemplateNotAllowed elsewhere, but for the policy's default: README "How a pod finds its
    template"), where the reference called `match` a way to match "without an explicit label"
    and authoring.md named only `templates.allowed` as what refuses a label."""
    described = _described("template")
    assert "TemplateNotAllowed" in described["spec.match.namespaces"]
    assert "templates.default" in described["spec.match.namespaces"]
    step = (ROOT / "docs" / "authoring.md").read_text(encoding="utf-8").split("2. **The namespace")[0]
    assert "match.namespaces" in step


def test_the_compute_share_bounds_are_typed_as_the_load_reads_them(tmp_path: Path) -> None:
    """The reference typed `podOverrides.computeShare.min`/`max` "string or number" (one bounds
    type for memory and compute), but the load refuses a string there, `"0.1"` or `"50%"`
    alike: a number is what the template author must write."""
    lines = render_reference().splitlines()
    rows = {line.split(" | ")[0]: line.split(" | ")[1] for line in lines if line.startswith("| `")}
    for end in ("min", "max"):
        assert rows[f"| `spec.accelerator.podOverrides.computeShare.{end}`"] == "number (> 0, ≤ 1)"
    assert rows["| `spec.accelerator.podOverrides.gpuMemory.min`"] == "string or number"
    body = (
        "apiVersion: gpu.aethervirt.io/v1\nkind: WorkloadTemplate\nmetadata: {name: t}\nspec:\n"
        "  kind: serving\n  accelerator:\n    gpu: required\n    computeShare: 0.5\n"
        '    podOverrides: {computeShare: {min: "0.1", max: 2}}\n'
    )
    (tmp_path / "t.yaml").write_text(body, encoding="utf-8")
    paths = {problem.path for problem in lint_paths([tmp_path])}
    assert paths == {
        "spec.accelerator.podOverrides.computeShare.min",
        "spec.accelerator.podOverrides.computeShare.max",
    }


def test_max_gpus_per_pod_names_every_count_of_gpus_it_bounds() -> None:
    """`maxGpusPerPod` counts Volcano's `volcano.sh/vgpu-number` and `volcano.sh/gpu-number` as
    GPUs (test_volcano_gpu_counts_count_like_gpus), but the reference named only
    time-slicing's `*.shared` among the names it counts beside GPUs and slices: an author reading
    it took a Volcano count for a way around the maximum, or for unbounded."""
    described = _described("policy")["spec.maxGpusPerPod"]
    for name in sorted(GPU_COUNTING_NAMES):
        assert name in described, name
    assert "*.shared" in described


def test_authoring_names_every_sign_of_a_rank_that_keeps_whole_gpus() -> None:
    """authoring.md lists what makes a pod a rank of a multi-pod group, which keeps its whole GPU
    (KeptWholeGpu), but left out JobSet's ranks (`jobset.sigs.k8s.io/replicatedjob-replicas`
    above 1, README "How a slice is chosen"): an author reading it expected a JAX JobSet's
    ranks cut to slices. Each group annotation is named by its project, each variable by name."""
    text = (ROOT / "docs" / "authoring.md").read_text(encoding="utf-8")
    section = text.split("## How a slice is chosen")[1].split("1. **The need per device**")[0]
    flat = " ".join(section.split()).lower()
    for annotation in GROUP_SIZE_ANNOTATIONS:
        project = annotation.split(".", 1)[0]
        assert project in flat, annotation
    for variable in (*sorted(GROUP_SIZE_VARS), TF_CONFIG_VAR):
        assert f"`{variable.lower()}`" in flat, variable
