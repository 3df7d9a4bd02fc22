"""docs/reference.md is what the schemas generate, and every field in it is documented."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator

from tests.conftest import ROOT
from webhook.authoring.reference import MISSING_EXAMPLE, fields, load_schemas, render_reference


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
