"""YAML documents with line numbers and duplicate-key detection, read as kubectl reads them.

PyYAML silently keeps the last of two equal keys; here that is an error with both lines,
because a template author (or a manifest) that writes `resources:` twice loses half of it.

Values are what kubectl (sigs.k8s.io/yaml, go-yaml v2) would send the API server, not what
PyYAML's YAML 1.1 makes of them: `2024-01-01` and `1:30` stay text (no dates, no base-60
numbers), numbers are what Go parses (`1e6`, `0X1F`, `08`, `1_e3`), keys are text (`2:` is "2",
`true:` is "true"), and what JSON cannot hold (`!!set`, `!!binary`, a list as a key) is an error
at its line. KubectlDumper writes by the same rules, so what it writes reads back as written.
"""

from __future__ import annotations

import codecs
import datetime
import errno
import json
import math
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml


class YamlError(ValueError):
    """Input that is not valid YAML; the message says file and line."""

    def __init__(
        self,
        message: str,
        source: str = "",
        line: int | None = None,
        problem: str = "",
        documents: Sequence[Document] = (),
    ) -> None:
        super().__init__(message)
        self.source = source
        self.line = line
        self.problem = problem or message
        self.documents = tuple(documents)
        """The documents of the stream read before the error."""


@dataclass(frozen=True)
class Duplicate:
    key: str
    line: int
    first_line: int

    def __str__(self) -> str:
        return f"duplicate key {self.key!r} (first at line {self.first_line}); the last one would win"


@dataclass(frozen=True)
class Document:
    source: str
    index: int
    data: Any
    node: yaml.Node | None
    duplicates: tuple[Duplicate, ...] = ()

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


MERGE_TAG = "tag:yaml.org,2002:merge"
MAX_DEPTH = 200
"""Levels of nesting a document may have (Kubernetes objects have a few dozen at most)."""
_BOOL = r"y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF"
_BOOLS: Final = {word: word in ("y", "yes", "true", "on") for word in _BOOL.lower().split("|")}
_SPECIAL_FLOAT = r"[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"
_GO_INT = r"[-+]?(?:0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)"
"""Go's strconv.ParseInt(text, 0, 64), which go-yaml v2 calls on a number with its `_` removed."""
_GO_FLOAT = r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
"""go-yaml v2's yamlStyleFloat, matched on a number with its `_` removed."""
_GO_DOT_FLOAT = r"\.[0-9](?:_?[0-9])*(?:[eE][-+]?[0-9](?:_?[0-9])*)?"
"""strconv.ParseFloat on a scalar starting with `.` (as is: `_` only between digits)."""
_NOT_JSON = {"set": "a set", "binary": "binary data", "omap": "an ordered map", "pairs": "a list of pairs"}


