"""The models a container's server is told to load, from its command line and env: what a
template's `match.models` patterns are matched against.

vLLM, SGLang, TGI, Dynamo, TensorRT-LLM and KServe's Hugging Face server run one image for every
model, and name the model they load in their arguments (`vllm serve meta-llama/Llama-3.1-70B`,
`--model=...`, SGLang's `--model-path`, TGI's `--model-id` or `MODEL_ID`, KServe's `--model_id`)
or NIM's `NIM_MODEL_NAME`: a 70B served by vllm/vllm-openai asks for the same `nvidia.com/gpu: 1`
as an 8B. Read only when a candidate template has `match.models` (webhook.core.matching).

Not read: `--model-name`, `--model_name`, `--served-model-name` and `MODEL_NAME`, the name a
server answers to, which need not be the model's (KServe's `--model_name=llama3`); a value from
`valueFrom` (a ConfigMap or Secret the webhook cannot see).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from webhook.core.model import MAPPINGS

MODEL_FLAGS: Final = frozenset({"--model", "--model-path", "--model-id", "--model_id"})
"""vLLM's and Dynamo's `--model`, SGLang's `--model-path`, TGI's `--model-id`, KServe's
huggingfaceserver `--model_id`; each as `--flag value` or `--flag=value`."""
MODEL_VARS: Final = frozenset({"MODEL_ID", "NIM_MODEL_NAME"})
"""TGI's MODEL_ID and NIM's NIM_MODEL_NAME, with a literal `value`."""
ENTRYPOINT: Final = "<entrypoint>"
"""Stands for the image's own entrypoint before args given without a command: vllm/vllm-openai's
is `vllm serve`, so its pods write `args: [meta-llama/Llama-3.1-70B-Instruct, ...]`; the first
argument, not a flag, is read as the model."""
SERVE_COMMANDS: Final = frozenset({"trtllm-serve", ENTRYPOINT})
"""Commands whose first positional argument is the model: `trtllm-serve <model>`, and the image's
entrypoint; vLLM's is `vllm serve <model>` (`_positional`)."""
MODEL_MAX: Final = 1024
"""Longer than any model id or path a server loads (a Hugging Face id is at most 96 characters):
such a value is matched against no pattern, so a 3 MB argument costs no pattern matching."""
WORDS_MAX: Final = 1024
"""The words of command and args read, the first ones: a server's command line has tens. Read
whole, the 1.5 million words of a 3 MB argument an untrusted user can send cost 0.5 s per pod
create, holding the worker."""
ITEMS_MAX: Final = 4 * WORDS_MAX
"""The first items of a command or args read: empty ones hold no word, and a million of them (an
args list an untrusted user can send) took 0.16 s to walk past on every pod create."""
_QUOTES: Final = "\"'"
_CONTINUATION: Final = "\\"
_REFERENCE: Final = re.compile(r"\$(?:\$|\(([^)]*)\))")
"""A kubelet reference `$(VAR)`, or `$$`, its escape of `$`."""


def served_models(container: Mapping[str, Any]) -> list[str]:
    """The models the container's command, args and env name, in that order. A word of a command
    or argument is split at whitespace, so `sh -c "vllm serve X --port 8000"` is read too, and
    a word `$(VAR)` is the literal value of VAR in the container's env, as the kubelet expands it
    (one it cannot see, from `valueFrom`, names no model)."""
    values = _literal_env(container.get("env"))
    words = _words(container.get("command"))
    args = _words(container.get("args"))
    if not words and args and not args[0].startswith("-"):
        words = [ENTRYPOINT]  # the image's entrypoint: `vllm serve` in vllm/vllm-openai
    words.extend(args)
    if any("$(" in word for word in words):
        words = [_expand(word, values) for word in words]
    found = _from_words(words)
    found.extend(values[name] for name in sorted(MODEL_VARS) if name in values)
    return [model for model in found if model and len(model) <= MODEL_MAX and not model.startswith("$(")]


def _words(value: object) -> list[str]:
    """The first WORDS_MAX words of a command or args, each item split at whitespace; a lone
    backslash, a script's line continuation (`vllm serve \\` and the model on the next line,
    which the shell joins), is no word."""
    words: list[str] = []
    items = value[:ITEMS_MAX] if isinstance(value, list) else []
    for item in items:
        if isinstance(item, str):
            words.extend(item.split(maxsplit=WORDS_MAX)[:WORDS_MAX])
            if len(words) >= WORDS_MAX:
                words = words[:WORDS_MAX]
                break
    return [word for word in words if word != _CONTINUATION] if _CONTINUATION in words else words


def _from_words(words: list[str]) -> list[str]:
    found: list[str] = []
    for index, word in enumerate(words):
        flag, equals, value = word.partition("=")
        if flag not in MODEL_FLAGS:
            if _positional(words, index):
                found.append(word.strip(_QUOTES))
            continue
        if equals:
            found.append(value.strip(_QUOTES))
        elif index + 1 < len(words) and not words[index + 1].startswith("-"):
            found.append(words[index + 1].strip(_QUOTES))
    return found


def _positional(words: list[str], index: int) -> bool:
    """Whether the word is the model of `vllm serve <model>` or `trtllm-serve <model>` (the
    commands given by path too: `/usr/local/bin/vllm`)."""
    if index < 1 or words[index].startswith("-"):
        return False
    before = words[index - 1]
    if _command(before) in SERVE_COMMANDS:
        return True
    return before == "serve" and index >= 2 and _command(words[index - 2]) == "vllm"


def _command(word: str) -> str:
    return word.strip(_QUOTES).rsplit("/", 1)[-1]


def _literal_env(env: object) -> dict[str, str]:
    """Each variable's literal value, the last entry of a name winning as the kubelet sets them;
    a variable whose last entry takes `valueFrom` has none."""
    values: dict[str, str] = {}
    for entry in env if isinstance(env, list) else ():
        if isinstance(entry, MAPPINGS):
            name, value = entry.get("name"), entry.get("value")
            if isinstance(name, str):
                if isinstance(value, str) and entry.get("valueFrom") is None:
                    values[name] = value
                else:
                    values.pop(name, None)
    return values


def _expand(word: str, values: Mapping[str, str]) -> str:
    """`$(VAR)` wherever it is in the word, as the kubelet expands it (`--model=/mnt/$(MODEL)`):
    a variable with a literal value gives it, any other reference stays as written, and `$$` is
    an escaped `$` (`$$(VAR)` is the text `$(VAR)`)."""
    return _REFERENCE.sub(lambda found: _value(found, values), word)


def _value(found: re.Match[str], values: Mapping[str, str]) -> str:
    name = found.group(1)
    return "$" if name is None else values.get(name, found.group(0))
