"""Catalog lint: every problem of every file at once, each with file, line and field path."""

from __future__ import annotations

from pathlib import Path

import pytest

from webhook.catalog import CatalogError, lint_paths, load_catalog
from webhook.catalog.loader import Problem

HEADER = "apiVersion: gpu.aethervirt.io/v1\n"


def template(name: str, body: str) -> str:
    return f"{HEADER}kind: WorkloadTemplate\nmetadata:\n  name: {name}\nspec:\n{body}"


def policy(name: str, body: str) -> str:
    return f"{HEADER}kind: GpuPolicy\nmetadata:\n  name: {name}\nspec:\n{body}"


VALID = "  kind: batch\n  accelerator:\n    gpu: optional\n"
SERVING = (
    '  kind: serving\n  priority: 100\n  match:\n    images: ["vllm/*"]\n  accelerator:\n    gpu: required\n'
)
BROKEN = {
    # (file, line, field path) each problem must be reported at
    "templates/unknown-field.yaml": template("unknown-field", VALID + "  inject:\n    colour: blue\n"),
    "templates/wrong-type.yaml": template(
        "wrong-type", "  kind: batch\n  priority: high\n  accelerator:\n    gpu: optional\n"
    ),
    "templates/duplicate-key.yaml": template("duplicate-key", VALID + "  accelerator:\n    gpu: required\n"),
    "templates/cpu.yaml": template("cpu", "  kind: cpu-only\n  accelerator:\n    gpu: forbidden\n"),
    "templates/cpu-again.yaml": template("cpu", "  kind: cpu-only\n  accelerator:\n    gpu: forbidden\n"),
    "templates/serving.yaml": template("serving", SERVING),
    "templates/sglang.yaml": template("sglang", SERVING.replace('"vllm/*"', '"vllm/vllm-openai*"')),
    "templates/bad-quantity.yaml": template(
        "bad-quantity", "  kind: batch\n  accelerator:\n    gpu: required\n    gpuMemory: lots\n"
    ),
    "templates/bad-bound.yaml": template(
        "bad-bound",
        "  kind: batch\n  accelerator:\n    gpu: required\n    gpuMemory: 8Gi\n"
        "    podOverrides:\n      gpuMemory:\n        min: plenty\n",
    ),
    "templates/needless.yaml": template(
        "needless", "  kind: batch\n  accelerator:\n    gpu: required\n    mig: preferred\n"
    ),
    "policies/team.yaml": policy("team", '  namespaces: ["team-*"]\n  templates:\n    default: nowhere\n'),
    "policies/team-two.yaml": policy("team-two", '  namespaces: ["team-*", "x"]\n'),
    "policies/prod.yaml": policy(
        "prod", '  namespaces: ["prod-*"]\n  templates:\n    allowed: [serving, ghost]\n    default: cpu\n'
    ),
    "policies/not-a-kind.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
}
EXPECTED = {
    ("templates/unknown-field.yaml", 10, "spec.inject.colour"),
    ("templates/wrong-type.yaml", 7, "spec.priority"),
    ("templates/duplicate-key.yaml", 9, "spec.accelerator"),
    ("templates/cpu.yaml", 4, "metadata.name"),  # cpu-again.yaml is read first
    ("templates/sglang.yaml", 9, "spec.match"),
    ("templates/bad-quantity.yaml", 9, "spec.accelerator.gpuMemory"),
    ("templates/bad-bound.yaml", 12, "spec.accelerator.podOverrides.gpuMemory.min"),
    ("templates/needless.yaml", 9, "spec.accelerator.mig"),
    ("policies/team.yaml", 6, "spec.namespaces"),  # team-two.yaml is read first
    ("policies/team.yaml", 8, "spec.templates.default"),
    ("policies/prod.yaml", 8, "spec.templates.allowed"),
    ("policies/prod.yaml", 9, "spec.templates.default"),
    ("policies/not-a-kind.yaml", 2, "kind"),
}


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


def located(root: Path, problems: list[Problem]) -> set[tuple[str, int | None, str]]:
    return {(str(Path(p.source).relative_to(root)), p.line, p.path) for p in problems}


def test_every_problem_is_reported_at_once_with_file_line_and_path(tmp_path: Path) -> None:
    write(tmp_path, BROKEN)
    problems = lint_paths([tmp_path / "templates", tmp_path / "policies"])
    assert located(tmp_path, problems) == EXPECTED
    assert all(p.message for p in problems)


