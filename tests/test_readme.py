"""The README stays true: every reason code is documented, and its commands exist."""

from __future__ import annotations

import re

from tests.conftest import ROOT
from webhook.cli import build_parser
from webhook.core.reasons import REASONS

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_reason_code_is_in_the_readme_table() -> None:
    for reason in REASONS.values():
        assert f"| `{reason.code}` | {reason.cls} | {reason.summary} |" in README, reason.code


def test_readme_commands_exist() -> None:
    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for name in commands:
        assert f"gpu-webhook {name}" in README, name


def test_readme_scripts_exist() -> None:
    named = set(re.findall(r"scripts/[\w-]+\.sh", README))
    assert {"scripts/run.sh", "scripts/test.sh", "scripts/setup-compiled.sh"} <= named
    for script in sorted(named):
        assert (ROOT / script).exists(), script


def test_every_review_metric_is_in_the_readme_with_each_of_its_labels() -> None:
    """Each metric a review or a refused request counts, written `` `name` (`label`, ...) `` in
    **Logs and metrics**: the labels a dashboard or an alert has to select on. The reviews' `kind`
    and `allowed`, the violations' `code` and `outcome` and the bad requests' `reason` were left
    unsaid."""
    from prometheus_client import CollectorRegistry

    from webhook.server.metrics import create_metrics

    metrics = create_metrics()
    for collector in vars(metrics).values():
        if isinstance(collector, CollectorRegistry) or not hasattr(collector, "_labelnames"):
            continue
        name = collector._name
        name = name if name.endswith("_seconds") else f"{name}_total"
        documented = re.search(rf"`{name}`\s+\(([^)]*)\)", README)
        assert documented, f"{name} is not in the README with its labels"
        for label in collector._labelnames:
            assert f"`{label}`" in documented[1], f"{name}: label {label} is not in the README"


def test_complete_yaml_examples_in_the_docs_are_valid_documents() -> None:
    """Every policy, template and suite a reader may copy whole from README.md or docs/ (a block
    with no `...` placeholder) is valid against its schema, as docs/reference.md's own are."""
    import yaml
    from jsonschema import Draft202012Validator

    from webhook.authoring.reference import load_schemas

    schemas = {s["properties"]["kind"]["const"]: s for s in load_schemas()}
    checked = 0
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for block in re.findall(r"```yaml\n(.*?)```", doc.read_text(encoding="utf-8"), re.S):
            data = yaml.safe_load(block)
            if "..." in block or data.get("kind") not in schemas:
                continue
            errors = [e.message for e in Draft202012Validator(schemas[data["kind"]]).iter_errors(data)]
            assert errors == [], f"{doc.name}: {data['kind']} {data['metadata']['name']}: {errors}"
            checked += 1
    assert checked >= 4


def test_the_report_s_trimmed_pod_is_said_to_keep_what_tells_a_rank_of_a_group() -> None:
    """The copy of a pod the report decides keeps the LeaderWorkerSet size annotation and the env
    variables that make a pod a rank of a group (its verdict is then KeptWholeGpu, not waste);
    README said env is dropped with the rest (found by review)."""
    from webhook.core.podview import GROUP_SIZE_ANNOTATIONS, GROUP_VARS

    kept = re.search(r"of a copy that keeps\s+every field `decide` reads(.*?)is dropped", README, re.DOTALL)
    assert kept, "the report's trimmed pod is not described in the README"
    for name in sorted({*GROUP_VARS, *GROUP_SIZE_ANNOTATIONS}):
        assert f"`{name}`" in kept[1], name
