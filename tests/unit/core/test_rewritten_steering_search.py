"""Where the rewrite's node requirements are found in a term a later webhook changed: the
single pass of `_steering_from` against the rule it states, written as plainly as it reads."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webhook.buildinfo import core_compiled
from webhook.core.mutators.mig_affinity import STEERING_KEYS
from webhook.core.mutators.packing_affinity import MAX_NODES
from webhook.core.rewritten import MAX_INSERTED_TERMS, _aligned, _steering_at, _steering_from, _unpreferred

KEYS = [*sorted(STEERING_KEYS)[:2], "topology.kubernetes.io/zone"]


def by_the_rule(expressions: list[Any], start: int, count: int) -> int | None:
    """Of the blocks of `count` `In` requirements on keys a rewrite writes, from `start` on, the
    last that every earlier block admits (its values, key by key, within theirs)."""
    blocks = [
        at
        for at in range(start, len(expressions) - count + 1)
        if _steering_at(expressions, at, count)
        and all(e.get("operator") == "In" for e in expressions[at : at + count])
    ]

    def admits(wider: list[Any], block: list[Any]) -> bool:
        return all(
            all(v in w.get("values", []) for v in e.get("values", []))
            for e in block
            for w in wider
            if w["key"] == e["key"]
        )

    for at in reversed(blocks):
        block = expressions[at : at + count]
        if all(admits(expressions[b : b + count], block) for b in blocks if b < at):
            return at
    return None


requirements = st.lists(
    st.fixed_dictionaries(
        {
            "key": st.sampled_from(KEYS),
            "operator": st.sampled_from(["In", "In", "In", "NotIn", "Exists"]),
            "values": st.lists(st.sampled_from(["A100", "H100", "L4"]), max_size=3),
        }
    ),
    max_size=8,
)


@settings(max_examples=400, derandomize=True)
@given(requirements, st.integers(0, 3), st.integers(1, 2))
def test_the_single_pass_finds_the_block_the_rule_names(
    expressions: list[Any], start: int, count: int
) -> None:
    assert _steering_from(expressions, start, count) == by_the_rule(expressions, start, count)


def test_a_forged_record_over_wide_then_narrow_requirements_is_read_in_one_pass() -> None:
    """Each block was checked against every earlier one, value by value in lists: 500 wide `In`
    requirements of 500 values then 500 narrow ones (1 MB) took 1.2 s to read pure; the answer
    is the same (the first narrow one: the wide ones admit it, and it admits no later one)."""
    key = sorted(STEERING_KEYS)[0]
    for size in (20, 500):
        values = [f"z{i}" for i in range(size)]
        wide = [{"key": key, "operator": "In", "values": values} for _ in range(size)]
        narrow = [{"key": key, "operator": "In", "values": [v]} for v in values]
        assert _steering_from(wide + narrow, 0, 1) == size
    assert by_the_rule(wide[:20] + narrow[:20], 0, 1) == 20


def test_the_rewrites_term_is_looked_for_up_to_sixteen_inserted_terms_on() -> None:
    """Each offset reads the whole record: a forged record of 3,000 terms, with a term that is no
    rewrite's every 3,000, was read at each of 3,000 offsets (9 s pure for a 650 KB pod). A later
    webhook inserts a term or a few; past `MAX_INSERTED_TERMS` the record is read in place."""
    key = sorted(STEERING_KEYS)[0]
    rewrites = {"matchExpressions": [{"key": key, "operator": "In", "values": ["A100"]}]}
    zone = {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}]}
    record: list[tuple[int, int] | None] = [(0, 1)]
    assert MAX_INSERTED_TERMS == 16
    assert _aligned(record, [zone] * 16 + [rewrites]) == [None] * 16 + record
    assert _aligned(record, [zone] * 17 + [rewrites]) == record


def test_a_forged_record_longer_than_the_rewrite_writes_is_found_nowhere() -> None:
    """Each place read the whole block: a record of 4,000 requirements over 8,000 on a product
    (a 650 KB pod) took 12 s pure to read, each review. The rewrite writes each key once."""
    key = sorted(STEERING_KEYS)[0]
    expressions = [{"key": key, "operator": "In", "values": ["A100"]} for _ in range(2000)]
    assert _steering_from(expressions, 0, len(STEERING_KEYS)) == 2000 - len(STEERING_KEYS)
    assert _steering_from(expressions, 0, len(STEERING_KEYS) + 1) is None
    assert _steering_from(expressions, 0, 1000) is None


def test_a_forged_packing_record_longer_than_packing_writes_is_found_nowhere() -> None:
    """Each place read that many preferences: a record of 4,000 over 8,000 (an 870 KB pod, with
    a preference of the pod's own every 4,000) took 5.6 s pure to read. Packing writes at most
    MAX_NODES terms; the pod's preferences stay as it has them."""
    term = {
        "weight": 1,
        "preference": {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a"]}]},
    }
    spec = {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [term] * 40}}}
    read = _unpreferred(spec, (0, MAX_NODES))
    assert (
        len(read["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"])
        == 40 - MAX_NODES
    )
    assert _unpreferred(spec, (0, MAX_NODES + 1)) == spec


counts_calls = pytest.mark.skipif(
    core_compiled(),
    reason="counts calls by patching the module's functions, which compiled code calls directly",
)


@counts_calls
def test_the_record_is_read_in_place_and_as_many_terms_on_as_were_added(monkeypatch: Any) -> None:
    """Each offset tried read the whole record: a forged record of 10,000 terms (a 1 MB pod)
    read at each of 16 offsets took 0.4 s pure of each review. A later webhook that inserted
    terms ahead moved the rewrite's by as many as it added: the record is read there."""
    import webhook.core.rewritten as rewritten

    key = sorted(STEERING_KEYS)[0]
    rewrites = {"matchExpressions": [{"key": key, "operator": "In", "values": ["A100"]}]}
    zone = {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}]}
    reads: list[object] = []
    counted = rewritten._steering_in
    monkeypatch.setattr(
        rewritten, "_steering_in", lambda term, place: reads.append(place) or counted(term, place)
    )
    record: list[tuple[int, int] | None] = [(0, 1)] * 1000
    assert _aligned(record, [rewrites] * 999 + [zone] * 17) == record
    assert len(reads) <= 2 * len(record)
    assert _aligned([(0, 1)], [zone] * 3 + [rewrites]) == [None] * 3 + [(0, 1)]


@counts_calls
def test_the_packing_preferences_are_found_reading_each_preference_once(monkeypatch: Any) -> None:
    """Read block by block, each preference was read MAX_NODES times: a record of 16 over 10,000
    preferences with one of the pod's own every 16th (a 1 MB pod) took 0.1 s of each review. The
    first run of the recorded count, from its place on, is the packing's."""
    import webhook.core.rewritten as rewritten

    packing = {
        "weight": 1,
        "preference": {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a"]}]},
    }
    own = {
        "weight": 1,
        "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
    }
    reads: list[object] = []
    counted = rewritten.is_packing_term
    monkeypatch.setattr(rewritten, "is_packing_term", lambda term: reads.append(term) or counted(term))
    broken = ([packing] * (MAX_NODES - 1) + [own]) * 100
    spec = {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": broken}}}
    assert _unpreferred(spec, (0, MAX_NODES)) == spec
    assert len(reads) == len(broken)
    terms = [own, packing, own, packing, packing, own, packing, packing]
    spec = {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": terms}}}
    kept = [own, packing, own, own, packing, packing]
    assert _unpreferred(spec, (1, 2)) == {
        "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": kept}}
    }
    assert _unpreferred(spec, (7, 2)) == spec
