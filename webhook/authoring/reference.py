"""Generate docs/reference.md from the JSON Schemas: every field with its type, default, description
and an example. tools/gen_reference.py writes it; a test regenerates it and compares."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

Schema = Mapping[str, Any]
SOURCES = (
    ("webhook.catalog", "template.v1.json"),
    ("webhook.catalog", "policy.v1.json"),
    ("webhook.authoring", "suite.v1.json"),
)
MAX_EXAMPLE = 90
MISSING_EXAMPLE = "<no example in the schema>"
HEADER = """# Template and policy reference

Generated from the JSON Schemas in `webhook/catalog/schemas/` and `webhook/authoring/schemas/`
by `python tools/gen_reference.py`; do not edit by hand (a test checks it is in sync).
How matching and slice choice work, and how to try a change: [authoring.md](authoring.md).

A field written `a.b[]` is an item of the list `a.b`; `a.<key>` is any key of the map `a`.
"""


class _NoAliases(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


@dataclass(frozen=True)
class FieldDoc:
    path: str
    type: str
    required: bool
    default: str
    description: str
    example: str


def load_schemas() -> list[dict[str, Any]]:
    return [
        json.loads(resources.files(pkg).joinpath("schemas", name).read_text("utf-8")) for pkg, name in SOURCES
    ]


def render_reference(schemas: list[dict[str, Any]] | None = None) -> str:
    parts = [HEADER]
    for schema in schemas if schemas is not None else load_schemas():
        parts.append(_section(schema))
    return "\n".join(parts).rstrip() + "\n"


def fields(schema: Schema) -> list[FieldDoc]:
    """Every field of the schema, depth first, in the schema's order."""
    return list(_walk(schema, _resolve(schema, schema), "", True, None))


def _section(schema: Schema) -> str:
    kind = _resolve(schema, schema["properties"]["kind"]).get("const", "")
    lines = [f"## {kind}", "", str(schema.get("description", "")), ""]
    lines += [f"Schema: `{schema.get('$id', '')}`", "", "```yaml"]
    lines += yaml.dump(
        example_value(schema, schema), Dumper=_NoAliases, sort_keys=False, width=100
    ).splitlines()
    lines += [
        "```",
        "",
        "| Field | Type | Required | Default | Description | Example |",
        "|---|---|---|---|---|---|",
    ]
    for doc in fields(schema):
        cells = (
            f"`{doc.path}`",
            doc.type,
            "yes" if doc.required else "",
            doc.default,
            doc.description,
            doc.example,
        )
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    named = _named_patterns(schema)
    if named:
        lines += ["", "Named value types:", ""]
        lines += [f"- {name}: {text}" for name, text in named]
    return "\n".join(lines) + "\n"


def _walk(root: Schema, node: Schema, path: str, required: bool, inherited: Any) -> Iterator[FieldDoc]:
    """Fields under `node`; `inherited` is the parent's example value for this field, if any."""
    example = example_value(root, node, inherited)
    if path:
        yield _doc(root, node, path, required, example)
    children = _children(root, node)
    needed = set(children.get("required", ()))
    for name, child in (children.get("properties") or {}).items():
        below = example.get(name) if isinstance(example, Mapping) else None
        yield from _walk(
            root, _resolve(root, child), f"{path}.{name}" if path else name, name in needed, below
        )
    items = node.get("items") if "items" in node else children.get("items")
    if isinstance(items, Mapping) and _has_fields(root, _resolve(root, items)):
        first = example[0] if isinstance(example, list) and example else None
        yield from _walk(root, _resolve(root, items), f"{path}[]", False, first)


def _children(root: Schema, node: Schema) -> Schema:
    """Where a node's sub-fields are: itself, or the object branch of an array-or-object if/then/else."""
    if "if" in node and "else" in node:
        return _resolve(root, node["else"])
    return node


def _has_fields(root: Schema, node: Schema) -> bool:
    return bool(_children(root, node).get("properties"))


def _doc(root: Schema, node: Schema, path: str, required: bool, value: Any) -> FieldDoc:
    default = f"`{_flow(node['default'])}`" if "default" in node else ""
    example = _flow(value)
    return FieldDoc(
        path=path,
        type=type_text(root, node),
        required=required,
        default=default,
        description=str(node.get("description", "")),
        example=_example_cell(example, _has_fields(root, node)),
    )


