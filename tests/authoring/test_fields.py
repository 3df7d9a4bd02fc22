"""Field paths in suites: JSON pointers and the dotted paths violations print."""

from __future__ import annotations

import pytest

from webhook.authoring.fields import FieldPathError, lookup, parse_path, same_value

POD = {
    "metadata": {"annotations": {"gpu.aethervirt.io/mig-profile": "3g.40gb", "a~b": "tilde"}},
    "spec": {
        "containers": [
            {"name": "sidecar", "image": "envoy"},
            {"name": "vllm", "resources": {"limits": {"nvidia.com/mig-3g.40gb": "1"}}},
        ]
    },
}


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ('spec.containers[name=vllm].resources.limits["nvidia.com/mig-3g.40gb"]', "1"),
        ("spec.containers[1].resources.limits", {"nvidia.com/mig-3g.40gb": "1"}),
        ("spec.containers[-1].name", "vllm"),
        ('metadata.annotations["gpu.aethervirt.io/mig-profile"]', "3g.40gb"),
        ("/metadata/annotations/gpu.aethervirt.io~1mig-profile", "3g.40gb"),
        ("/metadata/annotations/a~0b", "tilde"),
        ("/spec/containers/0/image", "envoy"),
    ],
)
def test_lookup_finds_the_field(path: str, value: object) -> None:
    assert lookup(POD, path) == (True, value)


@pytest.mark.parametrize(
    "path", ["spec.containers[name=other].image", "spec.containers[5]", "spec.nodeName", "/spec/containers/9"]
)
def test_lookup_reports_absent_fields(path: str) -> None:
    assert lookup(POD, path) == (False, None)


def test_parse_path_steps() -> None:
    assert parse_path('a.b[name=x].c["d.e"][2]') == ["a", "b", ("name", "x"), "c", "d.e", 2]


@pytest.mark.parametrize("path", ["", "a[", 'a["unclosed]', "a]b"])
def test_unreadable_paths_raise(path: str) -> None:
    with pytest.raises(FieldPathError):
        parse_path(path)


@pytest.mark.parametrize(
    "path",
    [
        "metadata.annotations.gpu.aethervirt.io/mig-profile",
        "spec.containers[name=vllm].resources.limits.nvidia.com/mig-3g.40gb",
        "metadata.labels.team/tier",
    ],
)
def test_an_unquoted_key_holding_a_slash_is_refused_not_split_at_its_dots(path: str) -> None:
    """A label, annotation or resource name written bare was split at its dots into keys no
    object has, so `...mig-profile: null` passed on a pod that had the annotation."""
    with pytest.raises(FieldPathError, match=r'whole name in quotes, as violations print it: annotations\["'):
        parse_path(path)


def test_an_unquoted_key_in_brackets_says_to_quote_it() -> None:
    with pytest.raises(FieldPathError, match=r'at character 36: .*in quotes: \["nvidia.com/gpu"\]'):
        parse_path("spec.containers[0].resources.limits[nvidia.com/gpu]")


@pytest.mark.parametrize(
    ("expected", "actual", "same"),
    [
        (1, "1", True),
        ("8Gi", "8Gi", True),
        (1, 1.0, True),
        ({"cpu": 4}, {"cpu": "4"}, True),
        ([1, "a"], ["1", "a"], True),
        (1, "2", False),
        (True, "True", False),
        (1, True, False),
        (None, "", False),
        ({"cpu": "4"}, {"cpu": "4", "memory": "1Gi"}, False),
        (["a"], ["a", "b"], False),
    ],
)
def test_same_value(expected: object, actual: object, same: bool) -> None:
    assert same_value(expected, actual) is same
