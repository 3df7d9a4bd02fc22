"""Run test suites: each resource of each case through the same decide_object the webhook uses."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from webhook.authoring.expectations import Mismatch, compare
from webhook.authoring.suite import Case, Expectation, Suite, load_suites, resource_key
from webhook.catalog import Problem
from webhook.core.model import Context, Decision
from webhook.core.workloads import decide_object
from webhook.manifests import Manifest

EXIT_PASSED, EXIT_FAILED, EXIT_BAD_SUITE = 0, 1, 2


@dataclass(frozen=True)
class ResourceResult:
    suite: str
    case: str
    resource: str
    source: str
    line: int | None
    mismatches: tuple[Mismatch, ...] = ()
    error: str | None = None
    """The webhook raised instead of deciding (a bug in the core, reported, not hidden)."""
    seconds: float = 0.0
    got: str = ""
    """What the webhook decided, in one line, shown with a failure."""

    @property
    def passed(self) -> bool:
        return not self.mismatches and self.error is None


@dataclass
class Run:
    suites: list[Suite] = field(default_factory=list)
    results: list[ResourceResult] = field(default_factory=list)
    broken: dict[str, list[Problem]] = field(default_factory=dict)
    """Problems by suite file that did not load."""

    @property
    def problems(self) -> list[Problem]:
        return [problem for problems in self.broken.values() for problem in problems]

    @property
    def failed(self) -> list[ResourceResult]:
        return [r for r in self.results if not r.passed]

    @property
    def exit_code(self) -> int:
        if self.problems:
            return EXIT_BAD_SUITE
        return EXIT_FAILED if self.failed else EXIT_PASSED


def run_paths(paths: Sequence[str | Path]) -> Run:
    loaded = load_suites(paths)
    run = Run(suites=loaded.suites, broken=loaded.broken)
    for suite in loaded.suites:
        run.results.extend(run_suite(suite))
    return run


def run_suite(suite: Suite) -> list[ResourceResult]:
    return [
        run_resource(suite, case, manifest, expectation)
        for case in suite.cases
        for manifest, expectation in case.resources
    ]


def run_resource(suite: Suite, case: Case, manifest: Manifest, expectation: Expectation) -> ResourceResult:
    started = time.perf_counter()
    result = ResourceResult(suite.name, case.name, resource_key(manifest), suite.source, expectation.line)
    try:
        decision = decide(case, manifest)
    except Exception as exc:  # a core bug: one failed case, not a crashed run
        return _with(result, started, error=f"{type(exc).__name__}: {exc}")
    mismatches = tuple(compare(expectation.checks, decision, manifest.obj))
    return _with(result, started, mismatches=mismatches, got=_got(decision))


def decide(case: Case, manifest: Manifest) -> Decision:
    namespace = manifest.namespace or case.namespace or "default"
    context = Context(
        catalog=case.catalog,
        inventory=case.inventory,
        namespace=str(namespace),
        mutate_templates=case.mutate_templates,
    )
    return decide_object(manifest.obj, context)


def _got(decision: Decision) -> str:
    verdict = "allowed" if decision.allowed else "denied"
    codes = ", ".join(decision.codes) or "no codes"
    return f"{verdict}, template {decision.template or '-'}, policy {decision.policy}: {codes}"


def _with(
    result: ResourceResult,
    started: float,
    mismatches: tuple[Mismatch, ...] = (),
    error: str | None = None,
    got: str = "",
) -> ResourceResult:
    return replace(result, mismatches=mismatches, error=error, seconds=time.perf_counter() - started, got=got)
