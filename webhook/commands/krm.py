"""`gpu-webhook krm [CONFIG]`: the webhook as a KRM function (kpt, kustomize), stdin to stdout.

Reads a ResourceList (config.kubernetes.io/v1) and writes it back with the mutations applied and
one result per violation; exits 1 when any result is an error, 2 when the input is unreadable.
Given a plain YAML stream and a CONFIG file instead (how kustomize runs an exec plugin), it
writes the stream back and the results to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from webhook.authoring.krm import FunctionConfig, KrmInputError, Outcome, run_function
from webhook.commands.common import EXIT_BAD_INPUT, EXIT_DENIED, EXIT_OK, emit, error
from webhook.terminal import showable
from webhook.yamlio import KubectlDumper, YamlError, decode_text, load_documents, read_text


def add_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = commands.add_parser(
        "krm", help="run as a KRM function: ResourceList on stdin, mutated list and results on stdout"
    )
    parser.add_argument(
        "config", nargs="?", help="functionConfig file (kustomize exec plugins pass it; else from the list)"
    )
    parser.add_argument("--templates", default="templates", help="templates folder (default: templates)")
    parser.add_argument("--policies", default="policies", help="policies folder (default: policies)")
    parser.add_argument("--inventory", default="none", help="node list file, or none (default: none)")
    parser.add_argument(
        "--namespace", default="", help="namespace for items that name none (default: default)"
    )
    parser.add_argument("--no-mutate", action="store_true", help="validate only; leave every item unchanged")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    defaults = FunctionConfig(
        mutate=not args.no_mutate,
        templates=args.templates,
        policies=args.policies,
        inventory=args.inventory,
        namespace=args.namespace,
    )
    try:
        text = decode_text(sys.stdin.buffer.read(), "<stdin>")
        resource_list, stream = _parse(text, args.config)
        outcome = run_function(resource_list, defaults)
    except YamlError as exc:
        _decide_before(exc, args.config, defaults)
        error(f"krm: {exc}")
        return EXIT_BAD_INPUT
    except (KrmInputError, OSError) as exc:
        error(f"krm: {exc}")
        return EXIT_BAD_INPUT
    if not emit(_render(outcome, text.lstrip().startswith("{"), stream), "the resource list"):
        return EXIT_BAD_INPUT
    _report(outcome, everything=stream)
    if outcome.bad_config:
        return EXIT_BAD_INPUT
    return EXIT_DENIED if outcome.failed else EXIT_OK


def _parse(text: str, config_path: str | None) -> tuple[dict[str, Any], bool]:
    """(resource list, True when the input was a plain stream to write back as one)."""
    documents = [d.data for d in load_documents(text, "<stdin>")]
    if len(documents) == 1 and isinstance(documents[0], dict) and documents[0].get("kind") == "ResourceList":
        resource_list: dict[str, Any] = documents[0]
        if config_path:
            resource_list["functionConfig"] = _config_file(config_path)
        return resource_list, False
    wrapped = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": documents}
    if config_path:
        wrapped["functionConfig"] = _config_file(config_path)
    return wrapped, True


def _decide_before(exc: YamlError, config_path: str | None, defaults: FunctionConfig) -> None:
    """The results of the documents read before a YAML error, on stderr: the stream is not
    written back (half of it would pass for all of it), but what was readable is still decided."""
    if not exc.documents or exc.source != "<stdin>":
        return
    items = [d.data for d in exc.documents]
    wrapped: dict[str, Any] = {
        "apiVersion": "config.kubernetes.io/v1",
        "kind": "ResourceList",
        "items": items,
    }
    try:
        if config_path:
            wrapped["functionConfig"] = _config_file(config_path)
        outcome = run_function(wrapped, defaults)
    except (KrmInputError, YamlError, OSError) as config_exc:
        error(f"krm: {config_exc}")
        return
    _report(outcome, everything=True)


def _config_file(path: str) -> Any:
    documents = [d.data for d in load_documents(read_text(Path(path)), path)]
    if len(documents) != 1:
        raise KrmInputError(
            f"{path}: the functionConfig file must hold one object, it holds {len(documents)}"
        )
    return documents[0]


def _render(outcome: Outcome, as_json: bool, stream: bool) -> str:
    if stream:
        items = outcome.resource_list["items"]
        return "".join(json.dumps(i, default=str) + "\n" for i in items) if as_json else _yaml_all(items)
    if as_json:
        return json.dumps(outcome.resource_list, indent=2, default=str) + "\n"
    return _yaml_all([outcome.resource_list])


def _yaml_all(items: list[Any]) -> str:
    return str(yaml.dump_all(items, Dumper=KubectlDumper, sort_keys=False, allow_unicode=True, width=4096))


def _report(outcome: Outcome, everything: bool) -> None:
    """Errors always go to stderr (the spec says so); a stream has no other place for results."""
    for result in outcome.results:
        if everything or result["severity"] == "error":
            print(showable(_result_line(result)), file=sys.stderr)


def _result_line(result: dict[str, Any]) -> str:
    ref = result.get("resourceRef")
    what = f"{ref['kind']}/{ref['name']}: " if ref else ""
    field = result.get("field", {}).get("path")
    where = f" ({field})" if field else ""
    return f"{result['severity']}: {what}{result['message']}{where}"
