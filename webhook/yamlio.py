"""YAML documents with line numbers and duplicate-key detection, read as kubectl reads them.

PyYAML silently keeps the last of two equal keys; here that is an error with both lines,
because a template author (or a manifest) that writes `resources:` twice loses half of it.

Values are what kubectl (sigs.k8s.io/yaml, go-yaml v2) would send the API server, not what
PyYAML's YAML 1.1 makes of them: `2024-01-01` and `1:30` stay text (no dates, no base-60
numbers), numbers are what Go parses (`1e6`, `0X1F`, `08`, `1_e3`), keys are text (`2:` is "2",
`true:` is "true", `1e3:` is "1000"), and what JSON cannot hold (`!!set`, `!!binary`, a list as
a key) is an error at its line. KubectlDumper writes by the same rules, so what it writes reads
back as written.
"""

from __future__ import annotations

import codecs
import datetime
import errno
import json
import math
import os
import re
import stat
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Final, Protocol

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
    composed: yaml.Node | Stream | None
    """Its node tree, or the stream that composes it on the first line lookup (reading keeps no
    tree: one is about 30 times the size of its text, and most readers never ask for a line)."""
    duplicates: tuple[Duplicate, ...] = ()

    @property
    def node(self) -> yaml.Node | None:
        """The document's node tree (None when its text is no YAML, as JSON indented with tabs)."""
        if isinstance(self.composed, Stream):
            return self.composed.node(self.index)
        return self.composed

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


class Stream:
    """The text of a stream, composed into node trees (once, for all its documents) when a line
    is first asked for."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._nodes: list[yaml.Node | None] | None = None

    def node(self, index: int) -> yaml.Node | None:
        if self._nodes is None:
            self._nodes = _compose_all(self.text)
        return self._nodes[index] if index < len(self._nodes) else None


def _compose_all(text: str) -> list[yaml.Node | None]:
    """The node tree of each document by position, up to the first that is no YAML (as JSON
    indented with tabs), read as load_documents reads them."""
    if _CLoader is not None:
        nodes, complete = _compose(_CLoader(text))
        if complete:
            return nodes
    return _compose(_DuplicateNotingLoader(text))[0]


def _compose(loader: _Loader) -> tuple[list[yaml.Node | None], bool]:
    """The documents' node trees, and whether the loader composed the stream to its end."""
    nodes: list[yaml.Node | None] = []
    try:
        while loader.check_node():
            nodes.append(loader.get_node())
    except yaml.YAMLError:
        return nodes, False
    finally:
        loader.dispose()
    return nodes, True


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


class _KubectlConstructor(yaml.constructor.SafeConstructor):
    """Notes every duplicate mapping key (PyYAML keeps the last one without a word), and reads
    scalars and keys as kubectl does (see the module's docstring). Its loaders set `duplicates`:
    PyYAML's loaders start SafeConstructor, not this."""

    duplicates: list[Duplicate]

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """Merge keys (`<<: *anchor`) are expanded as YAML 1.1 says: the mapping's own keys win
        over merged ones, which is not a duplicate; two equal keys of its own are."""
        if not isinstance(node, yaml.MappingNode):  # `!!map [1]`: SafeConstructor's own check
            problem = f"expected a mapping node, but found {node.id}"
            raise yaml.constructor.ConstructorError(None, None, problem, node.start_mark)
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
        if isinstance(key, int) and -(2**63) <= key < 2**64:
            return str(key)
        if isinstance(key, int | float):  # an int beyond 64 bits is go-yaml's float
            return go_float_key(float(key))
        what = "null" if key is None else f"{type(key).__name__} {excerpt(key)}"
        raise yaml.constructor.ConstructorError(
            None, None, f"a key must be text, a number or a boolean, not {what}", node.start_mark
        )


