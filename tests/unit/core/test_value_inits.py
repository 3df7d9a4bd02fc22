"""Value classes that write out their own __init__ (init=False, so mypyc compiles it) behave as
the __init__ dataclasses would generate: the same parameters in field order, the same defaults,
every field set, and still frozen."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
from typing import Any

import pytest

import webhook
from webhook.core.env import Env
from webhook.core.model import (
    DEFAULT_POLICY,
    UNKNOWN_INVENTORY,
    Accelerator,
    Catalog,
    Finding,
    Injection,
    SliceOffer,
    Template,
    TemplateMatch,
    Violation,
)
from webhook.core.need import Need
from webhook.core.placement import Placement
from webhook.core.pod_resources import TemplateFills
from webhook.core.podview import PodView
from webhook.core.resources import Kind, SuggestionBudget
from webhook.core.selection import Plan


def example_values() -> dict[str, dict[str, Any]]:
    """Per class, a value of the declared type for each field, no two alike (the compiled
    __init__ checks types, and equal values would hide two fields swapped)."""
    offer = SliceOffer("1g.10gb", "mixed", "nvidia.com/mig-1g.10gb", 9728, 1 / 7, 7, ("A100",), 1)
    view = PodView("spec", "metadata", (), {"app": "x"}, {"note": "y"}, True)
    template = Template("t", "", "batch", 1, TemplateMatch(), Accelerator(), Injection())
    catalog = Catalog(templates={}, policies=(), ranked=())
    finding = Finding("RewrittenToMig", "spec", "why")
    env = Env({"kind": "Pod"}, view, "ns", DEFAULT_POLICY, template, UNKNOWN_INVENTORY, Need(), Plan())
    return {
        "Finding": {"code": "a", "path": "b", "message": "c"},
        "Violation": {"code": "a", "path": "b", "message": "c", "outcome": "warn"},
        "Context": {
            "catalog": catalog, "inventory": UNKNOWN_INVENTORY, "namespace": "ns", "operation": "UPDATE",
            "dry_run": True, "old_object": {"kind": "Pod"}, "mutate_templates": False,
        },
        "Decision": {
            "allowed": True, "template": "t", "policy": "p", "mode": "warn",
            "violations": (Violation("a", "b", "c", "warn"),), "warnings": ("w",), "mutated": {"kind": "Pod"},
            "patch": ({"op": "remove", "path": "/a"},),
        },
        "Env": {
            "pod": {"kind": "Pod"}, "view": view, "namespace": "ns", "policy": DEFAULT_POLICY,
            "template": template, "inventory": UNKNOWN_INVENTORY, "need": Need(1, 0.5), "plan": Plan(offer),
            "placement": Placement((("pool", "train"),), None),
            "fills": TemplateFills({("containers", 0): ({"cpu": "1"}, {})}, {}),
            "suggestions": SuggestionBudget(7), "catalog": catalog,
        },
        "AccelRequest": {
            "resource": "nvidia.com/gpu", "kind": Kind.WHOLE, "request": "1", "limit": "2", "count": 2,
            "consistent": False,
        },
        "ContainerView": {
            "group": "containers", "index": 3, "name": "c", "path": "spec.containers[name=c]", "image": "i",
            "sidecar": True, "accel": (), "visible_devices": "all", "source": {"args": ["x"]},
        },
        "PodView": {
            "base": "spec", "meta": "metadata", "containers": (), "labels": {"a": "1"},
            "annotations": {"b": "2"}, "has_resource_claims": True, "queued": True, "grouped": False,
        },
        "Plan": {"offer": offer, "rewrite": True, "findings": (finding,)},
        "Evaluation": {"template": template, "findings": (finding,), "env": env},
        "Need": {"memory_bytes": 10, "compute_share": 0.25},
        "Review": {
            "uid": "u", "kind": "Pod", "operation": "CREATE", "namespace": "ns", "name": "n", "dry_run": True,
            "obj": {"kind": "Pod"}, "old_obj": {"kind": "Pod", "old": True}, "group": "",
            "sub_resource": "ephemeralcontainers",
        },
    }  # fmt: skip


EXAMPLES = example_values()


def written_out_inits() -> list[type]:
    found: dict[str, type] = {}
    for module_info in pkgutil.walk_packages(webhook.__path__, "webhook."):
        if module_info.name.startswith(("webhook.__main__", "webhook.commands", "webhook.server")):
            continue  # entry points and the flask side: nothing of this kind, and imports flask
        module = importlib.import_module(module_info.name)
        for value in vars(module).values():
            if inspect.isclass(value) and value.__module__ == module.__name__ and _written_out(value):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return sorted(found.values(), key=lambda cls: cls.__qualname__)


def _written_out(cls: type) -> bool:
    params = getattr(cls, "__dataclass_params__", None)
    return params is not None and not params.init


CLASSES = written_out_inits()


def test_the_values_made_per_review_are_the_ones_found() -> None:
    assert {cls.__qualname__ for cls in CLASSES} == set(EXAMPLES)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__qualname__)
def test_every_field_is_set_by_keyword_and_by_position(cls: type) -> None:
    values = EXAMPLES[cls.__qualname__]
    assert list(values) == [f.name for f in dataclasses.fields(cls)]  # the table follows the class
    for made in (cls(**values), cls(*values.values())):
        for name, value in values.items():
            assert getattr(made, name) is value, name


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__qualname__)
def test_defaults_are_the_fields_defaults_and_the_rest_are_required(cls: type) -> None:
    fields = dataclasses.fields(cls)
    values = EXAMPLES[cls.__qualname__]
    required = {f.name: values[f.name] for f in fields if _default(f) is dataclasses.MISSING}
    made = cls(**required)
    for f in fields:
        expected = required[f.name] if f.name in required else _default(f)
        assert getattr(made, f.name) == expected, f.name
    for name in required:
        with pytest.raises(TypeError):
            cls(**{k: v for k, v in required.items() if k != name})
    with pytest.raises(TypeError):
        cls(**required, not_a_field=1)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__qualname__)
def test_still_frozen_equal_by_value_and_replaceable(cls: type) -> None:
    values = EXAMPLES[cls.__qualname__]
    made = cls(**values)
    assert made == cls(**values)
    first, *_ = values
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(made, first, values[first])
    copied = dataclasses.replace(made)  # every field passed back by keyword
    assert copied == made and copied is not made


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default
