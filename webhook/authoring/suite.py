"""Read test suites (kind TemplateTestSuite) into cases ready to run.

A suite is checked the way the catalog is: against its JSON Schema, then for what a schema
cannot say (files that exist, reason codes that exist, an expectation for every resource).
Every problem names the file, line and field path; a suite with any problem is not run.
"""

from __future__ import annotations

import json
import os
from argparse import ArgumentTypeError
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from webhook.authoring.fields import FieldPathError, parse_path
from webhook.catalog import CatalogError, Problem, load_catalog
from webhook.catalog.schema import known_fields, readable
from webhook.core.model import UNKNOWN_INVENTORY, Catalog, Inventory
from webhook.core.reasons import REASONS
from webhook.core.workloads import is_supported_object
from webhook.inventory.files import InventoryError, load_inventory
from webhook.manifests import Manifest, expand_lists, kind_problems, read_manifests
from webhook.podshape import identity_problems, shape_problems
from webhook.sent import extra_resource
from webhook.yamlio import Document, YamlError, load_documents, read_text, stat_problem

SUITE_KIND = "TemplateTestSuite"
SUITE_SUFFIXES = (".yaml", ".yml")
JsonPath = list[str | int]


@dataclass(frozen=True)
class Expectation:
    resource: str | None
    """Kind/name, or None when the input holds one resource."""
    checks: Mapping[str, Any]
    """The expectation's fields; `mutatedFile` is already read into `mutated`."""
    line: int | None = None


@dataclass(frozen=True)
class Case:
    name: str
    source: str
    line: int | None
    catalog: Catalog
    inventory: Inventory
    inventory_name: str
    namespace: str | None
    mutate_templates: bool | None
    resources: tuple[tuple[Manifest, Expectation], ...]
    as_if_sent: bool = False
    """Judge the webhook's decision even of a resource the shipped configurations do not send."""
    extra_resources: tuple[str, ...] = ()
    """The --extra-resource values the cluster's webhook configurations were generated with."""


@dataclass(frozen=True)
class Suite:
    name: str
    source: str
    cases: tuple[Case, ...]


@dataclass
class Loaded:
    suites: list[Suite] = field(default_factory=list)
    broken: dict[str, list[Problem]] = field(default_factory=dict)
    """Problems by suite file (or missing path); those files are not run."""