def go_float_key(value: float) -> str:
    """A float key as sigs.k8s.io/yaml writes it: strconv.FormatFloat(key, 'g', -1, 32), the
    shortest text of the nearest float32 (`1e3` is "1000", `3.14159265358979` "3.1415927", `1e7`
    "1e+07"), and `.inf`, `-.inf`, `.nan` as YAML spells them."""
    if math.isnan(value):
        return ".nan"
    try:
        single: float = struct.unpack("<f", struct.pack("<f", value))[0]
    except OverflowError:  # beyond float32: Go's conversion gives an infinity
        single = math.copysign(math.inf, value)
    if math.isinf(single):
        return ".inf" if single > 0 else "-.inf"
    sign = "-" if math.copysign(1.0, single) < 0 else ""
    if single == 0:
        return f"{sign}0"
    digits, point = _shortest_float32(abs(single))
    exponent = point - 1
    if exponent < -4 or exponent >= 6:  # %e, as Go's 'g' decides for the shortest digits
        mantissa = digits[0] + (f".{digits[1:]}" if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{sign}{digits}{'0' * (point - len(digits))}"
    return f"{sign}{digits[:point]}.{digits[point:]}"


def _shortest_float32(value: float) -> tuple[str, int]:
    """The fewest significant digits that read back as this positive float32, the nearest of
    them where several do, and where the decimal point falls (value = 0.digits × 10^point): the
    digits Go's shortest formatting writes. A decimal reads back when it lies within half a step
    of the neighbouring float32s, the bounds included for an even mantissa (round half to even)."""
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    exact = Fraction(value)
    below = Fraction(_float32(bits - 1))
    above_value = _float32(bits + 1)
    above = exact + (exact - below) if math.isinf(above_value) else Fraction(above_value)
    low, high, inclusive = (exact + below) / 2, (exact + above) / 2, bits % 2 == 0
    for precision in range(1, 10):  # nine digits tell every float32 apart
        mantissa, power = f"{value:.{precision - 1}e}".split("e")
        unit = Fraction(10) ** (int(power) - precision + 1)
        rounded = int(mantissa.replace(".", ""))
        for candidate in sorted((rounded, rounded - 1, rounded + 1), key=lambda n: abs(n * unit - exact)):
            decimal = candidate * unit
            if low < decimal < high or (inclusive and decimal in (low, high)):
                text = str(candidate)
                return text.rstrip("0"), len(text) + int(power) - precision + 1
    raise AssertionError(f"no float32 text for {value!r}")  # nine digits always do


def _float32(bits: int) -> float:
    value: float = struct.unpack("<f", struct.pack("<I", bits))[0]
    return value


@dataclass(frozen=True)
class _WithoutUnderscores:
    """A pattern matched as go-yaml v2 matches a number that starts with a sign or a digit: with
    every `_` removed first (`1_e3` is 1000, `0_x1F` is 31)."""

    pattern: re.Pattern[str]

    def match(self, text: str) -> re.Match[str] | None:
        return self.pattern.fullmatch(text.replace("_", ""))


class _DuplicateNotingLoader(yaml.SafeLoader, _KubectlConstructor):
    """PyYAML's pure-Python reader: what a stream the C reader refuses is read again with, so that
    its messages (and what it accepts) stay those of one reader."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.duplicates = []
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

    def scan_flow_scalar_non_spaces(self, double: bool, start_mark: yaml.Mark) -> list[str]:
        """Refuses, as libyaml and go-yaml do, a `\\u` escape of a UTF-16 surrogate (JSON's way
        to write an emoji, `"\\ud83d\\ude00"`) and a `\\U` escape beyond U+10FFFF: PyYAML read
        the first as lone surrogates, which no output can write, and raised a traceback on the
        second."""
        mark = self.get_mark()
        try:
            chunks: list[str] = super().scan_flow_scalar_non_spaces(double, start_mark)
        except (ValueError, OverflowError):  # chr() of the escape's code
            raise _invalid_escape(start_mark, self.get_mark()) from None
        if any(_SURROGATE.search(chunk) for chunk in chunks):
            raise _invalid_escape(start_mark, mark)
        return chunks


_SURROGATE = re.compile(r"[\ud800-\udfff]")
"""What only an escape puts in a scalar: the text read is UTF-8, which holds no surrogates."""


def _invalid_escape(start_mark: yaml.Mark, mark: yaml.Mark) -> yaml.scanner.ScannerError:
    """libyaml's error for such an escape."""
    problem = "found invalid Unicode character escape code"
    return yaml.scanner.ScannerError("while parsing a quoted scalar", start_mark, problem, mark)


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
    word = str(loader.construct_scalar(node)).lower()
    if word not in _BOOLS:  # `!!bool maybe`
        raise _cannot_decode(loader, node)
    return _BOOLS[word]


def _cannot_decode(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> yaml.constructor.ConstructorError:
    """go-yaml's error for a value its explicit tag cannot read (`!!bool maybe`, `!!float x`,
    `!!int 1.5`): PyYAML raised a KeyError or ValueError, a traceback from every command."""
    text, tag = excerpt(str(loader.construct_scalar(node))), node.tag.rsplit(":", 1)[-1]
    problem = f"cannot decode {text} as a !!{tag}"
    return yaml.constructor.ConstructorError(None, None, problem, node.start_mark)


def _int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int | str:
    """An integer as Go's strconv.ParseInt(text, 0, 64) reads it: `0B1`, `0X1F`, `0O17`, and
    `0777` in octal. One beyond 64 bits stays text unless written in digits alone (go-yaml then
    reads it as a float), and one beyond a double stays text too, as `1e400` does."""
    text = str(loader.construct_scalar(node))
    plain = text.replace("_", "")
    try:
        value = int(plain, 8) if re.fullmatch(r"[-+]?0[0-7]+", plain) else int(plain, 0)
    except ValueError:
        if re.fullmatch(_GO_INT, plain):  # more than the 4300 digits Python reads in base 10
            return text  # beyond a double
        raise _cannot_decode(loader, node) from None  # an explicit `!!int 1.5`
    if -(2**63) <= value < 2**64:
        return value
    return value if re.fullmatch(r"[-+]?[0-9]+", plain) and _within_a_double(value) else text


def _within_a_double(value: int) -> bool:
    """Whether go-yaml reads the number as a float (a key's text is made from that float)."""
    try:
        float(value)
    except OverflowError:
        return False
    return True


def _float_or_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float | str:
    """A float; a number beyond a double (`1e400`) stays text, as go-yaml leaves what it cannot
    read as a float."""
    try:
        value: float = loader.construct_yaml_float(node)
    except (ValueError, IndexError):  # an explicit `!!float x`
        raise _cannot_decode(loader, node) from None
    text = str(loader.construct_scalar(node))
    return text if math.isinf(value) and "inf" not in text.lower() else value


def _merge_as_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    """`<<` anywhere but as a mapping's key, which construct_mapping merges first: the text
    "<<", as go-yaml v2 reads it (an annotation's value, a list's item). KubectlDumper still
    quotes it, for where it would be a key."""
    return str(loader.construct_scalar(node))


def _kubectl_constructors() -> dict[Any, Any]:
    constructors = {
        **yaml.SafeLoader.yaml_constructors,
        "tag:yaml.org,2002:timestamp": _timestamp_as_text,
        "tag:yaml.org,2002:bool": _bool,
        "tag:yaml.org,2002:int": _int,
        "tag:yaml.org,2002:float": _float_or_text,
        MERGE_TAG: _merge_as_text,
    }
    constructors.update({f"tag:yaml.org,2002:{name}": _refuse_non_json for name in _NOT_JSON})
    return constructors


_DuplicateNotingLoader.yaml_implicit_resolvers = _kubectl_resolvers()
_DuplicateNotingLoader.yaml_constructors = _kubectl_constructors()


class _Loader(Protocol):
    """What load_documents reads a stream with: PyYAML's pure-Python loader or its C one."""

    duplicates: list[Duplicate]

    def check_node(self) -> bool: ...

    def get_node(self) -> yaml.Node | None: ...

    def construct_document(self, node: yaml.Node) -> Any: ...

    def dispose(self) -> None: ...


def _c_loader() -> Callable[[str], _Loader] | None:
    """The loader on libyaml (CSafeLoader, with this module's resolvers and constructors), which
    scans and composes in C, about ten times as fast; None when PyYAML was built without it."""
    base: Any = getattr(yaml, "CSafeLoader", None)
    if base is None:
        return None

    def start(self: Any, stream: str) -> None:
        base.__init__(self, stream)
        self.duplicates = []

    attributes = {
        "__init__": start,
        "yaml_implicit_resolvers": _DuplicateNotingLoader.yaml_implicit_resolvers,
        "yaml_constructors": _DuplicateNotingLoader.yaml_constructors,
    }
    loader: Callable[[str], _Loader] = type(
        "_CDuplicateNotingLoader", (base, _KubectlConstructor), attributes
    )
    return loader


_CLoader: Final = _c_loader()


def load_documents(
    text: str, source: str, strict: bool = True, report_duplicates: bool = False
) -> list[Document]:
    """Every non-empty document of a YAML stream; each composes its node tree for line lookups
    only when one is asked for.

    Duplicate keys raise YamlError when `strict`, are listed on each Document when
    `report_duplicates` (so a linter can report them with every other problem), or are ignored.
    JSON (kubectl's `-o json`) is read by the json module, 100 times as fast as YAML would; YAML
    by libyaml, and again by PyYAML's pure-Python reader only when libyaml refuses it, so that
    what is accepted and the messages are those of one reader.
    """
    stream = Stream(text)
    if _looks_like_json(text):
        read, refused = _read_json(text, source, stream)
        if read is not None:
            return read
        if refused is not None:
            return _load_refused_json(text, stream, source, strict, report_duplicates, refused)
    if _CLoader is not None:
        try:
            return _load(_CLoader(text), stream, source, strict, report_duplicates)
        except yaml.YAMLError:
            pass  # read again below, for the pure reader's verdict and message
    return _load_pure(text, stream, source, strict, report_duplicates)


def _load_refused_json(
    text: str, stream: Stream, source: str, strict: bool, report_duplicates: bool, refused: YamlError
) -> list[Document]:
    """A stream that starts as JSON does and that JSON refuses: YAML when the pure reader reads it
    (a flow mapping, `{a: 1}`), else JSON's error (`jq --tab` indents JSON with tabs, which YAML
    does not allow: it would say it found a tab on line 2). libyaml refusing it too answers first,
    so that a truncated `kubectl get -o json` is reported at once."""
    if _CLoader is not None:
        try:
            _load(_CLoader(text), stream, source, strict, report_duplicates)
        except yaml.YAMLError:
            raise refused from None
        except YamlError:
            pass  # a duplicate key, aliases: the pure reader decides, as for the rest
    return _load_pure(text, stream, source, strict, report_duplicates, refused)


def _load_pure(
    text: str,
    stream: Stream,
    source: str,
    strict: bool,
    report_duplicates: bool,
    refused_json: YamlError | None = None,
) -> list[Document]:
    """The stream read by the pure reader; YamlError with its message (or `refused_json`) when it
    is no YAML."""
    try:
        return _load(_pure_loader(text), stream, source, strict, report_duplicates)
    except _Refused as refused:
        if refused_json is not None:
            raise refused_json from refused.error
        exc, documents = refused.error, refused.documents
        mark = getattr(exc, "problem_mark", None) or _reader_mark(text, exc)
        line = mark.line + 1 if mark is not None else None
        raise YamlError(_describe(source, exc, mark), source, line, _problem(exc), documents) from exc


def _pure_loader(text: str) -> _DuplicateNotingLoader:
    """The pure reader over `text`, _Refused for a character YAML does not allow (a raw ESC or NUL,
    which libyaml and kubectl refuse too): it checks the whole text before reading any of it, and
    its ReaderError was a traceback from every command."""
    try:
        return _DuplicateNotingLoader(text)
    except yaml.reader.ReaderError as exc:
        raise _Refused(exc, []) from exc


def _reader_mark(text: str, exc: yaml.YAMLError) -> yaml.Mark | None:
    """Where a ReaderError's character is (it has only its offset in the text)."""
    if not isinstance(exc, yaml.reader.ReaderError):
        return None
    line = text.count("\n", 0, exc.position)
    column = exc.position - (text.rfind("\n", 0, exc.position) + 1)
    return yaml.Mark(exc.name, exc.position, line, column, text, exc.position)


class _Refused(Exception):
    """The pure reader's YAMLError, with the documents read before it."""

    def __init__(self, error: yaml.YAMLError, documents: list[Document]) -> None:
        super().__init__(str(error))
        self.error = error
        self.documents = documents


def _load(
    loader: _Loader, stream: Stream, source: str, strict: bool, report_duplicates: bool
) -> list[Document]:
    """The stream's documents; YamlError for a duplicate key (when `strict`) or aliases expanding
    too far, a YAMLError (from the C loader) or _Refused (from the pure one) for what is no YAML."""
    documents: list[Document] = []
    try:
        index = 0
        while loader.check_node():
            node = loader.get_node()
            _refuse_excessive_aliases(node, source, documents)
            before = len(loader.duplicates)
            data = loader.construct_document(node)  # type: ignore[arg-type]  # check_node: a node
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
                documents.append(Document(source, index, data, stream, found if report_duplicates else ()))
            index += 1
    except yaml.YAMLError as exc:
        if isinstance(loader, _DuplicateNotingLoader):
            raise _Refused(exc, documents) from exc
        raise
    finally:
        loader.dispose()
    return documents


def _looks_like_json(text: str) -> bool:
    """A stream that starts with `{` or `[`, as `kubectl -o json` writes (and kubectl reads a
    stream starting with `{` as JSON)."""
    start = text.lstrip()[:1]
    return start in ("{", "[")


def _read_json(text: str, source: str, stream: Stream) -> tuple[list[Document] | None, YamlError | None]:
    """The stream read as JSON: its document, or None and, where JSON refuses it, the error to
    report if YAML refuses it too. None and no error for what YAML must decide, with its lines:
    a duplicate member, values nested too deeply, `NaN`."""
    try:
        data = json.loads(
            text, object_pairs_hook=_unique_members, parse_float=_float, parse_constant=_constant
        )
    except json.JSONDecodeError as exc:
        problem, where = f"invalid JSON: {exc.msg}", f"{source}:{exc.lineno}:{exc.colno}"
        return None, YamlError(f"{where}: {problem}", source, exc.lineno, problem)
    except _NotAsYaml:
        return None, None
    except _DuplicateMember as exc:
        problem = f"invalid JSON: {exc}"
        return None, YamlError(f"{source}: {problem}", source, None, problem)
    except (ValueError, RecursionError):  # a number too long to read; nested too deeply
        return None, None
    if _too_deep(data) or _lone_surrogate(text, data):
        return None, None
    return ([Document(source, 0, data, stream)] if data is not None else []), None


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
"""A `\\u` escape of a UTF-16 surrogate: JSON writes an emoji as a pair of them."""


def _lone_surrogate(text: str, data: Any) -> bool:
    """Whether JSON read a `\\u` escape of a surrogate outside a pair (`"\\ud83d"`) into the
    data: no output can write it (check said stdout could not be written). YAML refuses the escape
    at its line, as it does in YAML; a pair is the character it encodes."""
    if not _SURROGATE_ESCAPE.search(text):
        return False
    return _SURROGATE.search(json.dumps(data, ensure_ascii=False)) is not None


class _DuplicateMember(ValueError):
    pass


class _NotAsYaml(ValueError):
    """JSON the YAML reader reads otherwise: `NaN` and `Infinity` are text to it."""


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) < len(pairs):
        key = next(key for position, (key, _) in enumerate(pairs) if key in dict(pairs[:position]))
        raise _DuplicateMember(f"duplicate key {key!r}; the last one would win")
    return found


def _float(text: str) -> float | str:
    """A JSON number as YAML reads it: one beyond a double (`1e400`) stays text (_float_or_text)."""
    value = float(text)
    return text if math.isinf(value) else value


def _constant(text: str) -> None:
    raise _NotAsYaml(text)


def _too_deep(value: Any) -> bool:
    """Whether values may nest deeper than MAX_DEPTH: objects and lists reach MAX_DEPTH levels
    (the YAML reader then decides, at the line). Level by level, not recursively: a third of the
    time of a walk by value, and no RecursionError."""
    level = [value] if isinstance(value, dict | list) else []
    for _ in range(MAX_DEPTH - 1):
        if not level:
            return False
        level = [
            child
            for item in level
            for child in (item.values() if isinstance(item, dict) else item)
            if isinstance(child, dict | list)
        ]
    return bool(level)


ALIAS_BUDGET = 100_000
"""Values a document may hold beyond ten times those written in it, once its aliases are expanded."""


def _refuse_excessive_aliases(root: yaml.Node | None, source: str, documents: Sequence[Document]) -> None:
    """YamlError for a document whose aliases expand it far beyond what is written ("billion
    laughs": nine levels of `&a [*a, *a, ...]` in 400 bytes are 400 million values, which every
    reader, message and log line would write out in full), or that holds itself (an alias inside
    the value it names: no JSON object is that). A ComposerError for values nested deeper than
    MAX_DEPTH, which the pure reader refuses as it composes them and libyaml does not."""
    if root is None or _within_budget(root):
        return
    sizes: dict[int, int] = {}
    try:
        expanded = _expanded_size(root, 1, sizes, set())
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


def _within_budget(root: yaml.Node) -> bool:
    """Whether the document is certainly within the alias budget and MAX_DEPTH, counted level by
    level (a fifth of the time of the walk by node, which runs when this cannot tell): every path
    to a node is counted, as the walk counts a node every time an alias repeats it."""
    level, written, expanded = [root], {id(root)}, 1
    for _ in range(MAX_DEPTH - 1):
        coming = sum(
            len(node.value) * (2 if isinstance(node, yaml.MappingNode) else 1)
            for node in level
            if not isinstance(node, yaml.ScalarNode)
        )
        if not coming:
            return True
        expanded += coming
        if expanded > ALIAS_BUDGET + 10 * len(written):
            return False
        level = [child for node in level for child in _children(node)]
        written.update(map(id, level))
    return False


def _expanded_size(node: yaml.Node, depth: int, sizes: dict[int, int], open_nodes: set[int]) -> int:
    """The values `node` holds with its aliases expanded, each node's noted in `sizes` by id;
    _Cycle for a node inside itself, ComposerError for one nested deeper than MAX_DEPTH."""
    key = id(node)
    if key in sizes:
        return sizes[key]
    if key in open_nodes:
        raise _Cycle(node)
    if depth > MAX_DEPTH:
        problem = f"values nested more than {MAX_DEPTH} levels deep"
        raise yaml.composer.ComposerError(None, None, problem, node.start_mark)
    open_nodes.add(key)
    total = 1 + sum(_expanded_size(child, depth + 1, sizes, open_nodes) for child in _children(node))
    open_nodes.discard(key)
    sizes[key] = total
    return total


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


def stat_problem(path: Path) -> str | None:
    """Why a path that `Path.exists` says is not there cannot be read, when it is not simply
    missing: a symlink loop (`cannot read: Too many levels of symbolic links`), which exists()
    answers False for too. None when it is missing (or there after all)."""
    try:
        path.stat()
    except OSError as exc:
        return None if exc.errno == errno.ENOENT else f"cannot read: {exc.strerror or exc}"
    return None


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
                problem = _not_readable_as_file(path)
                if problem is not None:
                    refused(problem)
                    continue
                yield path


def _not_readable_as_file(path: Path) -> OSError | None:
    """Why the path is no file to read, if it is not: what is no regular file (a named pipe would
    block every reader), or a file in a folder without search permission (Path.exists raised it).
    A dangling symlink or a loop is read all the same: reading it says which."""
    try:
        is_file = stat.S_ISREG(os.stat(path).st_mode)
    except OSError as exc:
        return None if exc.errno in (errno.ENOENT, errno.ELOOP) else exc
    return None if is_file else OSError(errno.EINVAL, "not a regular file (a pipe or a device)", str(path))


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


def _describe(source: str, exc: yaml.YAMLError, mark: yaml.Mark | None = None) -> str:
    mark = mark or getattr(exc, "problem_mark", None)
    where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark is not None else source
    return f"{where}: {_problem(exc)}"


def _problem(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.reader.ReaderError):  # its str() adds the offset in "<unicode string>"
        return f"invalid YAML: unacceptable character #x{exc.character:04x}: {exc.reason}"
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    return f"invalid YAML: {problem}" + (f" ({context})" if context else "")
