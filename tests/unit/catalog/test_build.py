"""Semantic template and policy checks a schema cannot express."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.builders import make_catalog, policy_doc, template_doc
from webhook.catalog import CatalogError

PER_GPU = "spec.inject.resources.perGpu"
OVERRIDES = "spec.accelerator.podOverrides.gpuMemory"


def problems(*documents: dict[str, Any]) -> set[str]:
    with pytest.raises(CatalogError) as caught:
        make_catalog(*documents)
    return {p.path for p in caught.value.problems}


@pytest.mark.parametrize(
    ("accelerator", "inject", "path"),
    [
        ({"gpu": "required", "devices": {"min": 3, "max": 2}}, None, "spec.accelerator.devices"),
        ({"gpu": "required", "devices": {"max": 0}}, None, "spec.accelerator.devices.max"),
        ({"gpu": "forbidden", "mig": "preferred", "gpuMemory": "1Gi"}, None, "spec.accelerator.mig"),
        ({"gpu": "forbidden", "devices": {"min": 1}}, None, "spec.accelerator.devices.min"),
        (
            {"gpu": "forbidden"},
            {"resources": {"perGpu": {"requests": {"cpu": "1"}}}},
            "spec.inject.resources.perGpu",
        ),
        (
            {
                "gpu": "required",
                "gpuMemory": "8Gi",
                "podOverrides": {"gpuMemory": {"min": "20Gi", "max": "10Gi"}},
            },
            None,
            "spec.accelerator.podOverrides.gpuMemory",
        ),
        (
            {"gpu": "required", "computeShare": 0.5, "podOverrides": {"computeShare": {"min": 2}}},
            None,
            "spec.accelerator.podOverrides.computeShare.min",
        ),
        ({"gpu": "required", "gpuMemory": "0"}, None, "spec.accelerator.gpuMemory"),
        ({"gpu": "required", "computeShare": 1.5}, None, "spec.accelerator.computeShare"),
        ({"gpu": "sometimes"}, None, "spec.accelerator.gpu"),
        ({"gpu": "required"}, {"shmSize": -5}, "spec.inject.shmSize"),
        (
            {"gpu": "required"},
            {"resources": {"perGpu": {"requests": {"cpu": -1}}}},
            PER_GPU + ".requests.cpu",
        ),
        (
            {"gpu": "required"},
            {"resources": {"perGpu": {"limits": {"memory": -1}}}},
            PER_GPU + ".limits.memory",
        ),
        (
            {"gpu": "forbidden"},
            {"resources": {"requests": {"memory": -1}}},
            "spec.inject.resources.requests.memory",
        ),
        (
            {"gpu": "required"},
            {"resources": {"perGpu": {"requests": {"memory": "32Gi"}, "limits": {"memory": "1Gi"}}}},
            PER_GPU + ".limits.memory",
        ),
        (
            {"gpu": "forbidden"},
            {"resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "500m"}}},
            "spec.inject.resources.limits.cpu",
        ),
        (
            {"gpu": "required"},
            {"resources": {"requests": {"cpu": "2"}, "perGpu": {"limits": {"cpu": "1"}}}},
            PER_GPU + ".limits.cpu",
        ),
        (  # 3 GPUs ask for 48Gi, above the fixed 40Gi limit
            {"gpu": "required", "devices": {"max": 4}},
            {"resources": {"perGpu": {"requests": {"memory": "16Gi"}}, "limits": {"memory": "40Gi"}}},
            "spec.inject.resources.limits.memory",
        ),
    ],
)
def test_contradictions_are_reported_at_their_field(
    accelerator: dict[str, Any], inject: dict[str, Any] | None, path: str
) -> None:
    assert problems(template_doc("t", accelerator=accelerator, inject=inject)) == {path}


@pytest.mark.parametrize(
    ("spec", "path"),
    [
        ({"mode": "strict"}, "spec.mode"),
        ({"mig": {"allowedProfiles": ["1g.10"]}}, "spec.mig.allowedProfiles[0]"),
        ({"mig": {"whenNoSliceFits": "ask"}}, "spec.mig.whenNoSliceFits"),
        ({"maxGpusPerPod": -1}, "spec.maxGpusPerPod"),
    ],
)
def test_policy_fields_are_validated(spec: dict[str, Any], path: str) -> None:
    assert problems(policy_doc("p", ["*"], **spec)) == {path}


@pytest.mark.parametrize(
    ("profiles", "path"),
    [
        (["1g.10gb", "2g.20gb", "3g.4gb", "1g.20gb"], "spec.mig.allowedProfiles[2]"),  # 3g.40gb meant
        (["9g.900gb"], "spec.mig.allowedProfiles[0]"),
        (["1g.10gb.me"], "spec.mig.allowedProfiles[0]"),  # the resource spelling of 1g.10gb+me
    ],
)
def test_an_allowed_profile_no_gpu_has_is_refused_at_its_entry(profiles: list[str], path: str) -> None:
    assert problems(policy_doc("p", ["*"], mig={"allowedProfiles": profiles})) == {path}


def test_an_unknown_allowed_profile_names_the_closest_known_one() -> None:
    with pytest.raises(CatalogError) as caught:
        make_catalog(policy_doc("p", ["*"], mig={"allowedProfiles": ["3g.4gb", "1g.10gb.me"]}))
    messages = {p.path: p.message for p in caught.value.problems}
    assert "3g.40gb" in messages["spec.mig.allowedProfiles[0]"]
    assert "1g.10gb+me" in messages["spec.mig.allowedProfiles[1]"]


@pytest.mark.parametrize(
    ("written", "meant"),
    [("1g.24gbgfx", "1g.24gb+gfx"), ("1g.24gbme.all", "1g.24gb+me.all"), ("1g.24gb.gfx", "1g.24gb+gfx")],
)
def test_a_variant_written_as_a_label_spells_it_names_the_profile(written: str, meant: str) -> None:
    """A product label cannot hold `+` (`-MIG-1g.24gbgfx`): copied from one, the entry got only the
    schema's pattern, not the profile to write."""
    with pytest.raises(CatalogError) as caught:
        make_catalog(policy_doc("p", ["*"], mig={"allowedProfiles": ["1g.24gb", written]}))
    assert [p.path for p in caught.value.problems] == ["spec.mig.allowedProfiles[1]"]
    assert caught.value.problems[0].message.endswith(f"write {meant}")


