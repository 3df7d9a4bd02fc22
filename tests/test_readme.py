"""The README stays true: every reason code is documented, and its commands exist."""

from __future__ import annotations

import re

from tests.conftest import ROOT
from webhook.cli import build_parser
from webhook.core.reasons import REASONS

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_reason_code_is_in_the_readme_table() -> None:
    for reason in REASONS.values():
        assert f"| `{reason.code}` | {reason.cls} | {reason.summary} |" in README, reason.code


def test_readme_commands_exist() -> None:
    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for name in commands:
        assert f"gpu-webhook {name}" in README, name


def test_readme_scripts_exist() -> None:
    named = set(re.findall(r"scripts/[\w-]+\.sh", README))
    assert {"scripts/run.sh", "scripts/test.sh", "scripts/setup-compiled.sh"} <= named
    for script in sorted(named):
        assert (ROOT / script).exists(), script


def test_every_review_metric_is_in_the_readme_with_each_of_its_labels() -> None:
    """Each metric a review or a refused request counts, written `` `name` (`label`, ...) `` in
    **Logs and metrics**: the labels a dashboard or an alert has to select on. The reviews' `kind`
    and `allowed`, the violations' `code` and `outcome` and the bad requests' `reason` were left
    unsaid."""
    from prometheus_client import CollectorRegistry

    from webhook.server.metrics import create_metrics

    metrics = create_metrics()
    for collector in vars(metrics).values():
        if isinstance(collector, CollectorRegistry) or not hasattr(collector, "_labelnames"):
            continue
        name = collector._name
        name = name if name.endswith("_seconds") else f"{name}_total"
        documented = re.search(rf"`{name}`\s+\(([^)]*)\)", README)
        assert documented, f"{name} is not in the README with its labels"
        for label in collector._labelnames:
            assert f"`{label}`" in documented[1], f"{name}: label {label} is not in the README"
