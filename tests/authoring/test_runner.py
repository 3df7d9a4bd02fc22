"""The suite runner on suites that fail or do not load: exit codes, what is reported, JUnit counts."""

from __future__ import annotations

import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import ROOT
from webhook.authoring.junit import junit_xml
from webhook.authoring.runner import EXIT_BAD_SUITE, EXIT_FAILED, EXIT_PASSED, Run, run_paths
from webhook.authoring.suite import suite_files
from webhook.cli import main

HEADER = f"""\
apiVersion: gpu.aethervirt.io/v1
kind: TemplateTestSuite
metadata:
  name: {{name}}
spec:
  templates: {ROOT / "templates"}
  policies: {ROOT / "policies"}
  inventory: {ROOT / "examples" / "inventories" / "a100-mixed.yaml"}
  cases:
"""

VLLM = """\
      input:
        apiVersion: v1
        kind: Pod
        metadata: {name: vllm}
        spec:
          containers:
            - name: vllm
              image: vllm/vllm-openai:v0.6.3
              resources: {limits: {nvidia.com/gpu: 1}}
"""


POD = "apiVersion: v1\nkind: Pod\nmetadata: {{name: {}}}\nspec:\n  containers: [{{name: c, image: bb}}]\n"


def suite(tmp_path: Path, cases: str, name: str = "s", filename: str = "suite.yaml") -> Path:
    path = tmp_path / filename
    path.write_text(HEADER.format(name=name) + textwrap.indent(cases, "    "))
    return path


def case(expect: str, body: str = VLLM, name: str = "c") -> str:
    """One case: `- name:`, the input lines, then `expect:` with the expectation lines below it."""
    inputs = textwrap.indent(textwrap.dedent(body), "  ")
    return f"- name: {name}\n{inputs}  expect:\n" + textwrap.indent(textwrap.dedent(expect), "    ")


def only(run: Run) -> list[str]:
    (result,) = run.results
    return [m.check for m in result.mismatches]


def test_a_passing_case(tmp_path: Path) -> None:
    path = suite(tmp_path, case("allowed: true\ntemplate: llm-serving\ncodesInclude: [RewrittenToMig]\n"))
    run = run_paths([path])
    assert run.exit_code == EXIT_PASSED
    assert [r.passed for r in run.results] == [True]


@pytest.mark.parametrize(
    ("expect", "check"),
    [
        ("allowed: false\n", "allowed"),
        ("allowed: true\ntemplate: notebook\n", "template"),
        ("allowed: true\npolicy: production\n", "policy"),
        ("allowed: true\ncodes: [RewrittenToMig]\n", "codes"),
        ("allowed: true\ncodesInclude: [KeptWholeGpu]\n", "codesInclude"),
        ("allowed: true\ncodesExclude: [RewrittenToMig]\n", "codesExclude"),
        ("allowed: true\nviolations: [{code: RewrittenToMig, path: spec.containers}]\n", "violations"),
        ("allowed: true\nwarnings: [2g.20gb]\n", "warnings"),
        ("allowed: true\nmutated: false\n", "mutated"),
        (
            'allowed: true\nfields: {"/metadata/annotations/gpu.aethervirt.io~1mig-profile": 1g.10gb}\n',
            "fields",
        ),
    ],
)
def test_each_expectation_field_can_fail(tmp_path: Path, expect: str, check: str) -> None:
    run = run_paths([suite(tmp_path, case(expect))])
    assert run.exit_code == EXIT_FAILED
    assert [c.split("[")[0] for c in only(run)] == [check]


def test_codes_failure_lists_missing_and_unexpected_codes(tmp_path: Path) -> None:
    run = run_paths([suite(tmp_path, case("allowed: true\ncodes: [RewrittenToMig, KeptWholeGpu]\n"))])
    (mismatch,) = run.results[0].mismatches
    assert "- KeptWholeGpu  (expected, missing)" in mismatch.detail
    assert "+ SteeredToMigNodes  (not expected)" in mismatch.detail