def suite_schema() -> dict[str, Any]:
    text = resources.files("webhook.authoring").joinpath("schemas", "suite.v1.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


@cache
def _validator() -> Draft202012Validator:
    return Draft202012Validator(suite_schema())


def suite_files(paths: Sequence[str | Path]) -> tuple[list[Path], list[Problem]]:
    """Suite files: given files, and the YAML files directly in given folders (subfolders hold inputs)."""
    files: list[Path] = []
    problems: list[Problem] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            named = [p for p in sorted(path.iterdir()) if is_suite_name(p.name)]
            found = [p for p in named if p.is_file()]
            dangling = [_missing(p) for p in named if p.is_symlink() and not p.exists()]
            if not found and not dangling:  # a mistyped CI path must not pass with nothing tested
                suffixes = ", ".join(f"*{suffix}" for suffix in SUITE_SUFFIXES)
                problems.append(
                    Problem(str(path), None, "", f"no test suites found: no {suffixes} file in it")
                )
            files.extend(found)
            problems.extend(dangling)
        elif path.is_file():
            files.append(path)
        else:
            problems.append(_missing(path))
    return files, problems


def is_suite_name(name: str) -> bool:
    """A folder's suite: `.yaml`/`.yml` in any case, as the catalog reads them (an `A100.YAML` was
    left out without a word), and not hidden: an editor's lock file (Emacs' `.#a100.yaml`, a
    symlink to nowhere) made the whole run fail while the suite was open."""
    return name.lower().endswith(SUITE_SUFFIXES) and not name.startswith(".")


def _missing(path: Path) -> Problem:
    """A path that is not there. A suite symlinked from a folder whose target is gone (a ConfigMap
    without the key) was left out of the folder's suites without a word, and the run passed; it
    is a suite that does not load, as a dangling symlink is to lint and check."""
    why = stat_problem(path) or "no such file or directory"
    target = f" (a symlink to {os.readlink(path)})" if path.is_symlink() else ""
    return Problem(str(path), None, "", f"{why}{target}")


def load_suites(paths: Sequence[str | Path]) -> Loaded:
    files, missing = suite_files(paths)
    loaded = Loaded(broken={problem.source: [problem] for problem in missing})
    resolver = _Resolver()
    for file in files:
        suites, problems = _load_file(file, resolver)
        loaded.suites.extend(suites)
        if problems:
            loaded.broken[str(file)] = problems
    return loaded


def _load_file(file: Path, resolver: _Resolver) -> tuple[list[Suite], list[Problem]]:
    syntax: list[Problem] = []
    try:
        documents = load_documents(read_text(file), str(file))
    except YamlError as exc:  # the suites before the error still run; the file fails
        documents = list(exc.documents)
        syntax.append(Problem(str(file), exc.line, "", exc.problem))
    if not documents and not syntax:
        return [], [Problem(str(file), None, "", f"no {SUITE_KIND} document")]
    suites: list[Suite] = []
    problems: list[Problem] = []
    for document in documents:
        reader = _SuiteReader(document, file.parent, resolver)
        suite = reader.read()
        problems.extend(reader.problems)
        if suite is not None and not reader.problems:
            suites.append(suite)
    return suites, problems + syntax


class _Resolver:
    """Catalogs and inventories loaded once per run, however many suites name them."""

    def __init__(self) -> None:
        self._catalogs: dict[tuple[Path, Path], Catalog | CatalogError] = {}
        self._inventories: dict[Path, Inventory | InventoryError] = {}

    def catalog(self, templates: Path, policies: Path) -> Catalog:
        key = (templates.resolve(), policies.resolve())
        if key not in self._catalogs:
            try:
                self._catalogs[key] = load_catalog([templates, policies])
            except CatalogError as exc:
                self._catalogs[key] = exc
        found = self._catalogs[key]
        if isinstance(found, CatalogError):
            raise found
        return found

    def inventory(self, path: Path) -> Inventory:
        key = path.resolve()
        if key not in self._inventories:
            try:
                self._inventories[key] = load_inventory(path)
            except InventoryError as exc:
                self._inventories[key] = exc
        found = self._inventories[key]
        if isinstance(found, InventoryError):
            raise found
        return found


class _SuiteReader:
    def __init__(self, document: Document, base: Path, resolver: _Resolver) -> None:
        self.document = document
        self.base = base
        self.resolver = resolver
        self.problems: list[Problem] = []

    def problem(self, path: JsonPath, message: str) -> None:
        """Record a problem once: cases that share the suite's inventory meet its problem each."""
        found = Problem(self.document.source, self.document.line_of(path), dotted(path), message)
        if found not in self.problems:
            self.problems.append(found)

    def read(self) -> Suite | None:
        data = self.document.data
        if not isinstance(data, dict) or data.get("kind") != SUITE_KIND:
            kind = data.get("kind") if isinstance(data, dict) else type(data).__name__
            self.problem(["kind"], f"expected kind {SUITE_KIND}, got {kind!r}")
            return None
        errors = sorted(_validator().iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
        for error in errors:
            self.problem(list(error.absolute_path), _schema_message(error))
        if errors:
            return None
        spec = data["spec"]
        self._extra_resources(spec.get("extraResources", ()))
        catalog = self._catalog(spec)
        cases = [self._case(spec, index, case, catalog) for index, case in enumerate(spec["cases"])]
        self._unique_names(spec["cases"])
        if catalog is None or any(c is None for c in cases):
            return None
        return Suite(data["metadata"]["name"], self.document.source, tuple(c for c in cases if c))

    def _catalog(self, spec: Mapping[str, Any]) -> Catalog | None:
        templates = self.base / spec.get("templates", "..")
        policies = self.base / spec.get("policies", "../../policies")
        try:
            return self.resolver.catalog(templates, policies)
        except CatalogError as exc:
            where: JsonPath = ["spec", "templates"] if "templates" in spec else ["spec"]
            self.problem(where, f"templates {templates} and policies {policies} do not load (below)")
            self.problems.extend(exc.problems)
            return None

    def _extra_resources(self, names: Sequence[str]) -> None:
        """As `check --extra-resource` and tools/gen_webhooks.py take them."""
        for position, name in enumerate(names):
            try:
                extra_resource(name)
            except ArgumentTypeError as exc:
                self.problem(["spec", "extraResources", position], str(exc))

    def _unique_names(self, cases: Sequence[Mapping[str, Any]]) -> None:
        seen: set[str] = set()
        for index, case in enumerate(cases):
            if case["name"] in seen:
                self.problem(["spec", "cases", index, "name"], f"case name {case['name']!r} is used twice")
            seen.add(case["name"])

    def _case(
        self, spec: Mapping[str, Any], index: int, case: Mapping[str, Any], catalog: Catalog | None
    ) -> Case | None:
        at: JsonPath = ["spec", "cases", index]
        inventory_name = case.get("inventory", spec["inventory"])
        inventory_at: JsonPath = [*at, "inventory"] if "inventory" in case else ["spec", "inventory"]
        inventory = self._inventory(inventory_name, inventory_at)
        manifests = self._inputs(case, at)
        if manifests is None:
            return None
        pairs = self._pair(manifests, case["expect"], [*at, "expect"])
        if catalog is None or inventory is None or pairs is None:
            return None
        return Case(
            name=case["name"],
            source=self.document.source,
            line=self.document.line_of(at),
            catalog=catalog,
            inventory=inventory,
            inventory_name=inventory_name,
            namespace=case.get("namespace", spec.get("namespace")),
            mutate_templates=case.get("mutateTemplates"),
            resources=tuple(pairs),
            as_if_sent=case.get("asIfSent", spec.get("asIfSent", False)),
            extra_resources=tuple(spec.get("extraResources", ())),
        )

    def _inventory(self, name: str, at: JsonPath) -> Inventory | None:
        if name == "none":
            return UNKNOWN_INVENTORY
        try:
            return self.resolver.inventory(self.base / name)
        except InventoryError as exc:
            self.problem(at, str(exc))
            return None

    def _inputs(self, case: Mapping[str, Any], at: JsonPath) -> list[Manifest] | None:
        if ("input" in case) == ("inputFile" in case):
            self.problem(at, "give exactly one of input and inputFile")
            return None
        if "inputFile" in case:
            found = self._read_file(case["inputFile"], [*at, "inputFile"])
            return None if found is None else self._well_formed(found, [*at, "inputFile"])
        where = f"{self.document.source}#{case['name']}"
        raw = case["input"] if isinstance(case["input"], list) else [case["input"]]
        errors: list[str] = []
        manifests = [m for i, obj in enumerate(raw) for m in expand_lists(obj, f"{where}[{i}]", errors)]
        for message in errors:  # an item that is not an object: `check` calls it bad input too
            self.problem([*at, "input"], message)
        return None if errors else self._well_formed(manifests, [*at, "input"])

    def _well_formed(self, manifests: list[Manifest], at: JsonPath) -> list[Manifest] | None:
        """The inputs, or None when one is malformed (`metadata: 5`, `spec: 7`): `check` calls that
        bad input, and deciding it leniently would make the case test what the API server refuses."""
        before = len(self.problems)
        for manifest in manifests:
            wrong = (
                (kind_problems(manifest.obj) or shape_problems(manifest.obj))
                if is_checkable(manifest)
                else [*identity_problems(manifest.obj), *kind_problems(manifest.obj)]
            )
            for path, problem in wrong:
                self.problem(at, f"{manifest.title}: {path}: {problem}")
        return manifests if len(self.problems) == before else None

    def _read_file(self, relative: str, at: JsonPath) -> list[Manifest] | None:
        path = self.base / relative
        if not path.is_file():
            self.problem(at, f"{stat_problem(path) or 'no such file'}: {path}")
            return None
        manifests, errors = read_manifests([str(path)])
        for message in errors:
            self.problem(at, message)
        return None if errors else manifests

    def _pair(
        self, manifests: list[Manifest], expect: Any, at: JsonPath
    ) -> list[tuple[Manifest, Expectation]] | None:
        found = [m for m in manifests if is_checkable(m)]
        checkable = {resource_key(m): m for m in found}
        if not checkable:
            self.problem(at[:-1], "the input holds no Pod or supported workload")
            return None
        if len(checkable) != len(found):
            self.problem(at[:-1], "two resources in the input have the same kind and name")
            return None
        listed = expect if isinstance(expect, list) else [expect]
        paths = [[*at, i] for i in range(len(listed))] if isinstance(expect, list) else [at]
        expectations = [self._expectation(e, p) for e, p in zip(listed, paths, strict=True)]
        if any(e is None for e in expectations):
            return None
        return self._match(checkable, [e for e in expectations if e], paths, at)

    def _match(
        self,
        checkable: dict[str, Manifest],
        expectations: list[Expectation],
        paths: list[JsonPath],
        at: JsonPath,
    ) -> list[tuple[Manifest, Expectation]] | None:
        pairs: dict[str, tuple[Manifest, Expectation]] = {}
        before = len(self.problems)
        for expectation, path in zip(expectations, paths, strict=True):
            key = expectation.resource or (next(iter(checkable)) if len(checkable) == 1 else None)
            if key is None:
                self.problem(path, f"the input holds {len(checkable)} resources; name one with `resource`")
            elif key not in checkable:
                self.problem([*path, "resource"], f"no {key} in the input; it has {', '.join(checkable)}")
            elif key in pairs:
                self.problem([*path, "resource"], f"{key} has two expectations")
            else:
                pairs[key] = (checkable[key], expectation)
        for key in checkable:
            if key not in pairs and len(self.problems) == before:
                self.problem(at, f"no expectation for {key}; every pod and workload in the input needs one")
        return list(pairs.values()) if len(self.problems) == before else None

    def _expectation(self, data: Mapping[str, Any], at: JsonPath) -> Expectation | None:
        before = len(self.problems)
        checks = dict(data)
        resource = checks.pop("resource", None)
        for key in ("codes", "codesInclude", "codesExclude"):
            for position, code in enumerate(checks.get(key, ())):
                self._known_code(code, [*at, key, position])
        for position, violation in enumerate(checks.get("violations", ())):
            self._known_code(violation["code"], [*at, "violations", position, "code"])
        for name in checks.get("fields", {}):
            try:
                parse_path(name)
            except FieldPathError as exc:
                self.problem([*at, "fields", name], str(exc))
        if "mutatedFile" in checks:
            checks["mutated"] = self._expected_object(checks, [*at, "mutatedFile"])
        if len(self.problems) > before:
            return None
        return Expectation(resource, checks, self.document.line_of(at))

    def _expected_object(self, checks: dict[str, Any], at: JsonPath) -> dict[str, Any] | None:
        if "mutated" in checks:
            self.problem(at, "give mutated or mutatedFile, not both")
            return None
        manifests = self._read_file(checks.pop("mutatedFile"), at)
        if manifests is not None and len(manifests) != 1:
            self.problem(at, f"the file must hold exactly one object, it holds {len(manifests)}")
            return None
        return manifests[0].obj if manifests else None

    def _known_code(self, code: str, at: JsonPath) -> None:
        if code not in REASONS:
            self.problem(at, f"unknown reason code {code!r} (see the README's Reason codes)")


def is_checkable(manifest: Manifest) -> bool:
    return is_supported_object(manifest.obj)


def resource_key(manifest: Manifest) -> str:
    return f"{manifest.kind}/{manifest.name}"


def _schema_message(error: Any) -> str:
    if error.validator == "additionalProperties":
        unknown = str(error.message).replace("Additional properties are not allowed", "unknown field")
        return unknown + known_fields(error)
    return readable(error)


def dotted(path: Sequence[str | int]) -> str:
    text = ""
    for step in path:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else str(step))
    return text