def test_loading_raises_with_the_same_problems(tmp_path: Path) -> None:
    write(tmp_path, BROKEN)
    with pytest.raises(CatalogError) as caught:
        load_catalog([tmp_path / "templates", tmp_path / "policies"])
    assert located(tmp_path, list(caught.value.problems)) == EXPECTED
    assert all(str(tmp_path) in line for line in str(caught.value).splitlines())


def test_a_file_that_is_not_yaml_is_one_problem_with_its_line(tmp_path: Path) -> None:
    write(tmp_path, {"templates/ok.yaml": template("ok", VALID), "templates/bad.yaml": "a: [1, 2\nb: 3\n"})
    problems = lint_paths([tmp_path / "templates"])
    assert [(Path(p.source).name, p.line is not None) for p in problems] == [("bad.yaml", True)]


def test_a_missing_folder_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    problems = lint_paths([tmp_path / "nowhere"])
    assert [(Path(p.source).name, p.path) for p in problems] == [("nowhere", "")]


def test_a_clean_catalog_has_no_problems_and_loads(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "templates/serving.yaml": template("serving", SERVING),
            "policies/all.yaml": policy("all", '  namespaces: ["*"]\n'),
        },
    )
    assert lint_paths([tmp_path]) == []
    catalog = load_catalog([tmp_path])
    assert set(catalog.templates) == {"serving"} and [p.name for p in catalog.policies] == ["all"]


def test_problem_text_names_file_line_and_path() -> None:
    problem = Problem("templates/a.yaml", 12, "spec.priority", "'high' is not of type 'integer'")
    assert str(problem).startswith("templates/a.yaml:12: spec.priority: ")


MANY = template(
    "many",
    "  kind: batch\n"  # 6
    "  colour: blue\n"  # 7
    "  priority: high\n"  # 8
    "  accelerator:\n"  # 9
    "    gpu: required\n"  # 10
    "    gpuMemory: lots\n"  # 11
    "    mig: preferred\n"  # 12
    "    podOverrides:\n"  # 13
    "      gpuMemory: {min: plenty}\n"  # 14
    "  inject:\n"  # 15
    "    resources:\n"  # 16
    "      perGpu: {requests: {cpu: abc}, limits: {memory: 2x}}\n",  # 17
)


def test_schema_errors_do_not_hide_the_other_problems_of_the_file(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "templates/many.yaml": MANY,
            "policies/p.yaml": policy(
                "p", '  namespaces: ["x"]\n  templates: {allowed: [many], default: many}\n'
            ),
        },
    )
    problems = lint_paths([tmp_path])
    assert located(tmp_path, problems) == {
        ("templates/many.yaml", 7, "spec.colour"),
        ("templates/many.yaml", 8, "spec.priority"),
        ("templates/many.yaml", 11, "spec.accelerator.gpuMemory"),
        ("templates/many.yaml", 14, "spec.accelerator.podOverrides.gpuMemory.min"),
        ("templates/many.yaml", 17, "spec.inject.resources.perGpu.requests.cpu"),
        ("templates/many.yaml", 17, "spec.inject.resources.perGpu.limits.memory"),
    }  # no 'mig: preferred needs gpuMemory' (gpuMemory is reported) and no 'no template many'


def test_a_missing_required_field_hides_nothing_and_cascades_nothing(tmp_path: Path) -> None:
    body = "  kind: batch\n  accelerator:\n    podOverrides:\n      gpuMemory: {min: plenty}\n"
    write(tmp_path, {"templates/t.yaml": template("t", body)})
    problems = lint_paths([tmp_path])
    assert located(tmp_path, problems) == {
        ("templates/t.yaml", 8, "spec.accelerator"),  # gpu is required
        ("templates/t.yaml", 9, "spec.accelerator.podOverrides.gpuMemory.min"),
    }


def test_semantic_problems_of_one_file_are_all_reported(tmp_path: Path) -> None:
    body = (
        "  kind: cpu-only\n  accelerator:\n    gpu: forbidden\n    devices: {min: 3, max: 2}\n"
        "    podOverrides:\n      gpuMemory: {min: 8Gi, max: 4Gi}\n      computeShare: {max: 2}\n"
    )
    write(tmp_path, {"templates/t.yaml": template("t", body)})
    paths = {p.path for p in lint_paths([tmp_path])}
    assert paths == {
        "spec.accelerator.devices",
        "spec.accelerator.podOverrides.gpuMemory",
        "spec.accelerator.podOverrides.computeShare.max",
    }  # the CPU-only check does not judge devices again