class _DuplicateNotingLoader(yaml.SafeLoader):
    """Notes every duplicate mapping key (PyYAML keeps the last one without a word), and reads
    scalars and keys as kubectl does (see the module's docstring)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.duplicates: list[Duplicate] = []
        self.depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        """Refuses values nested deeper than MAX_DEPTH at their line: every reader of the
        document (schema, decision, messages) walks it recursively."""
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                problem = f"values nested more than {MAX_DEPTH} levels deep"
                raise yaml.composer.ComposerError(None, None, problem, mark)
            node: yaml.Node | None = super().compose_node(parent, index)
            assert node is not None  # composing at an event always gives a node
            return node
        finally:
            self.depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """Merge keys (`<<: *anchor`) are expanded as YAML 1.1 says: the mapping's own keys win
        over merged ones, which is not a duplicate; two equal keys of its own are."""
        own = [(k, v) for k, v in node.value if k.tag != MERGE_TAG]
        self.flatten_mapping(node)
        seen: dict[str, int] = {}
        for key_node, _ in own:
            key = self._json_key(key_node)
            line = key_node.start_mark.line + 1
            if key in seen:
                self.duplicates.append(Duplicate(key, line, seen[key]))
            else:
                seen[key] = line
        return {self._json_key(k): self.construct_object(v, deep=deep) for k, v in node.value}

    def _json_key(self, node: yaml.Node) -> str:
        """A key as JSON holds it: text, as kubectl writes a number or boolean key."""
        key = self.construct_object(node, deep=True)
        if isinstance(key, str):
            return key
        if isinstance(key, bool):
            return "true" if key else "false"
        if isinstance(key, int | float):
            return str(key)
        what = "null" if key is None else f"{type(key).__name__} {excerpt(key)}"
        raise yaml.constructor.ConstructorError(
            None, None, f"a key must be text, a number or a boolean, not {what}", node.start_mark
        )


@dataclass(frozen=True)
class _WithoutUnderscores:
    """A pattern matched as go-yaml v2 matches a number that starts with a sign or a digit: with
    every `_` removed first (`1_e3` is 1000, `0_x1F` is 31)."""

    pattern: re.Pattern[str]

    def match(self, text: str) -> re.Match[str] | None:
        return self.pattern.fullmatch(text.replace("_", ""))


def _kubectl_resolvers() -> dict[Any, list[tuple[str, Any]]]:
    """SafeLoader's implicit resolvers as go-yaml v2 resolves plain scalars: no dates, no base-60
    numbers, no `=` value; numbers as Go parses them (`1e6`, `0o17`, `0X1F`, `08`, `1_e3`), and
    `y`/`n` as booleans. KubectlDumper quotes by the same ones."""
    dropped = {
        "tag:yaml.org,2002:timestamp",
        "tag:yaml.org,2002:int",
        "tag:yaml.org,2002:float",
        "tag:yaml.org,2002:bool",
        "tag:yaml.org,2002:value",
    }
    kept: dict[Any, list[tuple[str, Any]]] = {
        first: [(tag, pattern) for tag, pattern in resolvers if tag not in dropped]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    whole = {pattern: re.compile(f"^(?:{pattern})$") for pattern in (_BOOL, _SPECIAL_FLOAT, _GO_DOT_FLOAT)}
    for tag, matcher, firsts in (  # an int before a float: `12` matches both
        ("tag:yaml.org,2002:bool", whole[_BOOL], "yYnNtTfFoO"),
        ("tag:yaml.org,2002:float", whole[_SPECIAL_FLOAT], "-+."),
        ("tag:yaml.org,2002:float", whole[_GO_DOT_FLOAT], "."),
        ("tag:yaml.org,2002:int", _WithoutUnderscores(re.compile(_GO_INT)), "-+0123456789"),
        ("tag:yaml.org,2002:float", _WithoutUnderscores(re.compile(_GO_FLOAT)), "-+0123456789"),
    ):
        for first in firsts:
            kept.setdefault(first, []).append((tag, matcher))
    return kept


def _timestamp_as_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    """An explicit `!!timestamp`: text, as kubectl sends it."""
    return str(loader.construct_scalar(node))


def _refuse_non_json(loader: yaml.SafeLoader, node: yaml.Node) -> None:
    name = node.tag.rsplit(":", 1)[-1]
    problem = f"!!{name} is {_NOT_JSON[name]}, which JSON (and so Kubernetes) cannot hold"
    raise yaml.constructor.ConstructorError(None, None, problem, node.start_mark)


def _bool(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> bool:
    return _BOOLS[str(loader.construct_scalar(node)).lower()]


def _int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int | str:
    """An integer as Go's strconv.ParseInt(text, 0, 64) reads it: `0B1`, `0X1F`, `0O17`, and
    `0777` in octal. One beyond 64 bits stays text unless written in digits alone (go-yaml then
    reads it as a float), as go-yaml leaves what it cannot read as a number."""
    text = str(loader.construct_scalar(node))
    plain = text.replace("_", "")
    value = int(plain, 8) if re.fullmatch(r"[-+]?0[0-7]+", plain) else int(plain, 0)
    return value if -(2**63) <= value < 2**64 or re.fullmatch(r"[-+]?[0-9]+", plain) else text


def _float_or_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float | str:
    """A float; a number beyond a double (`1e400`) stays text, as go-yaml leaves what it cannot
    read as a float."""
    value: float = loader.construct_yaml_float(node)
    text = str(loader.construct_scalar(node))
    return text if math.isinf(value) and "inf" not in text.lower() else value


def _kubectl_constructors() -> dict[Any, Any]:
    constructors = {
        **yaml.SafeLoader.yaml_constructors,
        "tag:yaml.org,2002:timestamp": _timestamp_as_text,
        "tag:yaml.org,2002:bool": _bool,
        "tag:yaml.org,2002:int": _int,
        "tag:yaml.org,2002:float": _float_or_text,
    }
    constructors.update({f"tag:yaml.org,2002:{name}": _refuse_non_json for name in _NOT_JSON})
    return constructors


_DuplicateNotingLoader.yaml_implicit_resolvers = _kubectl_resolvers()
_DuplicateNotingLoader.yaml_constructors = _kubectl_constructors()


def load_documents(
    text: str, source: str, strict: bool = True, report_duplicates: bool = False
) -> list[Document]:
    """Every non-empty document of a YAML stream, with its node tree for line lookups.

    Duplicate keys raise YamlError when `strict`, are listed on each Document when
    `report_duplicates` (so a linter can report them with every other problem), or are ignored.
    """
    documents: list[Document] = []
    try:
        loader = _DuplicateNotingLoader(text)
        try:
            index = 0
            while loader.check_node():
                node = loader.get_node()
                _refuse_excessive_aliases(node, source, documents)
                before = len(loader.duplicates)
                data = loader.construct_document(node)
                found = tuple(loader.duplicates[before:])
                if found and strict and not report_duplicates:
                    first = found[0]
                    where = f"{source}:{first.line}"
                    raise YamlError(
                        f"{where}: invalid YAML: {first}",
                        source,
                        first.line,
                        f"invalid YAML: {first}",
                        documents,
                    )
                if data is not None:
                    documents.append(Document(source, index, data, node, found if report_duplicates else ()))
                index += 1
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        as_json = _as_json(text, source)
        if as_json is not None:
            return as_json
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise YamlError(_describe(source, exc), source, line, _problem(exc), documents) from exc
    return documents


def _as_json(text: str, source: str) -> list[Document] | None:
    """A stream YAML refuses that is JSON, as kubectl reads one that starts with `{` (`jq --tab`
    indents JSON with tabs, which YAML does not allow); None when it is not JSON either. JSON
    indented with tabs that is not valid JSON is reported where JSON finds the fault (YAML would
    only say it found a tab on line 2)."""
    if not text.lstrip().startswith("{"):
        return None
    try:
        data = json.loads(text, object_pairs_hook=_unique_members)
    except json.JSONDecodeError as exc:
        if "\t" not in text:
            return None
        problem, where = f"invalid JSON: {exc.msg}", f"{source}:{exc.lineno}:{exc.colno}"
        raise YamlError(f"{where}: {problem}", source, exc.lineno, problem) from None
    except (ValueError, RecursionError) as exc:
        if "\t" not in text or isinstance(exc, RecursionError):
            return None
        problem = f"invalid JSON: {exc}"
        raise YamlError(f"{source}: {problem}", source, None, problem) from None
    if _depth(data) > MAX_DEPTH:
        return None
    return [Document(source, 0, data, None)] if data is not None else []


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f"duplicate key {key!r}; the last one would win")
        found[key] = value
    return found


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(item) for item in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(item) for item in value), default=0)
    return 0


ALIAS_BUDGET = 100_000
"""Values a document may hold beyond ten times those written in it, once its aliases are expanded."""


def _refuse_excessive_aliases(root: yaml.Node | None, source: str, documents: Sequence[Document]) -> None:
    """YamlError for a document whose aliases expand it far beyond what is written ("billion
    laughs": nine levels of `&a [*a, *a, ...]` in 400 bytes are 400 million values, which every
    reader, message and log line would write out in full), or that holds itself (an alias inside
    the value it names: no JSON object is that)."""
    if root is None:
        return
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            raise _Cycle(node)
        open_nodes.add(key)
        total = 1 + sum(size(child) for child in _children(node))
        open_nodes.discard(key)
        sizes[key] = total
        return total

    try:
        expanded = size(root)
    except _Cycle as cycle:
        line = cycle.node.start_mark.line + 1
        problem = "invalid YAML: an alias refers to the value that holds it (a value that contains itself)"
        raise YamlError(f"{source}:{line}: {problem}", source, line, problem, documents) from None
    except RecursionError:
        line = root.start_mark.line + 1
        problem = "invalid YAML: values nested too deeply to read"
        raise YamlError(f"{source}:{line}: {problem}", source, line, problem, documents) from None
    written = len(sizes)
    if expanded <= ALIAS_BUDGET + 10 * written:
        return
    node = root
    while True:  # down the largest values to the alias that is repeated
        children = _children(node)
        largest = max(children, key=lambda child: sizes[id(child)], default=None)
        if largest is None or sizes[id(largest)] < ALIAS_BUDGET // 10:
            break
        node = largest
    line = node.start_mark.line + 1
    problem = (
        f"invalid YAML: its aliases expand to {expanded:,} values from the {written:,} written (at most"
        f" {ALIAS_BUDGET:,} more than ten per written value); the value at line {line} is repeated"
        " through nested aliases: write the values out instead"
    )
    raise YamlError(f"{source}:{line}: {problem}", source, line, problem, documents)


class _Cycle(Exception):
    def __init__(self, node: yaml.Node) -> None:
        super().__init__()
        self.node = node


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


EXCERPT = 80
"""Characters of a value shown in a message (a value may be a whole expanded document)."""
CUT = "... (cut)"


def excerpt(value: Any, limit: int = EXCERPT) -> str:
    """`value` as its YAML reads (`true`, `null`, `"text"`, `{"a": 1}`), cut to about `limit`
    characters and said so; reads only as much as it shows."""
    pieces: list[str] = []
    length = 0
    for piece in _repr_pieces(value):
        pieces.append(piece)
        length += len(piece)
        if length > limit:
            return "".join(pieces)[:limit] + CUT
    return "".join(pieces)


def _repr_pieces(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        yield "{"
        for position, (key, item) in enumerate(value.items()):
            yield (", " if position else "") + _short_repr(key) + ": "
            yield from _repr_pieces(item)
        yield "}"
    elif isinstance(value, list | tuple):
        yield "["
        for position, item in enumerate(value):
            if position:
                yield ", "
            yield from _repr_pieces(item)
        yield "]"
    else:
        yield _short_repr(value)


def _short_repr(value: Any) -> str:
    """A scalar as YAML (and JSON) write it, not as Python does: authors never wrote `True`."""
    if isinstance(value, str):
        if len(value) > 4 * EXCERPT:
            return json.dumps(value[: 4 * EXCERPT], ensure_ascii=False)[:-1]
        return json.dumps(value, ensure_ascii=False)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")
    if isinstance(value, datetime.date):  # a YAML timestamp (datetime is a date too)
        return value.isoformat()
    return repr(value)


def load_file(path: Path, strict: bool = True, report_duplicates: bool = False) -> list[Document]:
    return load_documents(read_text(path), str(path), strict, report_duplicates)


def read_text(path: Path) -> str:
    """The file's text; YamlError naming the file (and the line and column of a byte that is not
    UTF-8) when it cannot be read."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        problem = f"cannot read: {exc.strerror or exc}"
        raise YamlError(f"{path}: {problem}", str(path), None, problem) from exc
    return decode_text(data, str(path))


