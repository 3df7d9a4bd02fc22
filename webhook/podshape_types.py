"""What `podshape` and `podshape_scheduling` both say: a problem, and a JSON value's type in words."""

from __future__ import annotations

Problem = tuple[str, str]
"""(field path, what is wrong)."""


def member_path(path: str, key: object) -> str:
    """`path.key`, or `path["key"]` for a key with dots or slashes (a label, a resource name), as
    violations write `limits["nvidia.com/gpu"]`."""
    text = str(key)
    return f'{path}["{text}"]' if "." in text or "/" in text else f"{path}.{text}"


def type_name(value: object) -> str:
    """What a JSON value is, in words (`a number`), for messages."""
    if value is None:
        return "null"
    names = {
        str: "a string",
        int: "a number",
        float: "a number",
        bool: "a boolean",
        list: "a list",
        dict: "an object",
    }
    return names.get(type(value), type(value).__name__)