def test_a_yaml_error_in_a_later_document_keeps_the_earlier_ones(tmp_path: Path) -> None:
    text = template("first", "  kind: batch\n  priority: high\n  accelerator:\n    gpu: optional\n")
    write(tmp_path, {"templates/two.yaml": text + "---\na: [1, 2\n"})
    problems = lint_paths([tmp_path])
    assert {(p.path, p.line) for p in problems} == {("spec.priority", 7), ("", 12)}


def test_merge_keys_are_expanded_and_their_values_checked_where_they_land(tmp_path: Path) -> None:
    body = (
        "  kind: batch\n  accelerator:\n    gpu: optional\n  inject:\n"  # 6-9
        "    labels: &labels\n      team: a\n      tier: bad value\n"  # 10-12
        "    annotations:\n      <<: *labels\n      team: b\n"  # 13-15
    )
    write(tmp_path, {"templates/t.yaml": template("t", body)})
    problems = lint_paths([tmp_path])
    # merged into annotations, `tier: bad value` is fine (annotation values are free text); as a
    # label it is not. `team: b` overriding a merged key is no duplicate
    assert {(p.line, p.path) for p in problems} == {
        (12, "spec.inject.labels.tier"),
    }
    ok = body.replace("bad value", "good")
    write(tmp_path, {"templates/t.yaml": template("t", ok)})
    catalog = load_catalog([tmp_path])
    assert catalog.templates["t"].inject.annotations == {"team": "b", "tier": "good"}


def test_two_equal_keys_of_a_mapping_with_a_merge_are_still_a_duplicate(tmp_path: Path) -> None:
    body = (
        "  kind: batch\n  accelerator: &acc\n    gpu: optional\n  inject:\n"  # 6-9
        "    labels:\n      <<: {a: x}\n      b: y\n      b: z\n"  # 10-13
    )
    write(tmp_path, {"templates/t.yaml": template("t", body)})
    assert {(p.line, p.path) for p in lint_paths([tmp_path])} == {(13, "spec.inject.labels.b")}


def test_text_that_is_not_utf8_is_located_by_line_and_character_column() -> None:
    from webhook.yamlio import YamlError, decode_text

    assert decode_text("\ufeffa: é\n".encode(), "f.yaml") == "a: é\n"  # a UTF-8 byte-order mark is dropped
    with pytest.raises(YamlError) as caught:
        decode_text("a: 1\nb: é".encode() + b"\xff\n", "f.yaml")  # é is one character, two bytes
    assert (caught.value.line, str(caught.value).split(": ")[0]) == (2, "f.yaml:2:5")


def test_a_byte_that_is_not_utf8_after_a_byte_order_mark_is_located_in_the_file() -> None:
    """The offset counted from after the mark named the byte three before the bad one."""
    from webhook.yamlio import YamlError, decode_text

    text = b'\xef\xbb\xbfa: 1\nb: "caf\xe9"\n'
    with pytest.raises(YamlError) as caught:
        decode_text(text, "f.yaml")
    assert (caught.value.line, str(caught.value).split(": ")[0]) == (2, "f.yaml:2:8")
    assert "byte 0xe9 at column 8, offset 15 " in caught.value.problem
    with pytest.raises(YamlError) as caught:  # on the mark's line: the mark is no column
        decode_text(b"\xef\xbb\xbfa: \xff\n", "f.yaml")
    assert str(caught.value).split(": ")[0] == "f.yaml:1:4"
    assert "byte 0xff at column 4, offset 6 " in caught.value.problem


@pytest.mark.parametrize("text", ["", "\n\n", "# nothing yet\n", "---\n", "---\n# c\n---\n", "null\n"])
def test_a_file_with_no_document_is_a_problem_at_its_first_line(tmp_path: Path, text: str) -> None:
    """It was skipped: emptied, a template vanished from the catalog with a successful load."""
    write(tmp_path, {"templates/a.yaml": template("a", VALID), "templates/empty.yaml": text})
    (problem,) = lint_paths([tmp_path / "templates"])
    assert (problem.source, problem.line, problem.path) == (str(tmp_path / "templates" / "empty.yaml"), 1, "")


