"""YAML documents with line numbers and duplicate-key detection.

PyYAML silently keeps the last of two equal keys; here that is an error with both lines,
because a template author (or a manifest) that writes `resources:` twice loses half of it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


class YamlError(ValueError):
    """Input that is not valid YAML; the message says file and line."""


@dataclass(frozen=True)
class Document:
    source: str
    index: int
    data: Any
    node: yaml.Node | None

    def line_of(self, path: Sequence[str | int]) -> int | None:
        """The 1-based line of the value at a JSON path, or of its nearest existing parent."""
        node = self.node
        line = node.start_mark.line + 1 if node is not None else None
        for step in path:
            node = _child(node, step)
            if node is None:
                break
            line = node.start_mark.line + 1
        return line


class _StrictLoader(yaml.SafeLoader):
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, str | int | float | bool) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key {key!r} (first at line {seen[key]})",
                    key_node.start_mark,
                )
            if isinstance(key, str | int | float | bool):
                seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep)


def load_documents(text: str, source: str, strict: bool = True) -> list[Document]:
    """Every non-empty document of a YAML stream, with its node tree for line lookups."""
    loader_class = _StrictLoader if strict else yaml.SafeLoader
    documents: list[Document] = []
    try:
        loader = loader_class(text)
        try:
            index = 0
            while loader.check_node():
                node = loader.get_node()
                data = loader.construct_document(node)
                if data is not None:
                    documents.append(Document(source, index, data, node))
                index += 1
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        raise YamlError(_describe(source, exc)) from exc
    return documents


def load_file(path: Path, strict: bool = True) -> list[Document]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise YamlError(f"{path}: cannot read: {exc}") from exc
    return load_documents(text, str(path), strict)


def iter_yaml_files(directory: Path) -> Iterator[Path]:
    for path in sorted(directory.rglob("*")):
        if (
            path.suffix in (".yaml", ".yml")
            and path.is_file()
            and "tests" not in path.relative_to(directory).parts
        ):
            yield path


def _child(node: yaml.Node | None, step: str | int) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if getattr(key_node, "value", None) == str(step):
                found: yaml.Node = value_node
                return found
    if isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value):
        child: yaml.Node = node.value[step]
        return child
    return None


def _describe(source: str, exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark is not None else source
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    return f"{where}: invalid YAML: {problem}" + (f" ({context})" if context else "")
