"""Read Kubernetes manifests for the offline commands: files, folders, stdin; List and multi-document."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from webhook.core.workloads import SUPPORTED_KINDS, api_group, home_group, is_supported
from webhook.yamlio import Document, YamlError, decode_text, load_documents, read_text, stat_problem

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
BUILT_IN_VERSIONS = {"": "v1", "apps": "apps/v1", "batch": "batch/v1"}
"""Kubernetes' own API groups of the kinds the webhook reads: no CRD adds a kind to them."""
RETIRED_GROUPS = frozenset({"extensions"})
"""Kubernetes' own groups that once held kinds the webhook reads (extensions/v1beta1 Deployment,
DaemonSet and ReplicaSet, which no API server serves since 1.16): old charts still ship them."""
MAX_LIST_DEPTH = 10
"""How deep Lists may nest in Lists (kubectl unwraps each level); deeper is refused, not guessed."""


@dataclass(frozen=True)
class Manifest:
    source: str
    """Where it came from: file#document (and [item] inside a List)."""
    obj: dict[str, Any]

    @property
    def kind(self) -> str:
        kind = self.obj.get("kind")
        return kind if isinstance(kind, str) else ""

    @property
    def name(self) -> str:
        """The name (or generateName) when it is a string; `<unnamed>` else, as with no metadata."""
        metadata = self.metadata
        for key in ("name", "generateName"):
            if isinstance(metadata.get(key), str) and metadata[key]:
                return str(metadata[key])
        return "<unnamed>"

    @property
    def title(self) -> str:
        """`Pod train`, for messages: the kind (or `no kind`) and the name when it has one."""
        name = self.name
        return f"{self.kind or 'no kind'}" + ("" if name == "<unnamed>" else f" {name}")

    @property
    def metadata(self) -> Mapping[str, Any]:
        """The metadata when it is an object, else empty (podshape reports one that is not)."""
        metadata = self.obj.get("metadata")
        return metadata if isinstance(metadata, Mapping) else {}

    @property
    def namespace(self) -> str | None:
        namespace = self.metadata.get("namespace")
        return namespace if isinstance(namespace, str) and namespace else None