def test_empty_documents_between_real_ones_are_still_skipped(tmp_path: Path) -> None:
    text = "---\n" + template("a", VALID) + "---\n---\n# c\n---\n" + template("b", VALID) + "---\n"
    write(tmp_path, {"templates/ab.yaml": text})
    assert set(load_catalog([tmp_path / "templates"]).templates) == {"a", "b"}


def test_a_template_that_is_not_utf8_is_one_problem_at_its_line(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_bytes(template("t", VALID).replace("name: t", "name: té").encode("latin-1"))
    (tmp_path / "ok.yaml").write_text(
        template("ok", "  kind: batch\n  priority: x\n  accelerator:\n    gpu: optional\n")
    )
    assert {(Path(p.source).name, p.line, p.path) for p in lint_paths([tmp_path])} == {
        ("t.yaml", 4, ""),
        ("ok.yaml", 7, "spec.priority"),
    }


def test_a_kind_that_is_not_a_string_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    write(tmp_path, {"t.yaml": "apiVersion: gpu.aethervirt.io/v1\nkind: {}\nmetadata: {name: t}\n"})
    assert {(p.line, p.path) for p in lint_paths([tmp_path])} == {(2, "kind")}


@pytest.mark.parametrize(
    ("text", "what"),
    [("- a\n- b\n", "a list"), ("just text\n", "a string"), ("---\n5\n", "a number")],
)
def test_a_document_that_is_not_a_mapping_is_said_to_be_so(tmp_path: Path, text: str, what: str) -> None:
    """It said `kind: expected one of [...], got None`, as if the kind were the problem."""
    write(tmp_path, {"t.yaml": text})
    problems = lint_paths([tmp_path])
    assert [(p.line, p.path) for p in problems] == [(text.count("---") + 1, "")]
    assert problems[0].message.startswith(f"the document is {what}, not a mapping (an object")


def test_a_missing_kind_is_said_to_be_missing(tmp_path: Path) -> None:
    write(tmp_path, {"t.yaml": "apiVersion: gpu.aethervirt.io/v1\nmetadata: {name: t}\n"})
    [problem] = lint_paths([tmp_path])
    assert problem.path == "kind" and problem.message.endswith(", it is missing")


def laughs(levels: int) -> str:
    """A template whose name is `levels` nested aliases of nine: 9**levels strings from ~400 bytes."""
    text = (
        "apiVersion: gpu.aethervirt.io/v1\nkind: WorkloadTemplate\n"
        "x0: &l0 [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n"
    )
    for level in range(1, levels):
        text += f"x{level}: &l{level} [" + ",".join([f"*l{level - 1}"] * 9) + "]\n"
    return text + f"metadata: {{name: *l{levels - 1}}}\nspec: {{kind: batch}}\n"


def test_a_document_whose_aliases_expand_it_past_the_budget_is_one_problem_at_a_line(tmp_path: Path) -> None:
    """Nine levels made lint print 2 GB in 44 s; the document is refused before it is expanded."""
    write(tmp_path, {"t.yaml": laughs(9)})
    (problem,) = lint_paths([tmp_path])
    assert problem.line is not None and problem.path == ""
    assert "aliases expand to" in problem.message and len(str(problem)) < 400


def test_a_value_that_holds_itself_is_one_problem(tmp_path: Path) -> None:
    write(tmp_path, {"t.yaml": template("t", VALID) + "  x: &self {a: [*self]}\n"})
    (problem,) = lint_paths([tmp_path])
    assert "holds it" in problem.message and problem.line == 9


def test_a_value_quoted_in_a_message_is_cut_to_an_excerpt(tmp_path: Path) -> None:
    """Four levels (6,561 strings) pass the alias budget; the message still quotes ~80 characters."""
    write(tmp_path, {"t.yaml": laughs(4)})
    (named,) = [p for p in lint_paths([tmp_path]) if p.path == "metadata.name"]
    assert named.message.startswith('[[[["lol", ') and named.message.endswith(
        "... (cut) is not of type 'string'"
    )
    assert len(named.message) < 150


def test_excerpts_read_only_what_they_show() -> None:
    from webhook.yamlio import excerpt

    assert excerpt({"a": [1, "x", True, None, 0.5]}) == '{"a": [1, "x", true, null, 0.5]}'
    nested: list[object] = ["lol"] * 9
    for _ in range(12):  # 9**12 strings: read in full this would never end
        nested = [nested] * 9
    shown = excerpt(nested)
    assert shown.endswith("... (cut)") and len(shown) == 80 + len("... (cut)")
    assert excerpt("x" * 10_000_000).startswith('"xxx') and len(excerpt("x" * 10_000_000)) < 100


@pytest.mark.parametrize(
    ("value", "shown", "read_as"),
    [("true", "true", "a boolean"), ("yes", "true", "a boolean"), ("1.10", "1.1", "a number")],
)
def test_a_label_value_yaml_reads_as_no_text_is_shown_as_written_and_told_to_be_quoted(
    tmp_path: Path, value: str, shown: str, read_as: str
) -> None:
    match = f"  match:\n    podSelector:\n      matchLabels:\n        team: {value}\n"
    write(tmp_path, {"t.yaml": template("t", VALID + match)})
    (problem,) = lint_paths([tmp_path])
    assert problem.path == "spec.match.podSelector.matchLabels.team"
    assert problem.message.startswith(f"{shown} is not of type 'string'")
    assert f"YAML read it as {read_as}: write it in quotes" in problem.message


def test_an_enum_message_shows_yaml_values_not_python_ones(tmp_path: Path) -> None:
    write(tmp_path, {"t.yaml": template("t", VALID.replace("gpu: optional", "gpu: null"))})
    (problem,) = lint_paths([tmp_path])
    assert (problem.path, problem.message) == (
        "spec.accelerator.gpu",
        'null is not one of ["required", "optional", "forbidden"]',
    )


def test_an_enum_message_lists_every_allowed_value_uncut(tmp_path: Path) -> None:
    """The allowed values are the schema's, not the author's: cut like a quoted value, a
    misspelt `kind` was told neither `notebook` nor the kinds after it."""
    write(tmp_path, {"t.yaml": template("t", VALID.replace("kind: batch", "kind: servng"))})
    (problem,) = lint_paths([tmp_path])
    assert problem.path == "spec.kind"
    assert "(cut)" not in problem.message
    assert problem.message.endswith('"notebook", "batch", "cpu-only"]')


@pytest.mark.parametrize(
    ("body", "path", "known"),
    [
        (
            "    podOverrides:\n      gpuCompute: {min: 0.1, max: 1}\n",
            "spec.accelerator.podOverrides.gpuCompute",
            "computeShare, gpuMemory",
        ),
        (
            "    gpuMemroy: 9Gi\n",
            "spec.accelerator.gpuMemroy",
            "computeShare, devices, gpu, gpuMemory, mig, podOverrides",
        ),
    ],
)
def test_an_unknown_field_names_the_fields_known_there(
    tmp_path: Path, body: str, path: str, known: str
) -> None:
    """`unknown field 'gpuCompute'` alone left the author to find `computeShare` in the reference."""
    write(tmp_path, {"t.yaml": template("t", VALID + body)})
    (problem,) = lint_paths([tmp_path])
    assert problem.path == path
    assert problem.message == f"unknown field {path.rsplit('.', 1)[1]!r}; known here: {known}"


@pytest.mark.parametrize("price", ['"2.5"', '"1e3"'])
def test_a_quoted_price_says_to_write_it_without_quotes(tmp_path: Path, price: str) -> None:
    body = f'  namespaces: ["x"]\n  prices:\n    NVIDIA-H100-80GB-HBM3: {price}\n'
    write(tmp_path, {"policies/p.yaml": policy("p", body)})
    (problem,) = lint_paths([tmp_path])
    assert problem.path == "spec.prices.NVIDIA-H100-80GB-HBM3"
    assert problem.message.endswith("is not of type 'number'; write it without quotes for a number")


@pytest.mark.parametrize(("price", "problem"), [("1e3", None), ("2.5e+1", None), ("1:30", "is not of type")])
def test_prices_are_read_as_kubectl_reads_numbers(tmp_path: Path, price: str, problem: str | None) -> None:
    """YAML 1.2's `1e3` is a number (PyYAML's YAML 1.1 made it text), `1:30` is text (not 90)."""
    body = f'  namespaces: ["x"]\n  prices:\n    NVIDIA-H100-80GB-HBM3: {price}\n'
    write(tmp_path, {"policies/p.yaml": policy("p", body)})
    found = [p.message for p in lint_paths([tmp_path])]
    assert found == [] if problem is None else (len(found) == 1 and problem in found[0])


@pytest.mark.parametrize("price", [".nan", ".inf", "-.inf"])
def test_a_price_that_is_not_a_finite_number_is_refused(tmp_path: Path, price: str) -> None:
    body = f'  namespaces: ["x"]\n  prices:\n    NVIDIA-H100-80GB-HBM3: {price}\n'
    write(tmp_path, {"policies/p.yaml": policy("p", body)})
    problems = lint_paths([tmp_path])
    assert located(tmp_path, problems) == {("policies/p.yaml", 8, "spec.prices.NVIDIA-H100-80GB-HBM3")}
    assert len(problems) == 1
    assert any(word in problems[0].message for word in ("finite", "minimum", "maximum"))
    with pytest.raises(CatalogError):
        load_catalog([tmp_path])


@pytest.mark.parametrize("price", ["1.0e+308", "1000000.01"])
def test_a_price_whose_costs_would_overflow_is_refused(tmp_path: Path, price: str) -> None:
    """A GPU-hour priced beyond 1000000 (in any currency) would make costs `inf` (`$inf` in text,
    `Infinity` in JSON, which is not JSON)."""
    body = f'  namespaces: ["x"]\n  prices:\n    NVIDIA-H100-80GB-HBM3: {price}\n'
    write(tmp_path, {"policies/p.yaml": policy("p", body)})
    problems = lint_paths([tmp_path])
    assert located(tmp_path, problems) == {("policies/p.yaml", 8, "spec.prices.NVIDIA-H100-80GB-HBM3")}
    with pytest.raises(CatalogError):
        load_catalog([tmp_path])


def test_the_highest_price_loads(tmp_path: Path) -> None:
    body = '  namespaces: ["x"]\n  prices:\n    NVIDIA-H100-80GB-HBM3: 1000000\n'
    write(tmp_path, {"policies/p.yaml": policy("p", body)})
    assert lint_paths([tmp_path]) == []


@pytest.mark.parametrize(
    ("key", "path", "hint"),
    [
        ('"NVIDIA H100 80GB HBM3"', 'spec.prices["NVIDIA H100 80GB HBM3"]', "NVIDIA-H100-80GB-HBM3"),
        ('""', 'spec.prices[""]', "never empty"),
        ("a" * 64, "spec.prices." + "a" * 64, "not a label value"),
    ],
)
def test_a_price_for_a_name_no_product_label_can_hold_is_refused(
    tmp_path: Path, key: str, path: str, hint: str
) -> None:
    """Prices are looked up by the nodes' product labels, which are label values: a key no label
    value can be (nvidia-smi's name, with spaces, as GFD never writes it) prices nothing, and the
    report listed that GPU as unpriced while lint said ok."""
    body = f'  namespaces: ["x"]\n  prices:\n    {key}: 4.9\n'
    write(tmp_path, {"policies/p.yaml": policy("p", body)})
    problems = lint_paths([tmp_path])
    assert located(tmp_path, problems) == {("policies/p.yaml", 8, path)}
    assert hint in problems[0].message
    with pytest.raises(CatalogError):
        load_catalog([tmp_path])


def test_a_template_defined_twice_is_one_problem_not_also_a_tie(tmp_path: Path) -> None:
    """Its second definition is reported as such; a tie with its first would say it again."""
    write(
        tmp_path,
        {"templates/a.yaml": template("serve", SERVING), "templates/b.yaml": template("serve", SERVING)},
    )
    problems = lint_paths([tmp_path / "templates"])
    assert located(tmp_path, problems) == {("templates/b.yaml", 4, "metadata.name")}


def test_an_allowed_profile_no_gpu_has_is_reported_at_its_line_by_lint_and_load(tmp_path: Path) -> None:
    body = '  namespaces: ["*"]\n  mig:\n    allowedProfiles:\n      - 1g.10gb\n      - 3g.4gb\n'
    write(tmp_path, {"policies/p.yaml": policy("p", body)})
    expected = {("policies/p.yaml", 10, "spec.mig.allowedProfiles[1]")}
    assert located(tmp_path, lint_paths([tmp_path])) == expected
    with pytest.raises(CatalogError) as caught:
        load_catalog([tmp_path])
    assert located(tmp_path, list(caught.value.problems)) == expected


@pytest.mark.parametrize(
    ("body", "path", "number"),
    [
        ("    computeShare: 14%\n", "spec.accelerator.computeShare", "0.14 for 14%"),
        (
            "    podOverrides:\n      computeShare: {min: 10%, max: 1}\n",
            "spec.accelerator.podOverrides.computeShare.min",
            "0.1 for 10%",
        ),
    ],
)
def test_a_share_written_as_a_percentage_says_which_number_to_write(
    tmp_path: Path, body: str, path: str, number: str
) -> None:
    """A pod's gpu-compute annotation takes 30%, the README's table says "14% compute": the schema's
    "is not of type 'number'" alone did not say what to write (found by QA)."""
    write(tmp_path, {"t.yaml": template("t", VALID + body)})
    (problem,) = lint_paths([tmp_path])
    assert problem.path == path
    assert problem.message.endswith(f"write a share as a number, {number}")


@pytest.mark.parametrize(
    ("memory", "mig", "refused"),
    [
        ("300Gi", "preferred", True),
        ("259Gi", "preferred", True),  # GB300's 7g.278gb has 265121Mi, under 259Gi
        ("258Gi", "preferred", False),
        ("300Gi", "allowed", False),
        ("300Gi\n    podOverrides:\n      gpuMemory: {min: 8Gi}", "preferred", False),
        ("300Gi\n    podOverrides:\n      gpuMemory: {min: 280Gi}", "preferred", True),
    ],
)
def test_a_preferred_slice_no_mig_profile_holds_is_reported_by_lint_and_load(
    tmp_path: Path, memory: str, mig: str, refused: bool
) -> None:
    """mig: preferred with a gpuMemory no MIG profile of any GPU in the reference table holds: every
    pod was kept on whole GPUs (KeptWholeGpu), or denied under whenNoSliceFits: deny, and lint
    accepted it silently, unless podOverrides lets a pod state a need a slice holds (found by
    review)."""
    body = f"  kind: serving\n  accelerator:\n    gpu: required\n    mig: {mig}\n    gpuMemory: {memory}\n"
    write(tmp_path, {"t.yaml": template("t", body)})
    expected = {("t.yaml", 10, "spec.accelerator.gpuMemory")} if refused else set()
    assert located(tmp_path, lint_paths([tmp_path])) == expected
    if refused:
        with pytest.raises(CatalogError):
            load_catalog([tmp_path])


SCOPED = '  kind: batch\n  match:\n    namespaces: ["team-a", "ml-*"]\n  accelerator:\n    gpu: optional\n'


@pytest.mark.parametrize(
    ("namespaces", "refused"),
    [
        ('["team-b"]', True),
        ('["prod-*", "team-b"]', True),  # no name matches both prod-* and ml-*
        ('["team-*"]', False),  # team-a is one of them
        ('["ml-research"]', False),
        ('["*"]', False),
    ],
)
def test_an_allowed_template_whose_namespaces_admit_none_of_the_policys_is_reported(
    tmp_path: Path, namespaces: str, refused: bool
) -> None:
    """A policy allowing a template whose match.namespaces leave out every namespace it governs:
    the template never applies there (its label is TemplateNotAllowed, its match never holds),
    and lint accepted it silently (found by review)."""
    body = f"  namespaces: {namespaces}\n  templates:\n    allowed: [scoped, cpu]\n"
    write(
        tmp_path,
        {
            "templates/scoped.yaml": template("scoped", SCOPED),
            "templates/cpu.yaml": template("cpu", "  kind: cpu-only\n  accelerator:\n    gpu: forbidden\n"),
            "policies/p.yaml": policy("p", body),
        },
    )
    expected = {("policies/p.yaml", 8, "spec.templates.allowed")} if refused else set()
    assert located(tmp_path, lint_paths([tmp_path])) == expected


def test_a_default_template_outside_its_own_namespaces_is_no_problem(tmp_path: Path) -> None:
    """The policy's default applies to its unlabelled pods whatever the template's scope."""
    body = '  namespaces: ["team-b"]\n  templates:\n    allowed: [scoped]\n    default: scoped\n'
    write(
        tmp_path, {"templates/scoped.yaml": template("scoped", SCOPED), "policies/p.yaml": policy("p", body)}
    )
    assert lint_paths([tmp_path]) == []
