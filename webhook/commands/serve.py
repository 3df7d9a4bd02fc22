"""`gpu-webhook serve`: the admission webhook over HTTPS (flask under gunicorn).

With no arguments it runs the embedded default: a self-signed certificate generated into
.gpu-webhook/certs, the repository's templates/ and policies/ (reloaded when they change), and
the example inventory examples/inventories/mixed-cluster.yaml with the pods bound to it
(mixed-cluster-pods.yaml). Everything is checked before gunicorn starts, so a bad path or
certificate is one clear message and exit code 2.
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import ipaddress
import os
import shlex
import shutil
import socket
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from cryptography import x509

from webhook.buildinfo import core_build
from webhook.commands.common import (
    EXIT_BAD_INPUT,
    UsageError,
    catalog_from,
    check_file,
    check_kubeconfig,
    error,
    inventory_from,
    templates_from,
)
from webhook.core.model import Catalog, GpuNode
from webhook.report.utilisation import PrometheusError, check_url
from webhook.server.decision_cache import DEFAULT_CAPACITY as DECISION_CACHE
from webhook.server.pod_list import PodListError, check_pod_list
from webhook.server.slow_clients import IO_TIMEOUT
from webhook.shared_copy import make_shared_folder
from webhook.sources import (
    CatalogSource,
    FileInventorySource,
    InventorySource,
    NodeTemplatesSource,
    StaticCatalogSource,
)
from webhook.tls.bundle import hosts_of
from webhook.tls.certgen import CA_FILE, CERT_FILE, KEY_FILE, ensure_self_signed
from webhook.tls.files import loose_key_warnings
from webhook.tls.reload import DEFAULT_INTERVAL, TLSFiles, TLSFilesError, server_context
from webhook.yamlio import stat_problem

if TYPE_CHECKING:
    from webhook.server.gunicorn_app import SourcesFactory

DEFAULT_CERT_DIR = ".gpu-webhook/certs"
DEFAULT_INVENTORY = "examples/inventories/mixed-cluster.yaml"
DEFAULT_PODS = "examples/inventories/mixed-cluster-pods.yaml"
DEFAULT_RELOAD_SECONDS = 10.0
EXAMPLE_REVIEW = "examples/admission/pod-review.json"
REVIEW_PLACEHOLDER = "REVIEW.json"
WILDCARDS = ("", "0.0.0.0", "::")
MIN_SECONDS, MAX_SECONDS = 0.1, 86400.0
"""Bounds of the intervals: more often is a busy loop, less often than daily is never."""
BOUNDS = f"{MIN_SECONDS:g} to {MAX_SECONDS:g} seconds"
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def add_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = commands.add_parser("serve", help="run the admission webhook over HTTPS (gunicorn)")
    parser.add_argument("--bind", default="127.0.0.1:8443", metavar="HOST:PORT", help="default: %(default)s")
    parser.add_argument(
        "--cert-dir",
        default=DEFAULT_CERT_DIR,
        metavar="DIR",
        help="tls.crt and tls.key; a self-signed set is generated when absent (default: %(default)s)",
    )
    parser.add_argument("--templates", metavar="DIR", help="templates folder (default: templates)")
    parser.add_argument("--policies", metavar="DIR", help="policies folder (default: policies)")
    nodes = parser.add_mutually_exclusive_group()
    nodes.add_argument("--inventory", metavar="FILE", help=f"node list YAML (default: {DEFAULT_INVENTORY})")
    nodes.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="watch the cluster (nodes, pods, quotas, LimitRanges, DeviceClasses) instead of a file",
    )
    nodes.add_argument(
        "--in-cluster", action="store_true", help="watch the cluster with the pod's service account"
    )
    parser.add_argument(
        "--node-templates",
        metavar="FILE",
        help="Nodes as the pools that autoscale from zero would add them (a node list YAML)",
    )
    parser.add_argument(
        "--pods",
        metavar="FILE",
        help=f"pods bound to the --inventory nodes (default with the default inventory: {DEFAULT_PODS})",
    )
    parser.add_argument(
        "--reload-seconds",
        type=_reload_seconds,
        default=DEFAULT_RELOAD_SECONDS,
        metavar="S",
        help=f"how often to look for changed templates and policies, {BOUNDS}; 0 loads them once"
        " (default: %(default)s)",
    )
    parser.add_argument("--client-ca", metavar="FILE", help="require client certificates signed by this CA")
    parser.add_argument(
        "--workers",
        type=_workers,
        metavar="N",
        help=f"processes, 1 to {MAX_WORKERS} (default: CPU count, at most 4)",
    )
    parser.add_argument(
        "--threads", type=_threads, metavar="N", help=f"threads per worker, 1 to {MAX_THREADS} (default: 4)"
    )
    parser.add_argument(
        "--decision-cache",
        type=_not_negative,
        default=DECISION_CACHE,
        metavar="N",
        help="decisions each worker remembers for identical CREATEs, e.g. a ReplicaSet's pods; 0: none"
        " (default: %(default)s)",
    )
    parser.add_argument(
        "--prometheus",
        metavar="URL",
        help="Prometheus with dcgm-exporter metrics: the report and dashboard list allocated idle devices",
    )
    parser.add_argument(
        "--cert-check-seconds",
        type=_seconds,
        default=DEFAULT_INTERVAL,
        metavar="S",
        help=f"how often to look for a renewed certificate, {BOUNDS} (default: %(default)s)",
    )
    parser.add_argument(
        "--io-timeout",
        type=_seconds,
        default=IO_TIMEOUT,
        metavar="S",
        help="close a connection whose TLS handshake, request read or answer write stalls this long, "
        f"{BOUNDS} (default: %(default)s)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        plan = _plan(args)
        shared = _shared_folder("gpu-webhook-")
        _metrics_folder()
    except UsageError as exc:
        error(str(exc))
        return EXIT_BAD_INPUT
    from webhook.server.gunicorn_app import ServerSettings, WebhookServer  # gunicorn only when serving

    settings = ServerSettings(
        plan.bind,
        plan.tls,
        args.workers,
        args.threads,
        args.cert_check_seconds,
        decision_cache=args.decision_cache,
        io_timeout=args.io_timeout,
        prometheus_url=plan.prometheus_url,
        shared_folder=shared,
    )
    sources: SourcesFactory = partial(plan.sources, last_good=shared)
    WebhookServer(settings, sources, announce=partial(_announce, plan)).run()
    return 0


def _shared_folder(prefix: str) -> Path:
    """A new folder every worker of this server writes to and reads (the last good catalog and
    certificate, webhook/shared_copy.py), removed when the master exits (workers are forked with
    its exit handlers: they leave it alone). No folder to write in (a read-only root filesystem
    without an emptyDir at /tmp) is refused here: it was a traceback."""
    try:
        folder = make_shared_folder(prefix)
    except OSError as exc:
        raise UsageError(
            "no writable folder for the workers' shared copy of the catalog and certificate "
            f"(/dev/shm, else $TMPDIR or /tmp): {exc.strerror or exc}; mount an emptyDir at /tmp"
        ) from exc
    atexit.register(_remove_in, os.getpid(), folder)
    return folder


def _metrics_folder() -> None:
    """PROMETHEUS_MULTIPROC_DIR prepared and written to once here, before gunicorn starts: a file
    there, or a folder that cannot be written, made every worker fail to boot (exit code 3, a
    traceback each) or the master raise, after `serve` had announced that it was serving."""
    from webhook.server.gunicorn_conf import prepare_metrics_dir
    from webhook.server.metrics import probe_folder

    where = os.environ.get(MULTIPROC_ENV) or "(unset): a temporary folder"
    if Path(where).exists() and not Path(where).is_dir():
        raise UsageError(f"{MULTIPROC_ENV} {where}: not a folder; the workers keep their metrics in one")
    try:
        probe_folder(prepare_metrics_dir())
    except OSError as exc:
        problem = exc.strerror or str(exc)
        raise UsageError(f"{MULTIPROC_ENV} {where}: cannot write the workers' metrics: {problem}") from exc


def _remove_in(master: int, folder: Path) -> None:
    if os.getpid() == master:
        shutil.rmtree(folder, ignore_errors=True)


@dataclass(frozen=True)
class Plan:
    bind: str
    host: str
    tls: TLSFiles
    ca_file: Path | None
    sources: Callable[..., tuple[CatalogSource, InventorySource]]
    """Builds the (catalog, inventory) sources; called in each worker, after the fork, with the
    folder the workers share as `last_good`."""
    prometheus_url: str | None = None


def _plan(args: argparse.Namespace) -> Plan:
    host, port = parse_bind(args.bind)
    check_bind(host, port)
    prometheus = _prometheus_url(args.prometheus)
    templates = _default_path(args.templates, "templates", "--templates")
    policies = _default_path(args.policies, "policies", "--policies")
    catalog = catalog_from(str(templates), str(policies))
    if args.kubeconfig or args.in_cluster:
        if args.pods:
            raise UsageError("--pods goes with --inventory; a watched cluster brings its own pods")
        inventory: Any = partial(_cluster_source(args.kubeconfig), kubeconfig=args.kubeconfig)
    else:
        inventory = _file_inventory(args)
    templates_of_pools = templates_from(args.node_templates)
    if templates_of_pools:
        inventory = partial(_with_templates, inventory, templates_of_pools)
    tls, ca_file = _certificates(Path(args.cert_dir), host, args.client_ca)
    sources = partial(_sources, (templates, policies), catalog, inventory, args.reload_seconds)
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return Plan(address, host, tls, ca_file, sources, prometheus)


def _prometheus_url(url: str | None) -> str | None:
    try:
        return None if url is None else check_url(url)
    except PrometheusError as exc:
        raise UsageError(str(exc)) from exc


def _file_inventory(args: argparse.Namespace) -> Any:
    """Nodes from a file, with the pods bound to them when a pod list is given (or by default)."""
    path = _default_path(args.inventory, DEFAULT_INVENTORY, "--inventory")
    inventory_from(str(path))
    pods = args.pods
    if pods is None and args.inventory is None:
        pods = str(_here_or_in_checkout(DEFAULT_PODS))
    if pods is None:
        return _read_once(FileInventorySource(path))
    check_file("--pods", pods)
    try:
        check_pod_list(Path(pods))
    except PodListError as exc:
        raise UsageError(f"--pods: {exc}".replace("\n", "\n  ")) from exc
    from webhook.report.files import StaticUsageInventorySource

    return _read_once(StaticUsageInventorySource(path, pods))


def _read_once(source: InventorySource) -> Any:
    """The files read here, in the master, once: every worker, one gunicorn starts again after a
    crash included, serves what they held then (a worker reading them later, after they changed
    or broke, would answer differently from the others)."""
    source.start()
    return partial(_same, source)


def _same(source: InventorySource) -> InventorySource:
    return source


def _with_templates(inventory: Any, templates: tuple[GpuNode, ...]) -> InventorySource:
    return NodeTemplatesSource(inventory(), templates)


def _sources(
    catalog_paths: Sequence[Path],
    catalog: Catalog,
    inventory: Any,
    reload_seconds: float,
    last_good: Path | None = None,
) -> tuple[CatalogSource, InventorySource]:
    """Called in each worker. With `reload_seconds` 0 it serves `catalog`, the one the master
    loaded (and checked) before the fork, as the inventory files are: every worker, one gunicorn
    starts again after a crash or on SIGHUP included, serves the same catalog."""
    source: InventorySource = inventory()
    if reload_seconds == 0:
        return StaticCatalogSource(catalog_paths, catalog), source
    from webhook.catalog.reload import ReloadingCatalogSource

    return ReloadingCatalogSource(catalog_paths, interval=reload_seconds, last_good=last_good), source


def parse_bind(bind: str) -> tuple[str, int]:
    host, separator, port = bind.rpartition(":")
    host = host.strip("[]") or "0.0.0.0"
    if not separator or not port.isdigit() or int(port) > 65535:
        raise UsageError(f"--bind must be HOST:PORT (e.g. 127.0.0.1:8443 or 0.0.0.0:8443), got {bind!r}")
    return host, int(port)


def check_bind(host: str, port: int) -> None:
    """Bind the address once, as each gunicorn worker will (reuse_port), but without SO_REUSEPORT:
    a port already in use, even by another gpu-webhook, or an address this host does not have is
    refused here instead of being retried by every worker. Port 0 is bound too: an address this
    host does not have, or a name that does not resolve, fails the same with any port (it was a
    traceback where serve picks the free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:
        raise UsageError(f"--bind {host}:{port}: cannot listen there: {exc.strerror or exc}") from exc


def _default_path(given: str | None, relative: str, option: str) -> Path:
    """What the user named; else the path under the working directory, else in this checkout."""
    path = Path(given) if given is not None else _here_or_in_checkout(relative)
    if not path.exists():
        why = stat_problem(path) or "no such file or directory"
        raise UsageError(f"{option}: {why}: {given or relative}")
    return path


def _here_or_in_checkout(relative: str) -> Path:
    """The path under the working directory if it is there, else in the source checkout the
    package runs from. An installed package has none: the folder above it is site-packages,
    where a `templates` or `examples` folder another distribution left is no default of ours."""
    here = Path(relative)
    checkout = Path(__file__).resolve().parents[2]
    return checkout / relative if not here.exists() and (checkout / "pyproject.toml").is_file() else here


def _cluster_source(kubeconfig: str | None) -> Any:
    """The watcher class, once the cluster configuration has been checked here in the master."""
    check_kubeconfig(kubeconfig)
    try:
        module = importlib.import_module("webhook.inventory.watch")
    except ImportError as exc:
        raise UsageError(f"watching the cluster needs webhook.inventory.watch (missing): {exc}") from exc
    _check_cluster_config(kubeconfig)
    return module.ClusterInventorySource


def _check_cluster_config(kubeconfig: str | None) -> None:
    from kubernetes import client, config

    from webhook.kubeconfig import CONFIG_ERRORS, config_problem

    target = client.Configuration()
    try:
        if kubeconfig is not None:
            config.load_kube_config(config_file=kubeconfig, client_configuration=target)  # type: ignore[no-untyped-call]
        else:
            config.load_incluster_config(client_configuration=target)  # type: ignore[no-untyped-call]
    except CONFIG_ERRORS as exc:
        where = f"--kubeconfig {kubeconfig}" if kubeconfig else "--in-cluster"
        raise UsageError(f"{where}: cannot configure the cluster client: {config_problem(exc)}") from exc


def _certificates(directory: Path, host: str, client_ca: str | None) -> tuple[TLSFiles, Path | None]:
    """The serving files (generated when the folder has neither), checked by loading them once."""
    certificate, key = directory / CERT_FILE, directory / KEY_FILE
    _refuse_dangling(certificate, key)
    if certificate.exists() != key.exists():
        present, missing = (certificate, key) if certificate.exists() else (key, certificate)
        raise UsageError(f"{present} exists but {missing} does not; provide both or neither")
    if client_ca is not None:
        check_file("--client-ca", client_ca)
    named = socket.gethostname() if host in WILDCARDS else host
    hosts = list(dict.fromkeys([named, "localhost", "127.0.0.1"]))
    try:
        if ensure_self_signed(directory, hosts):
            print(f"generated a self-signed certificate for {', '.join(hosts)} in {directory}", flush=True)
        else:
            _warn_unless_named(certificate, host)
    except OSError as exc:
        raise UsageError(f"cannot write certificates to {directory}: {exc.strerror or exc}") from exc
    for warning in loose_key_warnings([key]):  # once, at start; a mounted Secret is not warned about
        error(warning)
    files = TLSFiles.in_directory(directory, client_ca)
    try:
        server_context(files)
    except TLSFilesError as exc:
        hint = (
            f" (or delete {certificate} and {key}: serve then makes a new self-signed set)"
            if "expired" in str(exc)
            else ""
        )
        raise UsageError(f"{exc}{hint}") from exc
    ca_file = directory / CA_FILE
    return files, ca_file if ca_file.exists() else None


def _refuse_dangling(*paths: Path) -> None:
    """Symlinks whose targets are missing, as in a Secret volume whose `..data` is not there (yet):
    not absent files, so no self-signed set is made over them (the Secret's, when it comes, would
    never be read), and not files that cannot be written either. The kubelet fills a volume before
    the container starts, so this is a broken mount: stop and name the links."""
    dangling = [_dangling_link(path) for path in paths if _dangling(path)]
    if dangling:
        raise UsageError(
            f"{'; '.join(dangling)}: a Secret volume without its files? serve makes a self-signed set "
            "only where there is neither file nor symlink"
        )


def _dangling(path: Path) -> bool:
    return path.is_symlink() and not path.exists()


def _dangling_link(path: Path) -> str:
    """A link that loops is named as one: it was called a link to a missing file."""
    problem = stat_problem(path)
    if problem is None:
        return f"{path} is a symlink to a missing {os.readlink(path)}"
    return f"{path} is a symlink to {os.readlink(path)}: {problem}"


def _client_host(host: str) -> str:
    """The host the printed curl line connects to."""
    return "127.0.0.1" if host in WILDCARDS else host


def _warn_unless_named(certificate: Path, host: str) -> None:
    """A certificate kept from an earlier run, or made for another address, that does not name
    the bound host clients connect to: they would refuse it, and the curl line would fail. Bound
    to every address (0.0.0.0, ::), clients connect by whatever name they have for this host (the
    API server by the Service's, which `gpu-webhook certs` names): only a certificate that names
    no host at all is warned about."""
    names = _names(certificate)
    if names is None:
        return  # unreadable: loading the files below says so
    wildcard = host in WILDCARDS
    named = bool(names) if wildcard else host.lower() in {name.lower() for name in names}
    if named:
        return
    wrong = f"is for {', '.join(names)}, not {host}" if names else "names no host"
    make = "" if wildcard else f" for {host}"
    error(
        f"warning: {certificate} {wrong}: clients that check names (the API server, curl) refuse it; "
        f"delete {certificate.parent} for serve to make one{make}, or make one with gpu-webhook certs"
    )


def _names(certificate: Path) -> list[str] | None:
    """The hosts a certificate file names; None when it does not load."""
    try:
        return hosts_of(x509.load_pem_x509_certificate(certificate.read_bytes()))
    except (OSError, ValueError):
        return None


def _announce(plan: Plan, addresses: Sequence[Any]) -> None:
    """Print where the webhook listens and a curl line that posts the example review."""
    port = addresses[0][1] if addresses and isinstance(addresses[0], tuple) else 0
    host = _client_host(plan.host)
    url = f"https://{f'[{host}]' if ':' in host else host}:{port}"
    trust = ["--cacert", str(plan.ca_file)] if plan.ca_file else ["--insecure"]
    client = ["--cert", "CLIENT.crt", "--key", "CLIENT.key"] if plan.tls.client_ca else []
    example = _example_review()
    resolve, target = _by_name(plan, port, url) if plan.ca_file else ([], url)
    curl = ["curl", *trust, *client, *resolve, "-H", "Content-Type: application/json"]
    curl += ["--data-binary", f"@{example}", f"{target}/mutate"]
    print(f"gpu-webhook serving {url} (POST /mutate /validate, GET /healthz /readyz /metrics)", flush=True)
    print(f"decision core: {core_build()}", flush=True)
    print(f"try: {shlex.join(curl)}", flush=True)
    sys.stdout.flush()


def _example_review() -> str:
    """The example review the curl line posts; outside a checkout, a file the user names."""
    example = _here_or_in_checkout(EXAMPLE_REVIEW)
    return str(example) if example.is_file() else REVIEW_PLACEHOLDER


def _by_name(plan: Plan, port: int, url: str) -> tuple[list[str], str]:
    """The curl line's --resolve and URL. Bound to every address with a certificate that does not
    name 127.0.0.1 (one `gpu-webhook certs` made for the Service), curl checking it against ca.crt
    would refuse https://127.0.0.1: the line connects there by the certificate's first DNS name."""
    host = _client_host(plan.host)
    names = _names(plan.tls.certificate) if plan.host in WILDCARDS else None
    if not names or host in names:
        return [], url
    dns = [name for name in names if not name.startswith("*") and not _is_address(name)]
    return (["--resolve", f"{dns[0]}:{port}:{host}"], f"https://{dns[0]}:{port}") if dns else ([], url)


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _seconds(text: str) -> float:
    """argparse type of an interval: MIN_SECONDS to MAX_SECONDS."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not MIN_SECONDS <= seconds <= MAX_SECONDS:  # refuses nan too
        raise argparse.ArgumentTypeError(f"must be {BOUNDS}, got {text}")
    return seconds


def _reload_seconds(text: str) -> float:
    """--reload-seconds: an interval, or 0 for loading the catalog once."""
    try:
        if float(text) == 0:
            return 0.0
        return _seconds(text)
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{exc} (or 0: load once)") from None
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None


def _positive(text: str) -> int:
    value = _whole(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


MAX_WORKERS: Final = 64
MAX_THREADS: Final = 256
"""Bounds of `--workers` and `--threads`: gunicorn takes any count and forks that many processes,
so a typo (`--workers 100000`) filled the machine's memory until its OOM killer killed processes
of other pods; an admission webhook that needs more scales by replicas."""


def _workers(text: str) -> int:
    return _at_most(_positive(text), MAX_WORKERS)


def _threads(text: str) -> int:
    return _at_most(_positive(text), MAX_THREADS)


def _at_most(value: int, bound: int) -> int:
    if value > bound:
        raise argparse.ArgumentTypeError(f"must be at most {bound}, got {value}")
    return value


def _not_negative(text: str) -> int:
    value = _whole(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def _whole(text: str) -> int:
    """argparse names a type function's ValueError by the function (`invalid _positive value`)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