def _example_cell(example: str, has_fields: bool) -> str:
    if len(example) <= MAX_EXAMPLE:
        return f"`{example}`"
    return "see the fields below" if has_fields else f"`{example[: MAX_EXAMPLE - 1]}…`"


def type_text(root: Schema, node: Schema) -> str:
    if "const" in node:
        return f"`{_flow(node['const'])}`"
    if "enum" in node:
        return "one of " + ", ".join(f"`{_flow(v)}`" for v in node["enum"])
    if node.get("if") == {"type": "array"} and "else" in node:  # one of a thing, or a list of them
        return f"{type_text(root, _resolve(root, node['else']))}, or a list of them"
    kinds = node.get("type", "any")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    words = [_type_word(root, node, kind) for kind in kinds]
    return " or ".join(words) + _constraints(node)


def _type_word(root: Schema, node: Schema, kind: str) -> str:
    if kind == "array":
        items = node.get("items")
        inner = type_text(root, _resolve(root, items)) if isinstance(items, Mapping) else "any"
        return f"list of {inner}"
    extra = node.get("additionalProperties")
    if kind == "object" and isinstance(extra, Mapping) and not node.get("properties"):
        return f"map of {type_text(root, _resolve(root, extra))}"
    return {"null": "null", "integer": "integer", "number": "number", "boolean": "boolean"}.get(kind, kind)


def _constraints(node: Schema) -> str:
    notes = []
    for key, word in (("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤")):
        if key in node:
            notes.append(f"{word} {node[key]}")
    if "minItems" in node:
        notes.append(f"at least {node['minItems']} item(s)")
    if node.get("uniqueItems"):
        notes.append("no repeats")
    if "pattern" in node:
        notes.append(f"a {node['x-def']}" if "x-def" in node else f"pattern `{node['pattern']}`")
    return f" ({', '.join(notes)})" if notes else ""


def example_value(root: Schema, node: Schema, inherited: Any = None) -> Any:
    """The field's value in its parent's example (so one coherent document shows through), else
    its own example, const, default or first enum value, else one built from its sub-fields."""
    node = _resolve(root, node)
    if inherited is not None:
        return inherited
    if node.get("examples"):
        return node["examples"][0]
    for key in ("const", "default"):
        if key in node:
            return node[key]
    if node.get("enum"):
        return node["enum"][0]
    children = _children(root, node)
    if children.get("properties"):
        return {
            name: example_value(root, child)
            for name, child in children["properties"].items()
            if _wanted_in_example(root, name, child, children)
        }
    items = node.get("items")
    if isinstance(items, Mapping):
        return [example_value(root, items)]
    return _placeholder(node)


def _wanted_in_example(root: Schema, name: str, child: Schema, parent: Schema) -> bool:
    """Required fields, and optional ones with an example of their own (not the exclusive twins)."""
    resolved = _resolve(root, child)
    if name in parent.get("required", ()):
        return True
    return bool(resolved.get("examples")) and name not in ("inputFile", "mutatedFile", "codesExclude")


def _placeholder(node: Schema) -> Any:
    kinds = node.get("type", "string")
    kind = kinds[0] if isinstance(kinds, list) else kinds
    return MISSING_EXAMPLE if kind != "object" else {}


def _resolve(root: Schema, node: Any) -> Schema:
    """Follow a local $ref (#/$defs/name); the referring node's own keys win (description, examples)."""
    if not isinstance(node, Mapping):
        return {}
    ref = node.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return node
    target: Any = root
    for part in ref[2:].split("/"):
        target = target[part]
    own = {k: v for k, v in node.items() if k != "$ref"}
    return {**_resolve(root, target), "x-def": ref.rsplit("/", 1)[-1], **own}


def _named_patterns(root: Schema) -> list[tuple[str, str]]:
    """The $defs that constrain a string by pattern, listed once under the table."""
    named = []
    for name, node in (root.get("$defs") or {}).items():
        if "pattern" in node:
            text = f"{node.get('description', '')} Pattern: `{node['pattern']}`".strip()
            named.append((f"`{name}`", text))
    return named


def _flow(value: Any) -> str:
    if isinstance(value, str):
        return value if value and not _needs_quotes(value) else json.dumps(value)
    return (
        str(yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=10_000))
        .strip()
        .removesuffix("\n...")
        .removesuffix("...")
        .strip()
    )


def _needs_quotes(value: str) -> bool:
    return value.strip() != value or value in ("true", "false", "null", "~") or value[0] in "{[*&!|>'\"%@`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