def test_a_variant_no_gpu_has_of_a_known_size_names_the_plain_profile() -> None:
    with pytest.raises(CatalogError) as caught:
        make_catalog(policy_doc("p", ["*"], mig={"allowedProfiles": ["3g.40gb+me"]}))
    assert caught.value.problems[0].message.endswith("did you mean 3g.40gb?")


@pytest.mark.parametrize(
    ("written", "meant"),
    [("1g.24gb+me.al", "1g.24gb+me.all"), ("1g.24gb+gfxx", "1g.24gb+gfx"), ("1g.10gb-me", "1g.10gb+me")],
)
def test_a_typo_of_a_real_variant_names_that_variant(written: str, meant: str) -> None:
    with pytest.raises(CatalogError) as caught:
        make_catalog(policy_doc("p", ["*"], mig={"allowedProfiles": [written]}))
    assert caught.value.problems[0].message.endswith(f"did you mean {meant}?")


def test_a_large_bare_number_is_not_advised_as_that_many_gib() -> None:
    """1e6 bytes is under 1Mi, but 1,000,000 GiB is no GPU's memory either."""
    with pytest.raises(CatalogError) as caught:
        make_catalog(template_doc("t", accelerator={"gpu": "required", "gpuMemory": 1e6}))
    message = caught.value.problems[0].message
    assert "read as bytes" in message and "1000000.0Gi" not in message


def test_allowed_profiles_of_known_gpus_load() -> None:
    profiles = ["1g.10gb", "1g.10gb+me", "1g.24gb+me.all", "1g.24gb-me", "3g.40gb", "7g.80gb", "1g.5gb"]
    make_catalog(policy_doc("p", ["*"], mig={"allowedProfiles": profiles}))


@pytest.mark.parametrize("memory", [40, "40", "1.5", "512Ki", "1048575"])
@pytest.mark.parametrize(
    ("accelerator", "path"),
    [
        ({"gpuMemory": "MEMORY"}, "spec.accelerator.gpuMemory"),
        ({"gpuMemory": "8Gi", "podOverrides": {"gpuMemory": {"min": "MEMORY"}}}, OVERRIDES + ".min"),
        ({"gpuMemory": "8Gi", "podOverrides": {"gpuMemory": {"max": "MEMORY"}}}, OVERRIDES + ".max"),
    ],
)
def test_a_gpu_memory_below_1mi_is_refused_at_its_field(
    memory: object, accelerator: dict[str, Any], path: str
) -> None:
    """A bare number is read as bytes: `40` meant 40Gi and would fit any slice."""
    written = json.loads(json.dumps(accelerator).replace('"MEMORY"', json.dumps(memory)))
    assert problems(template_doc("t", accelerator={"gpu": "required", **written})) == {path}


