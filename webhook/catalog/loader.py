"""Load templates and policies, validate them against the schemas and against each other.

Every problem is collected (file, line, field path, message); a catalog with any problem is
not built, so a typo never reaches the admission path.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from webhook.catalog.build import Checks, check_policy, read_policy, read_template
from webhook.catalog.dead_policies import dead_policies
from webhook.catalog.overlap import patterns_overlap, policy_overlaps, shadowed_templates, template_ties
from webhook.catalog.schema import SCHEMAS, schema_errors, without
from webhook.catalog.self_reads import selector_reads
from webhook.core.model import Catalog, Policy, Template
from webhook.podshape_types import type_name
from webhook.yamlio import (
    YAML_SUFFIXES,
    Document,
    YamlError,
    excerpt,
    iter_yaml_files,
    key_path,
    load_file,
    stat_problem,
)

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


@dataclass(frozen=True, order=True)
class Problem:
    source: str
    line: int | None
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}" if self.line else self.source
        return f"{where}: {self.path or '(document)'}: {self.message}"


class CatalogError(ValueError):
    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


_T = TypeVar("_T")


def load_catalog(paths: Iterable[str | Path]) -> Catalog:
    """Build the Catalog from files or directories; raise CatalogError listing every problem."""
    catalog, problems = _load(paths)
    if problems or catalog is None:
        raise CatalogError(problems)
    return catalog


def lint_paths(paths: Iterable[str | Path]) -> list[Problem]:
    return _load(paths)[1]


def _load(paths: Iterable[str | Path]) -> tuple[Catalog | None, list[Problem]]:
    problems: list[Problem] = []
    templates: list[tuple[Template, Document, Checks]] = []
    policies: list[tuple[Policy, Document, Checks]] = []
    for document in _documents(paths, problems):
        _read(document, templates, policies, problems)
    problems.extend(_cross_checks(templates, policies))
    if problems:
        return None, sorted(set(problems))
    return _assemble(templates, policies), []


def _assemble(
    templates: list[tuple[Template, Document, Checks]], policies: list[tuple[Policy, Document, Checks]]
) -> Catalog:
    by_name = {t.name: t for t, _, _ in templates}
    ranked = sorted(
        (t for t in by_name.values() if not t.match.is_empty), key=lambda t: (-t.priority, t.name)
    )
    return Catalog(templates=by_name, policies=tuple(p for p, _, _ in policies), ranked=tuple(ranked))


def _documents(paths: Iterable[str | Path], problems: list[Problem]) -> list[Document]:
    documents: list[Document] = []
    for file in _files([Path(raw) for raw in paths], problems):
        try:
            found = load_file(file, report_duplicates=True)
        except YamlError as exc:
            documents.extend(exc.documents)
            problems.append(Problem(str(file), exc.line, "", exc.problem))
            continue
        if not found:
            problems.append(Problem(str(file), 1, "", _NO_DOCUMENT))
        documents.extend(found)
    return documents


_NO_DOCUMENT = (
    "the file holds no YAML document (it is empty, or only comments, `---` or null);"
    " write the template or policy in it, or remove the file"
)
"""kubectl refuses such a file too ("no objects passed"); skipped, a template would silently vanish."""


def _files(given: list[Path], problems: list[Problem]) -> list[Path]:
    """The files given and those in the folders given, each real file once (a folder given twice,
    or inside another, is read once); what is missing or unreadable goes to `problems`, and so
    does each folder given that holds no file at all (a mistyped path, more likely than an empty
    catalog: an empty policies folder would silently give every namespace the default policy)."""
    found: dict[Path, Path] = {}
    for path in given:
        unreadable: list[OSError] = []
        files = list(iter_yaml_files(path, unreadable)) if path.is_dir() else [path]
        for exc in unreadable:
            where = exc.filename if exc.filename is not None else path
            problems.append(Problem(str(where), None, "", f"cannot read: {exc.strerror or exc}"))
        if not files and not unreadable:
            problems.append(_no_files(path))
        for file in files:
            if file.exists():
                found.setdefault(file.resolve(), file)
            else:
                problems.append(_missing(file))
    if not given:
        problems.append(_no_files(None))
    return list(found.values())


def _no_files(folder: Path | None) -> Problem:
    suffixes = ", ".join(YAML_SUFFIXES)
    shown = "(no path)" if folder is None else str(folder)
    return Problem(
        shown,
        None,
        "",
        f"no template or policy files ({suffixes}) in this folder (tests/, hidden folders and hidden"
        " files such as .team.yaml are not read); give only folders that hold some (templates and"
        " policies may share one), or a policy with namespaces: ['*'] for the built-in default's",
    )


def _missing(path: Path) -> Problem:
    """A path that is not there, or a symlink whose target is gone or that loops."""
    why = stat_problem(path) or "no such file or directory"
    target = f" (a symlink to {os.readlink(path)})" if path.is_symlink() else ""
    return Problem(str(path), None, "", f"{why}{target}")


def _read(
    document: Document,
    templates: list[tuple[Template, Document, Checks]],
    policies: list[tuple[Policy, Document, Checks]],
    problems: list[Problem],
) -> None:
    for duplicate in document.duplicates:
        path = key_path(document.node, duplicate.key, duplicate.line) or [duplicate.key]
        problems.append(Problem(document.source, duplicate.line, _dotted(path), str(duplicate)))
    data = document.data
    if not isinstance(data, dict):
        what = type_name(data)
        message = (
            f"the document is {what}, not a mapping (an object with apiVersion, kind, metadata and spec)"
        )
        problems.append(Problem(document.source, document.line_of([]), "", message))
        return
    kind = data.get("kind")
    if not isinstance(kind, str) or kind not in SCHEMAS:
        line = document.line_of(["kind"])
        got = "it is missing" if kind is None else f"got {excerpt(kind)}"
        problems.append(Problem(document.source, line, "kind", f"expected one of {sorted(SCHEMAS)}, {got}"))
        return
    errors = schema_errors(kind, data)
    checks = Checks(e.covers for e in errors)
    usable = without(data, [e.covers for e in errors])
    if kind == "WorkloadTemplate":
        templates.append((read_template(usable, document.source, checks), document, checks))
    else:
        check_policy(usable, checks)
        policies.append((read_policy(usable, document.source), document, checks))
    found = [(e.path, e.message) for e in errors] + [(e.path, e.message) for e in checks.errors]
    problems.extend(Problem(document.source, document.line_of(p), _dotted(p), m) for p, m in found)


def _cross_checks(
    templates: list[tuple[Template, Document, Checks]], policies: list[tuple[Policy, Document, Checks]]
) -> list[Problem]:
    """Checks between documents, each only on values that have no problem of their own."""
    template_names = [(name, d) for _, d, _ in templates if (name := _name(d))]
    problems = _duplicates(template_names, "template")
    problems += _duplicates([(name, d) for _, d, _ in policies if (name := _name(d))], "policy")
    names = {name for name, _ in template_names}
    for policy, document, checks in policies:
        problems += _policy_references(policy, document, checks, names)
    problems += _out_of_scope(
        [t for t, _, c in _first_of_each_name(templates) if c.clean(["spec", "match", "namespaces"])],
        [
            (p, d)
            for p, d, c in policies
            if c.clean(
                ["spec", "namespaces"], ["spec", "templates", "allowed"], ["spec", "templates", "default"]
            )
        ],
    )
    problems += _ties(
        [
            (t, d)
            for t, d, c in _first_of_each_name(templates)
            if c.clean(["spec", "match"], ["spec", "priority"])
        ]
    )
    problems += _policy_ties(
        [(p, d) for p, d, c in _first_of_each_name(policies) if c.clean(["spec", "namespaces"])]
    )
    if all(
        c.clean(["spec", "templates"]) for _, _, c in policies
    ):  # else which policy allows what is unknown
        problems += _shadowed(
            [
                (t, d)
                for t, d, c in _first_of_each_name(templates)
                if c.clean(["spec", "match"], ["spec", "priority"])
            ],
            [p for p, _, _ in policies],
        )
    problems += _dead_policies(
        [
            (p, d)
            for p, d, c in _first_of_each_name(policies)
            if c.clean(["spec", "namespaces"], ["spec", "excludedNamespaces"])
        ]
    )
    problems += [
        Problem(d.source, d.line_of(p), _dotted(p), m)
        for d, p, m in selector_reads(_first_of_each_name(templates))
    ]
    return problems


def _dead_policies(policies: list[tuple[Policy, Document]]) -> list[Problem]:
    located = {p.name: d for p, d in policies}
    problems = []
    for policy, why in dead_policies([p for p, _ in policies]):
        document = located[policy.name]
        line = document.line_of(["spec", "namespaces"])
        problems.append(Problem(document.source, line, "spec.namespaces", f"governs no namespace: {why}"))
    return problems


def _first_of_each_name(documents: list[tuple[_T, Document, Checks]]) -> list[tuple[_T, Document, Checks]]:
    """The named documents, a name's second definition left out: it is reported as defined twice,
    and a tie with its first would only say that again."""
    seen: set[str] = set()
    first = []
    for item in documents:
        name = _name(item[1])
        if name and name not in seen:
            seen.add(name)
            first.append(item)
    return first


def _ties(templates: list[tuple[Template, Document]]) -> list[Problem]:
    problems = []
    located = {t.name: d for t, d in templates}
    for tied, other, reason in template_ties([t for t, _ in templates]):
        document = located[other.name]
        message = f"could tie with template {tied.name} ({tied.source}): {reason}"
        problems.append(Problem(document.source, document.line_of(["spec", "match"]), "spec.match", message))
    return problems


def _shadowed(templates: list[tuple[Template, Document]], policies: list[Policy]) -> list[Problem]:
    problems = []
    located = {t.name: d for t, d in templates}
    for template, above in shadowed_templates([t for t, _ in templates], policies):
        document = located[template.name]
        message = (
            f"never chosen by this match: template {above.name} ({above.source}, priority"
            f" {above.priority}) matches every pod it could, and ranks first; give this template a"
            f" priority above {above.priority}, narrow {above.name}'s match, or remove this match"
            + (" (all but its namespaces, which keep its label to them)" if template.match.namespaces else "")
            + " to keep the template for its label and namespace defaults"
        )
        problems.append(Problem(document.source, document.line_of(["spec", "match"]), "spec.match", message))
    return problems


def _policy_ties(claiming: list[tuple[Policy, Document]]) -> list[Problem]:
    problems = []
    policy_docs = {p.name: d for p, d in claiming}
    for first, second, pattern, other in policy_overlaps([p for p, _ in claiming]):
        document = policy_docs[second.name]
        message = f"namespace {pattern!r} is also claimed by policy {first.name} ({first.source})"
        if other != pattern:
            message = (
                f"namespace pattern {pattern!r} ties with {other!r} of policy {first.name} ({first.source}):"
                " a namespace could match both, and neither ranks above the other (as many literal"
                " characters, and as many single-character wildcards)"
            )
        problems.append(
            Problem(document.source, document.line_of(["spec", "namespaces"]), "spec.namespaces", message)
        )
    return problems


def _name(document: Document) -> str:
    """The name a document gives itself, even one the schema refuses: a policy that names it
    then gets no second, cascading 'no template' problem."""
    metadata = document.data.get("metadata") if isinstance(document.data, dict) else None
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) else ""


def _duplicates(named: list[tuple[str, Document]], what: str) -> list[Problem]:
    seen: dict[str, Document] = {}
    problems = []
    for name, document in named:
        if name in seen:
            first = seen[name]
            where = f"{first.source}:{first.line_of(['metadata', 'name'])}"
            message = f"{what} {name!r} is defined twice (first in {where})"
            problems.append(
                Problem(document.source, document.line_of(["metadata", "name"]), "metadata.name", message)
            )
        seen.setdefault(name, document)
    return problems


def _policy_references(policy: Policy, document: Document, checks: Checks, names: set[str]) -> list[Problem]:
    problems = []
    allowed_clean = checks.clean(["spec", "templates", "allowed"])
    for name in sorted(policy.allowed_templates or ()) if allowed_clean else ():
        if name not in names:
            path: list[str | int] = ["spec", "templates", "allowed"]
            problems.append(
                Problem(document.source, document.line_of(path), _dotted(path), f"no template {name!r}")
            )
    default = policy.default_template
    if default is not None and checks.clean(["spec", "templates", "default"]):
        path = ["spec", "templates", "default"]
        if default not in names:
            problems.append(
                Problem(document.source, document.line_of(path), _dotted(path), f"no template {default!r}")
            )
        elif (
            allowed_clean and policy.allowed_templates is not None and default not in policy.allowed_templates
        ):
            message = f"default template {default!r} is not in templates.allowed"
            problems.append(Problem(document.source, document.line_of(path), _dotted(path), message))
    return problems


def _out_of_scope(templates: list[Template], policies: list[tuple[Policy, Document]]) -> list[Problem]:
    """A template a policy allows whose `match.namespaces` shares no name with the policy's
    namespaces: it can never apply where the policy governs (a label is TemplateNotAllowed, a match
    never holds). Judged exactly (overlap.patterns_overlap), so `team-*` against `team-a` loads;
    the policy's default is exempt, as it applies in its namespaces whatever its scope."""
    scopes = {t.name: t.match.namespaces for t in templates if t.match.namespaces}
    problems = []
    for policy, document in policies:
        barred = [
            name
            for name in sorted(policy.allowed_templates or ())
            if name in scopes
            and name != policy.default_template
            and policy.namespaces
            and not any(
                patterns_overlap(ours, theirs) for ours in policy.namespaces for theirs in scopes[name]
            )
        ]
        path: list[str | int] = ["spec", "templates", "allowed"]
        for name in barred:
            message = (
                f"template {name!r} can never apply here: its match.namespaces"
                f" ({', '.join(sorted(scopes[name]))}) admit none of this policy's namespaces"
                f" ({', '.join(policy.namespaces)}); remove it, or add the namespaces to its match"
            )
            problems.append(Problem(document.source, document.line_of(path), _dotted(path), message))
    return problems


def _dotted(path: Sequence[str | int]) -> str:
    """spec.inject.labels["example.com/team"]: a key that is not a plain word is quoted."""
    text = ""
    for step in path:
        if isinstance(step, int):
            text += f"[{step}]"
        elif not _PLAIN_KEY.fullmatch(step):
            text += f"[{json.dumps(step)}]"
        else:
            text += f".{step}" if text else step
    return text


def build_from_data(items: Iterable[dict[str, Any]], source: str = "<memory>") -> Catalog:
    """A catalog from already-parsed documents (tests and benchmarks build catalogs in memory)."""
    problems: list[Problem] = []
    templates: list[tuple[Template, Document, Checks]] = []
    policies: list[tuple[Policy, Document, Checks]] = []
    for index, data in enumerate(items):
        _read(Document(source, index, data, None), templates, policies, problems)
    problems.extend(_cross_checks(templates, policies))
    if problems:
        raise CatalogError(problems)
    return _assemble(templates, policies)
