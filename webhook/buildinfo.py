"""Which build of the decision core is running: compiled by mypyc (setup.py) or pure Python."""

from __future__ import annotations

from importlib.machinery import EXTENSION_SUFFIXES


def core_compiled() -> bool:
    """True when webhook.core and webhook.admission were imported from compiled extensions."""
    from webhook import admission
    from webhook.core import decide

    return all(str(module.__file__).endswith(tuple(EXTENSION_SUFFIXES)) for module in (decide, admission))


def core_build() -> str:
    return "compiled with mypyc" if core_compiled() else "pure Python"
