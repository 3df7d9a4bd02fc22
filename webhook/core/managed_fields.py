"""What the client that sent an object set itself, read from `metadata.managedFields`.

The API server records the fields of the object as the client sent it before its own admission
plugins run: the values they fill in (the Priority plugin's class name and priority, the
ServiceAccount plugin's token volume, the default tolerations) belong to no manager when a
webhook sees the object (the reference requests show it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from webhook.core.model import MAPPINGS

PRIORITY_CLASS: Final = ("spec", "priorityClassName")


def client_set(obj: Mapping[str, Any], path: tuple[str, ...]) -> bool | None:
    """Whether a manager set the field at `path`; None when the object carries no managedFields
    (a manifest read from a file), so nothing is known."""
    metadata = obj.get("metadata")
    entries = metadata.get("managedFields") if isinstance(metadata, MAPPINGS) else None
    if not isinstance(entries, list) or not entries:
        return None
    return any(isinstance(e, MAPPINGS) and _owns(e.get("fieldsV1"), path) for e in entries)


def _owns(fields: object, path: tuple[str, ...]) -> bool:
    for name in path:
        if not isinstance(fields, MAPPINGS):
            return False
        fields = fields.get(f"f:{name}")
    return fields is not None