def test_every_mismatch_of_a_resource_is_reported(tmp_path: Path) -> None:
    expect = 'allowed: false\ntemplate: notebook\nfields: {"spec.containers[name=vllm].image": other}\n'
    run = run_paths([suite(tmp_path, case(expect))])
    assert only(run) == ["allowed", "template", "fields[spec.containers[name=vllm].image]"]


def test_absent_field_and_null_expectation(tmp_path: Path) -> None:
    gpu = 'spec.containers[name=vllm].resources.limits[\\"nvidia.com/gpu\\"]'
    fields = f'fields: {{spec.nodeName: null, "{gpu}": 1}}\n'
    run = run_paths([suite(tmp_path, case("allowed: true\n" + fields))])
    (mismatch,) = run.results[0].mismatches
    assert mismatch.check == 'fields[spec.containers[name=vllm].resources.limits["nvidia.com/gpu"]]'
    assert "absent" in mismatch.message


def test_whole_object_mismatch_shows_a_diff(tmp_path: Path) -> None:
    expected = tmp_path / "expected.yaml"
    expected.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: vllm}\nspec: {containers: []}\n")
    run = run_paths([suite(tmp_path, case("allowed: true\nmutatedFile: expected.yaml\n"))])
    (mismatch,) = run.results[0].mismatches
    assert mismatch.check == "mutated"
    assert mismatch.detail[0] == "--- expected" and mismatch.detail[1] == "+++ actual"
    assert any(line.startswith("+") and "mig-3g.40gb" in line for line in mismatch.detail)


def test_several_resources_need_one_expectation_each(tmp_path: Path) -> None:
    manifests = tmp_path / "in.yaml"
    manifests.write_text(POD.format("a") + "---\n" + POD.format("b") + "---\napiVersion: v1\nkind: Service\n")
    body = "inputFile: in.yaml\n"
    good = case("- {resource: Pod/a, allowed: true}\n- {resource: Pod/b, allowed: false}\n", body)
    run = run_paths([suite(tmp_path, good)])
    assert [(r.resource, r.passed) for r in run.results] == [("Pod/a", True), ("Pod/b", False)]


@pytest.mark.parametrize(
    ("cases", "path", "words"),
    [
        (case("allowed: true\ncodez: [X]\n"), "spec.cases[0].expect", "unknown field"),
        (case("allowed: true\ncodez: [X]\n"), "spec.cases[0].expect", "known here: allowed, codes,"),
        (case("allowed: yes-please\n"), "spec.cases[0].expect.allowed", "boolean"),
        (case("allowed: true\ncodes: [RewritenToMig]\n"), "spec.cases[0].expect.codes[0]", "unknown reason"),
        (
            case("allowed: true\ncodes: [RewritenToMig]\n"),
            "spec.cases[0].expect.codes[0]",
            "README's Reason codes",
        ),
        (case("allowed: true\n", "inputFile: nowhere.yaml\n"), "spec.cases[0].inputFile", "no such file"),
        (
            case("allowed: true\n", textwrap.dedent(VLLM) + "inputFile: x.yaml\n"),
            "spec.cases[0]",
            "exactly one",
        ),
        (case("allowed: true\nfields: {'spec.[': 1}\n"), "spec.cases[0].expect.fields.spec.[", "cannot read"),
        (case("allowed: true\n") + case("allowed: true\n"), "spec.cases[1].name", "used twice"),
        (case("allowed: true\nresource: Pod/other\n"), "spec.cases[0].expect.resource", "no Pod/other"),
        (
            case("allowed: true\n", VLLM.replace("kind: Pod", "kind: pod")),
            "spec.cases[0].input",
            "pod vllm: kind: kinds are case-sensitive: did you mean Pod?",
        ),
        (
            case("allowed: true\n", VLLM.replace("apiVersion: v1", "apiVersion: apps/v1")),
            "spec.cases[0].input",
            "Pod vllm: apiVersion: kind Pod is in apiVersion v1, not apps/v1",
        ),
        (
            case("allowed: true\n", VLLM.replace("metadata: {name: vllm}", 'metadata: "meta"')),
            "spec.cases[0].input",
            "Pod: metadata: must be an object, not a string",
        ),
    ],
)
def test_bad_suites_name_file_line_and_field(tmp_path: Path, cases: str, path: str, words: str) -> None:
    file = suite(tmp_path, cases)
    run = run_paths([file])
    assert run.exit_code == EXIT_BAD_SUITE
    assert run.results == []
    matching = [p for p in run.problems if p.path == path]
    assert matching, [str(p) for p in run.problems]
    assert matching[0].source == str(file) and matching[0].line is not None
    assert words in matching[0].message


