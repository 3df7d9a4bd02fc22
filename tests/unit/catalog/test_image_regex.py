"""A template's image regex says exactly what fnmatchcase says for each of its glob patterns."""

from __future__ import annotations

from fnmatch import fnmatchcase

from hypothesis import example, given, settings
from hypothesis import strategies as st

from webhook.catalog.build import image_regex

PATTERNS = st.lists(st.text("ab/.:-*?[]!", min_size=1, max_size=8), min_size=1, max_size=4)
IMAGES = st.text("ab/.:-*?[]!\n", max_size=10)


@settings(max_examples=400, deadline=None)
@given(PATTERNS, IMAGES)
@example(["*"], "")
@example(["**"], "a")
@example(["*a*", "b*"], "xa")
@example(["*a*"], "a\nb")
@example(["a*"], "\na")
@example(["*[a]*", "*a"], "ba")
def test_the_regex_matches_where_a_glob_does(patterns: list[str], image: str) -> None:
    expected = any(fnmatchcase(image, p) for p in patterns)
    assert bool(image_regex(patterns).match(image)) == expected
