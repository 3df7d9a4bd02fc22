"""Which policy governs a namespace and which template a pod gets.

Templates resolve deterministically: the explicit label `gpu.aethervirt.io/template` beats the
namespace policy's default template, which beats selector/image matches; among those, higher
`priority` wins and the catalog refuses to load two templates that could tie.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import Any

from webhook.core.image_names import image_forms
from webhook.core.model import (
    DEFAULT_POLICY,
    TEMPLATE_LABEL,
    Catalog,
    Finding,
    Policy,
    Template,
    TemplateMatch,
)
from webhook.core.podview import PodView
from webhook.core.served_models import served_models


def policy_for(catalog: Catalog, namespace: str) -> Policy:
    """The most specific policy naming this namespace: exact name, then the longest pattern;
    among equals the first in the catalog (webhook.core.catalog_index keeps them in that order)."""
    return catalog.index.policy_for(namespace) or DEFAULT_POLICY


def is_excluded(policy: Policy, namespace: str) -> bool:
    return any(_namespace_matches(namespace, pattern) for pattern in policy.excluded_namespaces)


def excluded_by(catalog: Catalog, policy: Policy, namespace: str) -> Policy | None:
    """The policy that leaves the namespace alone: the governing one, or another one that names
    the namespace too (it would govern it but for a more specific one) and excludes it, unless
    the governing policy names the namespace exactly. So a new `gpu-*` policy does not take
    `gpu-operator` from the default policy's exclusions without a word (and have the operator's
    own pods refused), while a `team-pay*` policy's exclusion of `*-ci` reaches no `prod-ci`."""
    if is_excluded(policy, namespace):
        return policy
    if namespace in policy.namespaces:
        return None
    return catalog.index.excluding(namespace)


def _namespace_matches(namespace: str, pattern: str) -> bool:
    """fnmatchcase, without compiling a pattern that has no wildcard."""
    return namespace == pattern or (_is_pattern(pattern) and fnmatchcase(namespace, pattern))


def _is_pattern(text: str) -> bool:
    return "*" in text or "?" in text or "[" in text


def template_allowed(policy: Policy, name: str) -> bool:
    return policy.allowed_templates is None or name in policy.allowed_templates


def resolve_template(
    view: PodView, namespace: str, catalog: Catalog, policy: Policy
) -> tuple[Template | None, list[Finding]]:
    explicit = view.labels.get(TEMPLATE_LABEL)
    if explicit is not None:
        return _explicit(explicit, catalog, policy, namespace, f'{view.meta}.labels["{TEMPLATE_LABEL}"]')
    if policy.default_template and policy.default_template in catalog.templates:
        return catalog.templates[policy.default_template], []
    images = [form for c in view.containers for form in image_forms(c.image)]
    for template in catalog.index.candidates(images, namespace):
        if template_allowed(policy, template.name) and matches(template.match, view, namespace):
            return template, []
    if policy.require_template:
        return None, [_no_template(view, namespace, catalog, policy, images)]
    return None, []


def _no_template(
    view: PodView, namespace: str, catalog: Catalog, policy: Policy, images: list[str]
) -> Finding:
    """NoMatchingTemplate, naming the templates the pod matches that the policy does not allow."""
    allowed = _labels_taken(catalog, policy, namespace)
    candidates = catalog.index.candidates(images, namespace)
    barred = ", ".join(t.name for t in candidates if matches(t.match, view, namespace))
    matched = (
        f"pod matches only templates policy {policy.name} does not allow ({barred})"
        if barred
        else "pod matches no template"
    )
    message = (
        f"{matched} and namespace {namespace} requires one; "
        f"label it {TEMPLATE_LABEL}=<name> (allowed: {allowed})"
    )
    return Finding("NoMatchingTemplate", f"{view.meta}.labels", message)


def _explicit(
    name: str, catalog: Catalog, policy: Policy, namespace: str, label_path: str
) -> tuple[Template | None, list[Finding]]:
    """The template a pod names by label, unless its policy or the template's own
    `match.namespaces` keeps it from the namespace: a label the pod's author sets must not take a
    template (its tolerations, priority class...) where its author did not mean it to go. The
    policy's default template is never kept from its namespaces: unlabelled pods get it there."""
    template = catalog.templates.get(name)
    if template is None:
        known = ", ".join(sorted(catalog.templates)) or "none"
        return None, [Finding("UnknownTemplate", label_path, f"no template {name!r}; known: {known}")]
    if not template_allowed(policy, name):
        allowed = _labels_taken(catalog, policy, namespace)
        message = f"template {name!r} is not allowed by policy {policy.name}; allowed: {allowed}"
        return None, [Finding("TemplateNotAllowed", label_path, message)]
    if not _in_scope(template, policy, namespace):
        limited = ", ".join(sorted(template.match.namespaces))
        message = f"template {name!r} is for namespaces {limited} (its match.namespaces), not {namespace}"
        return None, [Finding("TemplateNotAllowed", label_path, message)]
    return template, []


def _in_scope(template: Template, policy: Policy, namespace: str) -> bool:
    """Whether the template's own `match.namespaces` admits the namespace; the policy's default
    always is: what the namespace's policy gives its unlabelled pods is its admin's choice."""
    scope = template.match.namespaces
    return (
        template.name == policy.default_template
        or not scope
        or any(fnmatchcase(namespace, pattern) for pattern in scope)
    )


def _labels_taken(catalog: Catalog, policy: Policy, namespace: str) -> str:
    """The templates a pod of the namespace may name by label, as `_explicit` judges the label: a
    large catalog keeps most teams' templates to their own namespaces, and naming every template
    the policy allows sent users to labels that were refused."""
    return ", ".join(t.name for t in labels_taken(catalog, policy, namespace)) or "none"


def labels_taken(catalog: Catalog, policy: Policy, namespace: str) -> list[Template]:
    """The templates a pod of the namespace may name by label (`_explicit` takes them), by name."""
    allowing = catalog.templates if policy.allowed_templates is None else policy.allowed_templates
    return [
        catalog.templates[name]
        for name in sorted(allowing)
        if name in catalog.templates and _in_scope(catalog.templates[name], policy, namespace)
    ]


def matches(match: TemplateMatch, view: PodView, namespace: str) -> bool:
    if match.is_empty:
        return False
    if match.namespaces and not any(fnmatchcase(namespace, n) for n in match.namespaces):
        return False
    if match.match_labels and any(view.labels.get(k) != v for k, v in match.match_labels.items()):
        return False
    if match.match_expressions and not all(_expression(e, view.labels) for e in match.match_expressions):
        return False
    if match.image_regex is not None and not _runs_image(match.image_regex, view):
        return False
    return match.model_regex is None or _serves_model(match.model_regex, view)


def _runs_image(regex: re.Pattern[str], view: PodView) -> bool:
    return any(regex.match(form) for c in view.containers for form in image_forms(c.image))


def _serves_model(regex: re.Pattern[str], view: PodView) -> bool:
    """Whether any container's server is told to load a model the patterns match: read only for
    a template that asks (`match.models`), after its other conditions hold."""
    for container in view.containers:
        if container.source is not None and any(regex.match(m) for m in served_models(container.source)):
            return True
    return False


def _expression(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator = expression["key"], expression["operator"]
    values = expression.get("values") or ()
    if operator == "In":
        return labels.get(key) in values
    if operator == "NotIn":
        return labels.get(key) not in values
    if operator == "Exists":
        return key in labels
    return key not in labels  # DoesNotExist