NESTED_LIST = """\
      input:
        apiVersion: v1
        kind: List
        items:
          - apiVersion: v1
            kind: List
            items:
              - apiVersion: v1
                kind: Pod
                metadata: {name: deep}
                spec:
                  containers: [{name: c, image: bb, resources: {limits: {nvidia.com/gpu: 1.5}}}]
"""


def test_an_inline_list_inside_a_list_is_read_item_by_item(tmp_path: Path) -> None:
    run = run_paths([suite(tmp_path, case("allowed: false\ncodesInclude: [FractionalGpu]\n", NESTED_LIST))])
    assert run.problems == [] and [(r.resource, r.passed) for r in run.results] == [("Pod/deep", True)]


def test_an_inline_list_item_that_is_not_an_object_is_a_bad_suite(tmp_path: Path) -> None:
    body = NESTED_LIST.replace("            items:\n", "            items:\n              - 42\n")
    run = run_paths([suite(tmp_path, case("allowed: false\n", body))])
    assert run.exit_code == EXIT_BAD_SUITE and run.results == []
    (problem,) = run.problems
    assert problem.path == "spec.cases[0].input" and problem.line is not None
    assert problem.message.endswith("#c[0][0][0]: a List item must be a mapping, got int"), problem.message


def test_uncovered_resource_is_a_bad_suite(tmp_path: Path) -> None:
    manifests = tmp_path / "in.yaml"
    manifests.write_text(POD.format("a") + "---\n" + POD.format("b"))
    run = run_paths([suite(tmp_path, case("- {resource: Pod/a, allowed: true}\n", "inputFile: in.yaml\n"))])
    assert run.exit_code == EXIT_BAD_SUITE
    assert any("no expectation for Pod/b" in p.message for p in run.problems)


