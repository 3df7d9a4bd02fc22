"""The README stays true: every reason code is documented, and its commands exist."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT
from webhook.cli import build_parser, main
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
    unsaid. The certificate's expiry gauge too, which has none."""
    from prometheus_client import CollectorRegistry

    from webhook.server.metrics import certificate_expiry_gauge, create_metrics

    metrics = create_metrics()
    for collector in [*vars(metrics).values(), certificate_expiry_gauge()]:
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


CATALOG = ["--templates", str(ROOT / "templates"), "--policies", str(ROOT / "policies")]
NOT_SENT_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: nginx, namespace: prod-web}
spec:
  containers: [{name: nginx, image: nginx}]
"""


def test_the_not_sent_example_is_what_check_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """README's block left out the line under `DENY  NoMatchingTemplate` saying what to do."""
    example = re.search(r"```\n(NOT SENT \(DENIED if sent\)  Pod nginx .*?)```", README, re.DOTALL)
    assert example, "the NOT SENT example is not in the README"
    monkeypatch.chdir(tmp_path)
    Path("nginx.yaml").write_text(NOT_SENT_POD, encoding="utf-8")
    assert main(["check", "nginx.yaml", *CATALOG]) == 0
    assert capsys.readouterr().out == example[1]


def _quoted(sentence: str) -> list[str]:
    return [" ".join(q.split()) for q in re.findall(r"\(`([^`]+)`\)", sentence)]


def _printed(quote: str, printed: str) -> bool:
    """Whether a line, after any folder, starts as `quote` does, `...` standing for what it leaves out."""
    pattern = r"(^|/)" + ".*".join(re.escape(part) for part in quote.split("..."))
    return re.search(pattern, printed, re.M) is not None


def test_the_whole_file_problems_quoted_are_what_lint_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A problem of a whole file or folder is printed with `(document)` where a field's path would
    be; README quoted them without it."""
    sentence = re.search(r"A folder that cannot be listed(.*?)reports them the same way", README, re.DOTALL)
    assert sentence, "the catalog's whole-file problems are not in the README"
    monkeypatch.chdir(tmp_path)
    shutil.copytree(ROOT / "templates", "a/templates", ignore=shutil.ignore_patterns("tests"))
    Path("a/templates/zz.yaml").symlink_to("/nonexistent")
    Path("a/templates/b.yaml").touch()
    Path("a/policies").mkdir()
    assert main(["lint", "a/templates", "a/policies"]) == 2
    unreadable = Path("b/templates")
    unreadable.mkdir(parents=True)
    unreadable.chmod(0)
    main(["lint", str(unreadable), str(ROOT / "policies")])
    unreadable.chmod(0o755)
    printed = capsys.readouterr()
    quotes = _quoted(sentence[1])
    assert len(quotes) == 4
    for quote in quotes:
        if "cannot read" in quote and os.geteuid() == 0:
            continue  # root lists any folder
        assert _printed(quote, printed.out + printed.err), f"{quote} is not what lint prints"


def test_a_whole_suite_file_problem_is_quoted_as_test_prints_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    said = re.search(r"2: a suite is invalid \(`file:line: field: problem`; `file: (.*?)`\s+when", README)
    assert said and said[1] == "(document): problem", "README does not say how a whole suite file is named"
    (tmp_path / "e.yaml").touch()
    assert main(["test", str(tmp_path)]) == 2
    assert f"{tmp_path / 'e.yaml'}: (document): no TemplateTestSuite document" in capsys.readouterr().out


def test_the_reload_figures_say_the_tie_check_compares_only_the_pairs_that_could_tie() -> None:
    """Live reload's figures said the load's tie check compares 200 templates of one priority pair
    by pair, the reason one priority loaded slower; since its index (webhook/catalog/tie_index.py)
    it compares only the pairs that could tie: a reader sizing a catalog of teams kept apart by
    namespace was told the load grows with every pair of them."""
    reload = README.split("## Live reload of templates and policies")[1].split("\n## ")[0]
    assert "compares pair by pair" not in reload
    assert "tests/unit/catalog/test_tie_index.py" in reload


NO_GPU_PODS = """\
apiVersion: v1
kind: Pod
metadata: {name: gpu, namespace: web}
spec:
  containers: [{name: a, image: busybox, resources: {limits: {nvidia.com/gpu: 1}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: slice, namespace: web}
spec:
  containers: [{name: a, image: busybox, resources: {limits: {nvidia.com/mig-1g.10gb: 1}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: labelled, namespace: web, labels: {gpu.aethervirt.io/template: notebook}}
spec:
  containers: [{name: a, image: jupyter/base-notebook, resources: {limits: {nvidia.com/gpu: 1}}}]
"""


def test_the_no_gpus_policy_of_coming_from_kyverno_denies_what_it_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The mapping's "no GPUs in these namespaces": a GPU, a slice, and a GPU template named by label."""
    import json

    section = README.split("### Coming from Kyverno or Gatekeeper", 1)[1]
    policy = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert policy, "the no-gpus policy is not in the section"
    monkeypatch.chdir(tmp_path)
    shutil.copytree(ROOT / "policies", "policies")
    Path("policies/no-gpus.yaml").write_text(policy[1], encoding="utf-8")
    Path("pods.yaml").write_text(NO_GPU_PODS, encoding="utf-8")
    args = [
        "check",
        "pods.yaml",
        "--templates",
        str(ROOT / "templates"),
        "--policies",
        "policies",
        "-o",
        "json",
    ]
    assert main(args) == 1
    found = {
        r["name"]: [(v["code"], v["outcome"]) for v in r["violations"]]
        for r in json.loads(capsys.readouterr().out)
    }
    assert found == {
        "gpu": [("GpuOnCpuOnlyTemplate", "deny")],
        "slice": [("GpuOnCpuOnlyTemplate", "deny")],
        "labelled": [("TemplateNotAllowed", "deny")],
    }
