"""`gpu-webhook report`: GPUs and slices per node, allocatable, allocated and free; pods holding
whole GPUs a slice would serve; idle allocated GPUs (with --prometheus); what it all costs.

Exit 0 with a report, 2 on bad input or when the cluster or Prometheus cannot be read.
"""

from __future__ import annotations

import argparse
import math

import urllib3
from kubernetes.client.exceptions import ApiException

from webhook.commands.common import (
    EXIT_BAD_INPUT,
    EXIT_OK,
    UsageError,
    catalog_from,
    check_kubeconfig,
    emit,
    error,
)
from webhook.core.model import Inventory
from webhook.inventory.files import InventoryError
from webhook.inventory.usage import PodUsage
from webhook.inventory.watch import ClusterInventorySource, WatchConfigError, describe_error
from webhook.report.build import IDLE_THRESHOLD_PERCENT, build_report
from webhook.report.files import load_with_pods
from webhook.report.render import render
from webhook.report.utilisation import PrometheusError, check_url, check_window, query_utilisation

FORMATS = ("text", "json", "csv")
WINDOW = "1h"


def add_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = commands.add_parser(
        "report", help="GPU and slice allocation per node, waste and idle cost (cluster or files)"
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--kubeconfig", metavar="FILE", help="read Nodes and Pods from this cluster")
    source.add_argument("--inventory", metavar="NODES.yaml", help="node list (kubectl get nodes -o yaml)")
    parser.add_argument(
        "--pods", metavar="PODS.yaml", help="pod list for --inventory (kubectl get pods -A -o yaml)"
    )
    parser.add_argument("--context", help="kubeconfig context (default: the current one)")
    parser.add_argument("--templates", default="templates", help="templates folder (default: templates)")
    parser.add_argument("--policies", default="policies", help="policies folder (default: policies)")
    parser.add_argument("-o", "--output", choices=FORMATS, default="text", help="text (default), json or csv")
    parser.add_argument("--prometheus", metavar="URL", help="Prometheus with dcgm-exporter metrics")
    parser.add_argument(
        "--window", help=f"averaging window for utilisation, with --prometheus (default: {WINDOW})"
    )
    parser.add_argument(
        "--idle-below",
        type=float,
        metavar="PERCENT",
        help=f"with --prometheus, an allocated GPU averaging under this is idle, 0 to 100 "
        f"(default: {IDLE_THRESHOLD_PERCENT:g})",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        window, idle_below = _utilisation_options(args)
        catalog = catalog_from(args.templates, args.policies)
        inventory, usages = _inventory(args)
        utilisation = None
        if args.prometheus is not None:
            utilisation = query_utilisation(args.prometheus, window)
    except (UsageError, InventoryError, WatchConfigError, PrometheusError) as exc:
        error(str(exc))
        return EXIT_BAD_INPUT
    report = build_report(
        inventory,
        catalog,
        usages,
        utilisation,
        window=window if args.prometheus is not None else None,
        idle_threshold=idle_below,
    )
    return EXIT_OK if emit(render(report, args.output), "the report") else EXIT_BAD_INPUT


def _utilisation_options(args: argparse.Namespace) -> tuple[str, float]:
    """--window and --idle-below, checked whether or not --prometheus is given, and refused
    without it: nothing would be averaged or called idle, and a user asking for it would not know."""
    if args.prometheus is not None:
        check_url(args.prometheus)
    window = check_window(WINDOW if args.window is None else args.window)
    idle_below = IDLE_THRESHOLD_PERCENT if args.idle_below is None else _percent(args.idle_below)
    options = (("--window", args.window), ("--idle-below", args.idle_below))
    given = [option for option, value in options if value is not None]
    if given and args.prometheus is None:
        raise UsageError(f"{' and '.join(given)}: only with --prometheus (without it no utilisation is read)")
    return window, idle_below


def _percent(value: float) -> float:
    if not math.isfinite(value) or not 0 <= value <= 100:
        raise UsageError(f"--idle-below {value:g} is not a percentage from 0 to 100")
    return value


def _inventory(args: argparse.Namespace) -> tuple[Inventory, list[PodUsage]]:
    if args.kubeconfig:
        if args.pods:
            raise UsageError("--pods goes with --inventory; --kubeconfig reads the pods from the cluster")
        check_kubeconfig(args.kubeconfig)
        return _from_cluster(args.kubeconfig, args.context)
    if args.context:
        raise UsageError("--context goes with --kubeconfig; --inventory reads nodes from a file")
    if not args.inventory:
        raise UsageError(
            "say where the nodes are: --kubeconfig FILE, or --inventory NODES.yaml [--pods PODS.yaml]"
        )
    return load_with_pods(args.inventory, args.pods)


def _from_cluster(kubeconfig: str, context: str | None) -> tuple[Inventory, list[PodUsage]]:
    source = ClusterInventorySource(kubeconfig, context=context)
    try:
        inventory = source.sync_once()
    except ApiException as exc:
        raise WatchConfigError(f"{kubeconfig}: the {describe_error(exc)}") from exc
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise WatchConfigError(f"{kubeconfig}: cannot reach the API server: {exc}") from exc
    return inventory, list(source.pod_usage())