def test_duplicate_key_and_invalid_yaml_are_bad_suites(tmp_path: Path) -> None:
    duplicate = suite(tmp_path, case("allowed: true\nallowed: false\n"), filename="dup.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("spec: [unclosed\n")
    run = run_paths([tmp_path])
    assert run.exit_code == EXIT_BAD_SUITE
    assert set(run.broken) == {str(duplicate), str(broken)}
    assert any("duplicate key" in p.message and p.line for p in run.broken[str(duplicate)])


def test_broken_catalog_is_reported_with_its_own_problems(tmp_path: Path) -> None:
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "t.yaml").write_text(
        "apiVersion: gpu.aethervirt.io/v1\nkind: WorkloadTemplate\nmetadata: {}\n"
    )
    text = HEADER.format(name="s").replace(str(ROOT / "templates"), str(templates))
    file = tmp_path / "suite.yaml"
    file.write_text(text + textwrap.indent(case("allowed: true\n"), "    "))
    run = run_paths([file])
    assert run.exit_code == EXIT_BAD_SUITE
    sources = {p.source for p in run.problems}
    assert str(file) in sources and str(templates / "t.yaml") in sources


def test_one_bad_suite_does_not_stop_the_others(tmp_path: Path) -> None:
    suite(tmp_path, case("allowed: true\n"), name="good", filename="a.yaml")
    suite(tmp_path, case("allowed: maybe\n"), name="bad", filename="b.yaml")
    run = run_paths([tmp_path])
    assert [r.suite for r in run.results] == ["good"]
    assert list(run.broken) == [str(tmp_path / "b.yaml")]


def test_suites_before_a_yaml_error_in_their_file_still_run(tmp_path: Path) -> None:
    """As `check` decides the documents before a syntax error: the suite above it runs, and the
    file is a bad suite naming the error's line."""
    file = suite(tmp_path, case("allowed: true\n"), name="good")
    with file.open("a") as out:
        out.write("---\nspec: [unclosed\n")
    run = run_paths([file])
    assert [r.suite for r in run.results] == ["good"] and run.results[0].passed
    assert run.exit_code == EXIT_BAD_SUITE
    (problem,) = run.broken[str(file)]
    assert problem.line is not None and problem.line > 20


def test_subfolders_hold_inputs_not_suites(tmp_path: Path) -> None:
    (tmp_path / "manifests").mkdir()
    (tmp_path / "manifests" / "pod.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n")
    suite(tmp_path, case("allowed: true\n"))
    assert run_paths([tmp_path]).exit_code == EXIT_PASSED


def test_junit_counts_and_failure_details(tmp_path: Path) -> None:
    suite(
        tmp_path, case("allowed: true\n", name="ok") + case("allowed: false\n", name="bad"), filename="a.yaml"
    )
    suite(tmp_path, case("allowed: maybe\n"), name="broken", filename="b.yaml")
    run = run_paths([tmp_path])
    root = junit_xml(run).getroot()
    assert root is not None
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("3", "1", "1")
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert suites["s"].get("tests") == "2" and suites["s"].get("failures") == "1"
    failure = suites["s"].find("testcase[@name='bad [Pod/vllm]']/failure")
    assert failure is not None and "allowed" in (failure.get("message") or "")
    error = suites[str(tmp_path / "b.yaml")].find("testcase/error")
    assert error is not None and "spec.cases[0].expect.allowed" in (error.text or "")


def test_cli_exit_codes_and_junit_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = suite(tmp_path, case("allowed: true\n"), filename="good.yaml")
    bad = suite(tmp_path, case("allowed: false\n"), filename="bad.yaml")
    junit = tmp_path / "out" / "junit.xml"
    junit.parent.mkdir()
    assert main(["test", str(good)]) == 0
    assert main(["test", str(bad), "--junit", str(junit)]) == 1
    output = capsys.readouterr().out
    assert "FAIL" in output and "got: allowed" in output
    assert ET.parse(junit).getroot().get("failures") == "1"
    assert main(["test", str(tmp_path / "missing")]) == 2
    assert main(["test", str(good), "--junit", str(tmp_path / "no-dir" / "x.xml")]) == 2


def test_junit_is_xml_whatever_characters_the_names_hold(tmp_path: Path) -> None:
    """A case named `"\\e[31m..."` and a pod named with control characters (YAML escapes) were
    written as they are: XML cannot hold them, and a CI's parser refused the whole file."""
    body = VLLM.replace("{name: vllm}", '{name: "vllm\\x01\\e]0;t\\a"}')
    path = suite(tmp_path, case("allowed: false\n", body=body, name='"red\\e[31m\\x00"'))
    junit = tmp_path / "junit.xml"
    assert main(["test", str(path), "--junit", str(junit)]) == 1
    (testcase,) = ET.parse(junit).getroot().iter("testcase")
    assert testcase.get("name") == "red\\x1b[31m\\x00 [Pod/vllm\\x01\\x1b]0;t\\x07]"
    assert testcase.find("failure") is not None


def test_the_table_shows_control_characters_in_names_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A case or pod named with an ESC or a carriage return was printed as it is: a suite could
    retitle or recolour a CI terminal, or hide a row of the table (found by QA)."""
    body = VLLM.replace("{name: vllm}", '{name: "vllm\\e]0;t\\a"}')
    path = suite(tmp_path, case("allowed: false\n", body=body, name='"red\\e[31m\\r"'))
    assert main(["test", str(path)]) == 1
    lines = capsys.readouterr().out.split("\n")
    assert lines[1].split() == ["s", "red\\x1b[31m\\r", "Pod/vllm\\x1b]0;t\\x07", "FAIL"], lines
    assert lines[0].index("RESULT") == lines[1].index("FAIL"), "the columns line up"
    assert not any(c in line for line in lines for c in "\x1b\x07\r"), lines


def test_an_input_file_that_is_a_symlink_loop_is_named_as_one(tmp_path: Path) -> None:
    """It was said to be no such file (found by QA), where lint names the loop."""
    (tmp_path / "pod.yaml").symlink_to("pod.yaml")
    path = suite(tmp_path, "- name: c\n  inputFile: pod.yaml\n  expect: {allowed: true}\n")
    run = run_paths([path])
    assert run.exit_code == EXIT_BAD_SUITE
    [problem] = run.problems
    assert problem.path.endswith("inputFile") and "Too many levels of symbolic links" in problem.message


def test_a_bad_suite_inventory_is_reported_once_for_all_its_cases(tmp_path: Path) -> None:
    text = HEADER.format(name="s").replace(
        str(ROOT / "examples" / "inventories" / "a100-mixed.yaml"), "nope.yaml"
    )
    file = tmp_path / "suite.yaml"
    cases = case("allowed: true\n", name="a") + case("allowed: true\n", name="b")
    file.write_text(text + textwrap.indent(cases, "    "))
    run = run_paths([file])
    assert run.exit_code == EXIT_BAD_SUITE
    assert [p.path for p in run.problems] == ["spec.inventory"]


def test_a_folder_without_suites_is_bad_input_not_a_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`0 passed ... in 0 suite(s)` and exit 0 let a mistyped CI path pass with nothing tested."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "notes.txt").write_text("not a suite\n", encoding="utf-8")
    run = run_paths([tmp_path / "tests"])
    assert run.exit_code == EXIT_BAD_SUITE
    [problem] = run.problems
    assert problem.source == str(tmp_path / "tests") and "no test suites found" in problem.message
    assert main(["test", str(tmp_path / "tests")]) == EXIT_BAD_SUITE
    assert "no test suites found" in capsys.readouterr().out


def test_a_suite_symlinked_to_nothing_in_a_folder_is_a_bad_suite_not_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The folder's other suites passed and the run exited 0 with it untested, where lint and
    check call a dangling symlink an error."""
    suite(tmp_path, case("allowed: true\n"))
    gone = tmp_path / "zz.yaml"
    gone.symlink_to(tmp_path / "nowhere.yaml")
    run = run_paths([tmp_path])
    assert run.exit_code == EXIT_BAD_SUITE
    assert [(p.source, p.path) for p in run.problems] == [(str(gone), "")]
    assert [r.passed for r in run.results] == [True]
    assert main(["test", str(tmp_path)]) == EXIT_BAD_SUITE
    assert f"{gone}: (document): no such file or directory" in capsys.readouterr().out


def test_a_folders_suites_are_its_yaml_and_yml_files_in_any_case_not_hidden(tmp_path: Path) -> None:
    """As `test --help` and the README say: `.YAML` too, as the catalog reads it (it was left out
    without a word); not `.json` ones, nor hidden ones, nor its subfolders' (inputs)."""
    for name in ("a.yaml", "b.yml", "C.YAML", "d.json", ".e.yaml", "inputs/f.yaml"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("kind: TemplateTestSuite\n", encoding="utf-8")
    files, problems = suite_files([tmp_path])
    assert (files, problems) == ([tmp_path / "C.YAML", tmp_path / "a.yaml", tmp_path / "b.yml"], [])


def test_an_editors_lock_file_beside_the_suites_does_not_fail_the_run(tmp_path: Path) -> None:
    """Emacs keeps `.#name.yaml`, a symlink to nowhere, while the suite is open: it was read as
    a suite whose target is gone, and every run failed with exit 2 until the editor closed it."""
    suite(tmp_path, case("allowed: true\n"))
    (tmp_path / ".#suite.yaml").symlink_to("someone@host.1234:1700000000")
    run = run_paths([tmp_path])
    assert (run.exit_code, run.problems, [r.passed for r in run.results]) == (0, [], [True])
