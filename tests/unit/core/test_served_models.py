"""The models a container's server is told to load (webhook.core.served_models), and templates
whose `match.models` picks pods by them: one vLLM image serves an 8B and a 70B alike."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import context, make_catalog, make_pod, template_doc
from webhook.core.decide import decide
from webhook.core.served_models import ITEMS_MAX, MODEL_MAX, WORDS_MAX, served_models

LARGE = "meta-llama/Llama-3.1-70B-Instruct"


@pytest.mark.parametrize(
    "container",
    [
        {"command": ["vllm", "serve", LARGE], "args": ["--port", "8000"]},
        {"args": [LARGE, "--tensor-parallel-size", "1"]},  # vllm/vllm-openai's entrypoint: vllm serve
        {"command": ["/usr/local/bin/vllm"], "args": ["serve", LARGE, "--tensor-parallel-size", "1"]},
        {"command": ["python3", "-m", "vllm.entrypoints.openai.api_server"], "args": ["--model", LARGE]},
        {"args": [f"--model={LARGE}"]},
        {"args": ["--model-path", LARGE]},  # SGLang
        {"args": ["--model-id", LARGE]},  # TGI
        {"args": [f"--model_id={LARGE}"]},  # KServe huggingfaceserver
        {"command": ["trtllm-serve", LARGE]},
        {"command": ["sh", "-c", f'exec vllm serve "{LARGE}" --port 8000']},
        {"env": [{"name": "MODEL_ID", "value": LARGE}]},  # TGI
        {"env": [{"name": "NIM_MODEL_NAME", "value": LARGE}]},
        {"args": ["--model", "$(MODEL)"], "env": [{"name": "MODEL", "value": LARGE}]},
        {"args": ["--model=$(MODEL)"], "env": [{"name": "MODEL", "value": LARGE}]},
    ],
)
def test_the_model_is_read_where_each_server_takes_it(container: dict[str, Any]) -> None:
    assert served_models(container) == [LARGE]


@pytest.mark.parametrize(
    "container",
    [
        {"args": ["--model-name", LARGE, f"--model_name={LARGE}", "--served-model-name", LARGE]},
        {"env": [{"name": "MODEL_NAME", "value": LARGE}]},
        {"env": [{"name": "MODEL_ID", "valueFrom": {"configMapKeyRef": {"name": "m", "key": "id"}}}]},
        {"env": [{"name": "MODEL_ID", "value": LARGE}, {"name": "MODEL_ID", "valueFrom": {}}]},
        {"args": ["--model", "$(MODEL)"], "env": [{"name": "MODEL", "valueFrom": {"secretKeyRef": {}}}]},
        {"args": ["--model", "--port", "8000"]},
        {"command": ["python3"], "args": ["serve", LARGE]},  # no vllm before it
        {"args": ["--port", "8000", LARGE]},  # a positional argument after flags may be their value
        {"args": ["--model", "x" * (MODEL_MAX + 1)]},
        {"command": "vllm serve x", "args": {"model": LARGE}, "env": {"MODEL_ID": LARGE}},  # malformed
    ],
)
def test_no_model_is_read_from_a_served_name_a_hidden_value_or_a_malformed_container(
    container: dict[str, Any],
) -> None:
    assert served_models(container) == []


def _env(**values: str) -> list[dict[str, str]]:
    return [{"name": name, "value": value} for name, value in values.items()]


@pytest.mark.parametrize(
    ("container", "model"),
    [
        ({"args": ["--model", "/mnt/models/$(M)"], "env": _env(M="llama-70b")}, "/mnt/models/llama-70b"),
        ({"args": ["--model=$(ORG)/$(M)"], "env": _env(ORG="meta", M="llama-70b")}, "meta/llama-70b"),
        ({"command": ["sh", "-c", "vllm serve meta/$(M)"], "env": _env(M="llama-70b")}, "meta/llama-70b"),
        ({"args": ["--model", "/m/$$(M)"], "env": _env(M="llama-70b")}, "/m/$(M)"),  # `$$`: a `$`
        ({"args": ["--model", "/m/$(M)"], "env": _env(N="llama-70b")}, "/m/$(M)"),  # no such variable
    ],
)
def test_a_reference_anywhere_in_a_word_is_expanded_as_the_kubelet_does(
    container: dict[str, Any], model: str
) -> None:
    """The kubelet expands `$(VAR)` wherever it is in a word (`/mnt/models/$(MODEL)`): read as
    written, a 70B's model path matched no `*-70b*` pattern and the pod got a slice."""
    assert served_models(container) == [model]