def decode_text(data: bytes, source: str) -> str:
    """UTF-8 bytes as text (a byte-order mark dropped); YamlError at the first byte that is not,
    located in the file as given: its offset counts the mark, its column (as an editor shows it)
    does not."""
    bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[bom:].decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = bom + exc.start
        line_start = max(data.rfind(b"\n", 0, offset) + 1, bom)
        line = data.count(b"\n", 0, offset) + 1
        column = len(data[line_start:offset].decode("utf-8", errors="replace")) + 1
        byte = f"0x{data[offset]:02x}"
        at = f"at column {column}, offset {offset}"
        problem = f"not UTF-8: byte {byte} {at} ({exc.reason}); save the file as UTF-8"
        raise YamlError(f"{source}:{line}:{column}: {problem}", source, line, problem) from exc


class KubectlDumper(yaml.SafeDumper):
    """Writes YAML that kubectl and load_documents read back as written. A string they would read
    as something else (`y`, `1e3`, `0o17`, a short git SHA such as `1234e56`) is quoted: the
    dumper decides by the reader's own resolvers, not by PyYAML's YAML 1.1. Every object is
    written in full: no `&id001` anchors and `*id001` aliases where the same object appears twice
    (a mutation shares values; an input may use aliases)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


_UNICODE_BREAKS = frozenset("\x85\u2028\u2029")


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    """Text with a Unicode line break (NEL, LS, PS) double-quoted, where it is written escaped:
    with `allow_unicode` PyYAML writes it as is inside single quotes, where a reader folds it to a
    space."""
    style = '"' if _UNICODE_BREAKS.intersection(value) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


KubectlDumper.yaml_implicit_resolvers = _DuplicateNotingLoader.yaml_implicit_resolvers
KubectlDumper.add_representer(str, _represent_str)


def dump_yaml(data: Any) -> str:
    return str(yaml.dump(data, Dumper=KubectlDumper, sort_keys=False))


def dump_yaml_all(items: Sequence[Any]) -> str:
    return str(yaml.dump_all(items, Dumper=KubectlDumper, sort_keys=False))


YAML_SUFFIXES = (".yaml", ".yml", ".json")
"""What a folder's YAML files end with, in any case (JSON is YAML, as kubectl reads it)."""