def test_a_bare_gpu_memory_is_said_to_be_read_as_bytes_with_the_unit_to_write() -> None:
    with pytest.raises(CatalogError) as caught:
        make_catalog(template_doc("t", accelerator={"gpu": "required", "gpuMemory": 40}))
    [problem] = caught.value.problems
    assert problem.path == "spec.accelerator.gpuMemory"
    assert "bytes" in problem.message and "40Gi" in problem.message


@pytest.mark.parametrize("memory", ["1Mi", 1048576, "40Gi", "0.5Gi", "42949672960"])
def test_a_gpu_memory_of_1mi_or_more_loads(memory: object) -> None:
    bounds = {"min": memory, "max": memory}
    accelerator = {"gpu": "required", "gpuMemory": memory, "podOverrides": {"gpuMemory": bounds}}
    make_catalog(template_doc("t", accelerator=accelerator))


def test_two_templates_of_different_priority_never_tie() -> None:
    a = template_doc("a", match={"images": ["vllm/*"]}, priority=2)
    b = template_doc("b", match={"images": ["vllm/*"]}, priority=1)
    assert [t.name for t in make_catalog(a, b).ranked] == ["a", "b"]


@pytest.mark.parametrize(
    ("first", "second", "tie"),
    [
        ({"images": ["vllm/*"]}, {"images": ["*/vllm"]}, True),
        # matching is per pod: a pod with a vllm and an sglang container matches both
        ({"images": ["vllm/*"]}, {"images": ["sglang/*"]}, True),
        ({"images": ["vllm/*"], "namespaces": ["a"]}, {"images": ["sglang/*"], "namespaces": ["b"]}, False),
        ({"namespaces": ["a"]}, {"namespaces": ["b"]}, False),
        ({"namespaces": ["team-*"]}, {"namespaces": ["team-ml"]}, True),
        (
            {"podSelector": {"matchLabels": {"app": "x"}}},
            {"podSelector": {"matchLabels": {"app": "y"}}},
            False,
        ),
        (
            {"podSelector": {"matchLabels": {"app": "x"}}},
            {"podSelector": {"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}},
            False,
        ),
        ({"podSelector": {"matchLabels": {"app": "x"}}}, {"images": ["vllm/*"]}, True),
    ],
)
def test_templates_that_could_tie_are_refused_when_the_library_loads(
    first: dict[str, Any], second: dict[str, Any], tie: bool
) -> None:
    a, b = template_doc("a", match=first, priority=5), template_doc("b", match=second, priority=5)
    if tie:
        assert problems(a, b) == {"spec.match"}
    else:
        assert len(make_catalog(a, b).ranked) == 2


@pytest.mark.parametrize(
    ("first", "second", "tie"),
    [
        (["team-*"], ["team-*"], True),
        (["team-*"], ["*-prod"], True),  # team-prod: both 5 literal characters
        (["team-*"], ["team-ml-*"], False),  # the longer wins
        (["team-*"], ["prod-*"], False),  # no namespace matches both
        (["team-a"], ["team-*"], False),  # an exact name wins
        (["team-a"], ["team-a"], True),
    ],
)
def test_policies_whose_namespaces_could_tie_are_refused(
    first: list[str], second: list[str], tie: bool
) -> None:
    a, b = policy_doc("a", first), policy_doc("b", second)
    if tie:
        assert problems(a, b) == {"spec.namespaces"}
    else:
        assert len(make_catalog(a, b).policies) == 2


@pytest.mark.parametrize(
    "inject",
    [
        {"resources": {"perGpu": {"requests": {"cpu": "4", "memory": "32Gi"}, "limits": {"memory": "32Gi"}}}},
        {"resources": {"perGpu": {"requests": {"memory": "16Gi"}}, "limits": {"memory": "40Gi"}}},
        {"resources": {"requests": {"cpu": "1"}, "perGpu": {"limits": {"cpu": "1"}}}},
    ],
)
def test_limits_at_or_above_their_requests_are_fine(inject: dict[str, Any]) -> None:
    """The last but one: 16Gi per GPU stays under 40Gi for the 2 GPUs devices.max allows."""
    make_catalog(template_doc("t", accelerator={"gpu": "required", "devices": {"max": 2}}, inject=inject))


def test_negative_and_undercut_messages_say_why() -> None:
    inject = {"shmSize": -5, "resources": {"perGpu": {"requests": {"cpu": "4"}, "limits": {"cpu": "1"}}}}
    with pytest.raises(CatalogError) as caught:
        make_catalog(template_doc("t", accelerator={"gpu": "required"}, inject=inject))
    messages = {p.path: p.message for p in caught.value.problems}
    assert messages["spec.inject.shmSize"].startswith("-5 is not valid here: it is negative")
    assert messages[PER_GPU + ".limits.cpu"].startswith("1 is below perGpu.requests.cpu 4: ")


@pytest.mark.parametrize("pattern", ["index.docker.io/nvidia/cuda*", "registry-1.docker.io/nvidia/cuda*"])
def test_an_image_pattern_under_another_docker_hub_name_is_refused(pattern: str) -> None:
    """Images are matched as nvidia/cuda and docker.io/nvidia/cuda: this one would match neither."""
    template = template_doc("t", match={"images": ["vllm/*", pattern]})
    with pytest.raises(CatalogError) as caught:
        make_catalog(template)
    assert [p.path for p in caught.value.problems] == ["spec.match.images[1]"]
    assert caught.value.problems[0].message.endswith("write nvidia/cuda*")


def test_counts_written_as_whole_floats_are_read_as_integers() -> None:
    """JSON Schema counts 2.0 and 1e1 integers; kept as floats, messages said 'at most 2.0 per
    pod' (found by QA)."""
    template = template_doc("t", {"gpu": "required", "devices": {"max": 4.0}}, match={"images": ["x/*"]})
    catalog = make_catalog(policy_doc("p", maxGpusPerPod=2.0), template)
    policy = next(p for p in catalog.policies if p.name == "p")
    assert (policy.max_gpus_per_pod, catalog.templates["t"].accelerator.max_devices) == (2, 4)
    assert (
        type(policy.max_gpus_per_pod) is int and type(catalog.templates["t"].accelerator.max_devices) is int
    )


@pytest.mark.parametrize(
    ("pattern", "written"),
    [
        ("nvcr.io/nvidia/riva/Riva-speech*", "nvcr.io/nvidia/riva/riva-speech*"),
        ("*/NVIDIA/*", "*/nvidia/*"),
        ("ghcr.io/SYSTRAN/faster-whisper:Latest", "ghcr.io/systran/faster-whisper:Latest"),
    ],
)
def test_an_image_pattern_with_upper_case_in_a_repository_path_is_refused(pattern: str, written: str) -> None:
    """An image's repository path is lower case, so such a pattern matched no pod, without a word
    (found by QA)."""
    with pytest.raises(CatalogError) as caught:
        make_catalog(template_doc("t", match={"images": ["vllm/*", pattern]}))
    assert [p.path for p in caught.value.problems] == ["spec.match.images[1]"]
    assert caught.value.problems[0].message.endswith(f"write {written}")


@pytest.mark.parametrize(
    "pattern",
    [
        "NVCR.IO/nvidia/*",
        "*Riva*",
        "nvcr.io/nvidia/riva/riva-speech:2.17.0-L4*",
        "*/x@sha256:AB*",
        "x[!/]Abc",
    ],
)
def test_upper_case_in_a_registry_a_tag_or_after_a_wildcard_loads(pattern: str) -> None:
    make_catalog(template_doc("t", match={"images": [pattern]}))


@pytest.mark.parametrize("pattern", ["*Llama 3.1 70B*", " *-70b*", "*-70b*\t"])
def test_a_model_pattern_holding_whitespace_is_refused(pattern: str) -> None:
    """A model is one word of a command line: such a pattern matched no pod, without a word."""
    with pytest.raises(CatalogError) as caught:
        make_catalog(template_doc("t", match={"models": ["*-72b*", pattern]}))
    assert [p.path for p in caught.value.problems] == ["spec.match.models[1]"]


def test_a_model_pattern_in_mixed_case_loads() -> None:
    """Models are matched in any case (Hugging Face ids are mixed case)."""
    make_catalog(template_doc("t", match={"models": ["meta-llama/Llama-3.1-70B*"]}))


def test_two_templates_of_one_priority_asking_for_other_models_tie() -> None:
    """A pod may run two servers, or name a model twice (`--model` and MODEL_ID): as with
    images, different models do not keep two templates apart."""
    with pytest.raises(CatalogError) as caught:
        make_catalog(
            template_doc("a", match={"models": ["*-70b*"]}, priority=5),
            template_doc("b", match={"models": ["*-72b*"]}, priority=5),
        )
    assert [p.path for p in caught.value.problems] == ["spec.match"]