@pytest.mark.parametrize(
    "script",
    [
        f"vllm serve \\\n  {LARGE} \\\n  --port 8000\n",
        f"python3 -m vllm.entrypoints.openai.api_server --model \\\n  {LARGE}\n",
    ],
)
def test_a_script_continuing_its_line_before_the_model_names_it(script: str) -> None:
    """A backslash ending a line of a `sh -c` script joins the next line to it (the shell drops
    both): read as a word, it was the model of `vllm serve \\`."""
    assert served_models({"command": ["/bin/sh", "-c"], "args": [script]}) == [LARGE]


def test_only_the_first_words_of_a_command_line_are_read() -> None:
    """A server's command line has tens of words; read whole, a 3 MB argument of 1.5 million
    words cost 0.5 s per pod create."""
    padding = " ".join(["--x"] * (WORDS_MAX - 2))
    assert served_models({"command": ["vllm"], "args": [f"{padding} --model {LARGE}"]}) == [LARGE]
    assert served_models({"command": ["vllm"], "args": [padding, "--y", "--model", LARGE]}) == []
    assert served_models({"args": ["--x " * 1_500_000, "--model", LARGE]}) == []


def test_only_the_first_items_of_a_command_line_are_read() -> None:
    """Empty items hold no word: a million of them before `--model` were all walked past (0.16 s
    per pod create); the model after them is not read, as one after WORDS_MAX words is not."""
    assert served_models({"command": ["vllm"], "args": ["", "--model", LARGE]}) == [LARGE]
    assert served_models({"command": ["vllm"], "args": [""] * ITEMS_MAX + ["--model", LARGE]}) == []


CATALOG = make_catalog(
    template_doc("serving", match={"images": ["vllm/vllm-openai*"]}, priority=10),
    template_doc("serving-large", match={"images": ["vllm/vllm-openai*"], "models": ["*-70b*"]}, priority=20),
)


def template_of(**fields: Any) -> str | None:
    pod = make_pod().container("server", image="vllm/vllm-openai:v0.9.0", gpu=1, **fields).build()
    return decide(pod, context(CATALOG)).template


def test_a_template_matches_the_model_in_any_case_with_its_other_conditions() -> None:
    assert template_of(args=["--model", LARGE]) == "serving-large"
    assert template_of(args=["--model", "meta-llama/Llama-3.1-8B-Instruct"]) == "serving"
    assert template_of() == "serving"
    pod = make_pod().container("app", image="example/app", gpu=1, args=["--model", LARGE]).build()
    assert decide(pod, context(CATALOG)).template is None  # the image condition still holds


def test_a_template_matching_only_models_takes_any_image_serving_one() -> None:
    catalog = make_catalog(template_doc("large", match={"models": ["meta-llama/*-70B*"]}))
    pod = make_pod().container("tgi", image="example/tgi", gpu=1, env=[{"name": "MODEL_ID", "value": LARGE}])
    assert decide(pod.build(), context(catalog)).template == "large"
    assert decide(make_pod().container("c", gpu=1).build(), context(catalog)).template is None


def test_a_template_asking_for_a_model_leaves_the_templates_below_it_chosen() -> None:
    """Above another, a match of models alone is no fallback taking every pod (the load refuses
    the template below one of those as never chosen)."""
    catalog = make_catalog(
        template_doc("large", match={"models": ["*-70b*"]}, priority=20),
        template_doc("serving", match={"images": ["vllm/vllm-openai*"]}, priority=10),
    )
    pod = make_pod().container("c", image="vllm/vllm-openai", gpu=1)
    assert decide(pod.build(), context(catalog)).template == "serving"