def iter_yaml_files(directory: Path, unreadable: list[OSError] | None = None) -> Iterator[Path]:
    """YAML files under a folder, skipping tests/ and hidden entries: a mounted ConfigMap keeps a
    second copy of every file in its `..<timestamp>` folder behind the `..data` symlink. Symlinked
    folders are followed, each real folder once (a link back up would loop). A symlink whose target
    is missing is listed (reading it says so); a folder that cannot be listed, and what is no file
    (a named pipe would block every reader), go to `unreadable`, or raise when that is None."""

    def refused(exc: OSError) -> None:
        if unreadable is None:
            raise exc
        unreadable.append(exc)

    visited: set[tuple[int, int]] = set()
    for folder, subfolders, names in os.walk(directory, onerror=refused, followlinks=True):
        try:
            status = os.stat(folder)
        except OSError as exc:
            refused(exc)
            continue
        if (status.st_dev, status.st_ino) in visited:
            subfolders[:] = []
            continue
        visited.add((status.st_dev, status.st_ino))
        subfolders[:] = sorted(d for d in subfolders if not d.startswith(".") and d != "tests")
        for name in sorted(names):
            if name.lower().endswith(YAML_SUFFIXES) and not name.startswith("."):
                path = Path(folder) / name
                if path.exists() and not path.is_file():
                    refused(OSError(errno.EINVAL, "not a regular file (a pipe or a device)", str(path)))
                    continue
                yield path


def key_path(node: yaml.Node | None, key: str, line: int) -> list[str | int] | None:
    """The JSON path of the mapping key `key` written on `line`, searching the node tree."""
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            name = getattr(key_node, "value", None)
            if name == key and key_node.start_mark.line + 1 == line:
                return [key]
            found = key_path(value_node, key, line)
            if found is not None:
                return [str(name), *found]
    if isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            found = key_path(item, key, line)
            if found is not None:
                return [index, *found]
    return None


def _child(node: yaml.Node | None, step: str | int) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in reversed(node.value):  # the last one wins: own keys follow merged ones
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
    return f"{where}: {_problem(exc)}"


def _problem(exc: yaml.YAMLError) -> str:
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    return f"invalid YAML: {problem}" + (f" ({context})" if context else "")