def kind_problems(obj: Mapping[str, Any]) -> list[tuple[str, str]]:
    """A kind the webhook reads, written as the API server refuses it: in another of Kubernetes'
    own groups (`apps/v1` Pod, `extensions/v1beta1` Deployment), in a version of its own group no
    API server serves any more (`apps/v1beta2` Deployment), or in another case (`kind: pod`).
    Read as some other kind, it would be skipped as holding no pod template, and go undecided."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not (isinstance(api_version, str) and api_version and isinstance(kind, str) and kind):
        return []
    group = api_group(api_version)
    served = BUILT_IN_VERSIONS.get(group or "")
    if group is not None and served and api_version != served and is_supported((group, kind)):
        # apps/v1beta2 Deployment (gone in 1.16), batch/v1beta1 CronJob (1.25)
        return [("apiVersion", f"kind {kind} is in apiVersion {served}, not {api_version}")]
    if group is None or is_supported((group, kind)):
        return []
    known = next((k for k in ("Pod", *sorted(SUPPORTED_KINDS)) if k.lower() == kind.lower()), None)
    own_group = group in BUILT_IN_VERSIONS or group in RETIRED_GROUPS
    if known is None or not (own_group or is_supported((group, known))):
        return []  # a kind of another API group's own (a CRD may name its kind Job)
    home = group if is_supported((group, known)) else home_group(known)  # Volcano's Job: its own
    in_home = f"apiVersion {BUILT_IN_VERSIONS[home]}" if home in BUILT_IN_VERSIONS else f"API group {home}"
    if known != kind:
        elsewhere = "" if home == group else f" (in {in_home})"
        return [("kind", f"kinds are case-sensitive: did you mean {known}{elsewhere}?")]
    return [("apiVersion", f"kind {kind} is in {in_home}, not {api_version}")]


def read_manifests(inputs: list[str], recursive: bool = False) -> tuple[list[Manifest], list[str]]:
    """Every object from every input, and one error per input that could not be read.

    A bad file does not stop the others: a CI run over a folder reports every broken file. Nor
    does a bad document stop its file's others: the objects of the documents before a YAML syntax
    error are returned with the error, and a document that is not a mapping is an error of its own.
    """
    manifests: list[Manifest] = []
    errors: list[str] = []
    for source in _sources(inputs, recursive, errors):
        try:
            source_name, text = source()
        except YamlError as exc:
            errors.append(str(exc))
            continue
        syntax: str | None = None
        try:
            documents = load_documents(text, source_name)
        except YamlError as exc:
            documents, syntax = list(exc.documents), str(exc)
        for document in documents:
            _objects(document, source_name, manifests, errors)
        if syntax is not None:
            errors.append(syntax)
    return manifests, errors


def _sources(
    inputs: list[str], recursive: bool, errors: list[str]
) -> Iterator[Callable[[], tuple[str, str]]]:
    """Per input file, a function reading (its name, its text)."""
    for raw in inputs:
        if raw == "-":
            yield lambda: ("<stdin>", decode_text(sys.stdin.buffer.read(), "<stdin>"))
            continue
        path = Path(raw)
        if path.is_dir():
            for file in _folder_files(path, recursive, errors):
                yield lambda file=file: (str(file), read_text(file))  # type: ignore[misc]
        elif path.exists():
            yield lambda path=path: (str(path), read_text(path))  # type: ignore[misc]
        else:
            errors.append(_missing(path, raw))


def _folder_files(folder: Path, recursive: bool, errors: list[str]) -> list[Path]:
    """The manifest files of a folder (`.yaml`, `.yml`, `.json`, in any case), sorted; with
    `recursive`, of its subfolders too, symlinked ones included, each real folder once (a link
    back up is no loop), hidden ones left out as the catalog leaves them out (a mounted
    ConfigMap's `..<timestamp>` copy of every file, behind `..data`). A dangling symlink named as
    a manifest, or a folder that cannot be listed, is an error: skipping it silently would pass a
    CI run that checked nothing of it."""
    found: list[Path] = []
    seen: set[Path] = set()

    def walk(directory: Path) -> None:
        real = directory.resolve()
        if real in seen:
            return
        seen.add(real)
        try:
            entries = sorted(directory.iterdir())
        except OSError as exc:
            errors.append(f"{directory}: cannot list the folder: {exc.strerror or exc}")
            return
        for entry in entries:
            if entry.is_dir():
                if recursive and not entry.name.startswith("."):
                    walk(entry)
            elif entry.suffix.lower() in MANIFEST_SUFFIXES:
                if entry.is_file():
                    found.append(entry)
                elif not entry.exists():
                    errors.append(_missing(entry, str(entry)))
                else:  # a named pipe (reading it would wait for a writer) or a device
                    errors.append(f"{entry}: not a regular file (a pipe or a device)")

    walk(folder)
    return sorted(found)


def _missing(path: Path, shown: str) -> str:
    """A path that is not there, or a symlink whose target is gone or that loops (a loop was
    called a dangling symlink)."""
    why = stat_problem(path)
    if path.is_symlink():
        what = "a dangling symlink" if why is None else "a symlink"
        return f"{shown}: {what} (to {os.readlink(path)}): {why or 'no such file or directory'}"
    return f"{shown}: {why or 'no such file or directory'}"


def _objects(document: Document, source: str, manifests: list[Manifest], errors: list[str]) -> None:
    where = f"{source}#{document.index + 1}"
    data = document.data
    if not isinstance(data, Mapping):
        errors.append(f"{where}: a manifest must be a mapping, got {type(data).__name__}")
        return
    manifests.extend(expand_lists(data, where, errors))


def is_list(obj: Mapping[str, Any]) -> bool:
    """A `List` (or `PodList`, ...) holding its objects in `items`, as kubectl reads one."""
    kind = obj.get("kind")
    return isinstance(kind, str) and kind.endswith("List") and isinstance(obj.get("items"), list)


def expand_lists(obj: Mapping[str, Any], where: str, errors: list[str], depth: int = 0) -> Iterator[Manifest]:
    """The object, or the objects of a List, of Lists inside it too (kubectl flattens nested Lists):
    sources `where[1][0]`. An item that is not a mapping, or Lists nested deeper than
    MAX_LIST_DEPTH, is an error in `errors`, and the other items are still returned. A List whose
    items are not a list (`items: null`) is an error, not an object of kind List."""
    if _broken_list(obj):
        errors.append(f"{where}: items is not a list (a {type(obj.get('items')).__name__})")
        return
    if not is_list(obj):
        yield Manifest(where, dict(obj))
        return
    if depth >= MAX_LIST_DEPTH:
        errors.append(f"{where}: Lists nested more than {MAX_LIST_DEPTH} deep")
        return
    for position, item in enumerate(obj["items"]):
        at = f"{where}[{position}]"
        if isinstance(item, Mapping):
            yield from expand_lists(item, at, errors, depth + 1)
        else:
            errors.append(f"{at}: a List item must be a mapping, got {type(item).__name__}")


def _broken_list(obj: Mapping[str, Any]) -> bool:
    """A List without a list of items: `kind: List` without one, or a `...List` whose `items` is
    something else (a CRD's kind may end in List and hold no items)."""
    kind, items = obj.get("kind"), obj.get("items")
    if not isinstance(kind, str) or not kind.endswith("List") or isinstance(items, list):
        return False
    return kind == "List" or "items" in obj
