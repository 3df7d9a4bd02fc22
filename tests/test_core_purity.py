"""The decision core stays pure: no web framework, cluster client, YAML, schema or crypto imports.

Every module under webhook/core is parsed (not imported) and each import is checked, including
imports inside functions and `if TYPE_CHECKING` blocks, so the rule cannot be dodged by a late import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT

CORE = ROOT / "webhook" / "core"
FORBIDDEN = (
    "flask",
    "kubernetes",
    "yaml",
    "jsonschema",
    "cryptography",
    "gunicorn",
    "prometheus_client",
    "werkzeug",
)
OUTSIDE_CORE = (
    "webhook.server",
    "webhook.commands",
    "webhook.cli",
    "webhook.inventory",
    "webhook.catalog",
    "webhook.tls",
)


def imported_modules(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in (
            "import_module",
            "__import__",
        ):
            found.extend(
                (node.lineno, str(arg.value)) for arg in node.args[:1] if isinstance(arg, ast.Constant)
            )
    return found


def banned(module: str) -> bool:
    top = module.split(".")[0]
    return top in FORBIDDEN or module.startswith(OUTSIDE_CORE)


CORE_FILES = sorted(CORE.rglob("*.py"))


def test_the_core_has_modules() -> None:
    assert len(CORE_FILES) > 20


@pytest.mark.parametrize("path", CORE_FILES, ids=lambda p: str(p.relative_to(CORE)))
def test_core_module_imports_nothing_impure(path: Path) -> None:
    offending = [
        f"{path.relative_to(ROOT)}:{line}: {module}"
        for line, module in imported_modules(path)
        if banned(module)
    ]
    assert offending == []


def test_the_scanner_sees_every_form_of_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import yaml\nfrom flask import Flask\nimport os.path\n"
        "def f():\n    import kubernetes.client\n    return __import__('jsonschema')\n"
        "from importlib import import_module\nimport_module('cryptography.x509')\nfrom . import sibling\n",
        encoding="utf-8",
    )
    modules = [m for _, m in imported_modules(sample)]
    assert sorted(m for m in modules if banned(m)) == [
        "cryptography.x509",
        "flask",
        "jsonschema",
        "kubernetes.client",
        "yaml",
    ]
