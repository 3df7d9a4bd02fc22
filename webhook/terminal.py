"""Text for a terminal or a CI log: what a cluster's or a manifest's author chose shows as written."""

from __future__ import annotations

import re

_UNSHOWABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")
"""Control characters (newlines, ESC), and Unicode's invisible and direction-changing ones: text the
cluster's nodes control (dcgm-exporter's labels as Prometheus answers them) or a manifest names (a
pod's, a container's, a test case's name, before any API server validates it) must not clear or
recolour a terminal, retitle it, forge a line, or reorder one. Every bidirectional control is one
of them, the Arabic letter mark (U+061C) too, as in a log line (webhook.jsoncodec)."""


def showable(line: str) -> str:
    """`line` with each such character written as Python writes it in a string: `\\n`, `\\x1b`,
    `\\u202e`. One line: a newline in it is escaped too."""
    return escape(_UNSHOWABLE, line)


def escape(characters: re.Pattern[str], text: str) -> str:
    """`text` with each match of `characters` written as Python writes it in a string."""
    return characters.sub(_escaped, text)


def _escaped(found: re.Match[str]) -> str:
    return found.group().encode("unicode_escape").decode("ascii")
