"""`gpu-webhook certs`: create or renew the webhook's CA and serving certificate.

The set lives in a directory (--out-dir), a Secret manifest (--secret [--secret-file]) or a
Secret in the cluster (--secret --apply); a run reads what is there, renews only what is due
(see webhook.tls.bundle) and prints the CA bundle to stdout. With --patch-webhooks it sets
caBundle on the webhook configurations *before* it stores a new serving certificate, so the
API server trusts a new CA before any pod can serve with it.

Exit 0 when done (changed or not), 1 when a file or the API server could not be written or
reached, 2 on bad arguments or unreadable existing certificates.
"""

from __future__ import annotations

import argparse
import datetime as dt
import ipaddress
import re
import sys
from pathlib import Path

from kubernetes.client import ApiClient

from webhook.commands.common import EXIT_BAD_INPUT, EXIT_OK, UsageError, check_kubeconfig, error
from webhook.tls import cluster
from webhook.tls.bundle import BundleError, CertSet, Outcome, Renewal, renew, service_hosts
from webhook.tls.certgen import CA_KEY_FILE, KEY_FILE
from webhook.tls.files import loose_key_warnings, write_stdout
from webhook.tls.stores import CertStore, ClusterStore, DirStore, ManifestStore

EXIT_FAILED = 1
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$")
_DNS_NAME = re.compile(r"^(\*\.)?" + _DNS_SUBDOMAIN.pattern[1:])
"""A certificate's DNS name may start with a wildcard label; an object's name (DNS-1123 subdomain) may not."""
_DURATION = re.compile(r"^(\d+)([dhm]?)$")
_UNITS = {"d": "days", "": "days", "h": "hours", "m": "minutes"}
_PER_DAY = {"days": 1, "hours": 24, "minutes": 24 * 60}
MAX_DAYS = 36500
"""Validities and renewal margins above a hundred years are refused (larger ones overflow)."""


def add_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = commands.add_parser(
        "certs",
        help="create or renew the webhook's CA and serving certificate; print the CA bundle",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--service", default="gpu-webhook", help="Service name (default: gpu-webhook)")
    parser.add_argument("--namespace", default="gpu-webhook", help="namespace (default: gpu-webhook)")
    parser.add_argument("--dns", action="append", default=[], metavar="NAME", help="extra DNS name")
    parser.add_argument("--ip", action="append", default=[], metavar="IP", help="IP address to include")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--out-dir", metavar="DIR", help="write ca.crt, ca.key, tls.crt, tls.key here")
    where.add_argument("--secret", metavar="NAME", help="produce a kubernetes.io/tls Secret of this name")
    parser.add_argument(
        "--secret-file", metavar="FILE", help="with --secret: write the manifest here (default: stdout)"
    )
    parser.add_argument(
        "--apply", action="store_true", help="with --secret: create or update the Secret in the cluster"
    )
    parser.add_argument("--patch-webhooks", action="store_true", help="set caBundle on the webhooks")
    parser.add_argument(
        "--mutating-webhook", default="gpu-webhook", metavar="NAME", help="(default: gpu-webhook)"
    )
    parser.add_argument(
        "--validating-webhook", default="gpu-webhook", metavar="NAME", help="(default: gpu-webhook)"
    )
    parser.add_argument(
        "--kubeconfig", metavar="FILE", help="kubeconfig (default: in-cluster, else $KUBECONFIG)"
    )
    parser.add_argument(
        "--days", type=_days, default=365, help=f"serving certificate validity, 1 to {MAX_DAYS} (365)"
    )
    parser.add_argument(
        "--ca-days", type=_days, default=3650, help=f"CA validity in days, 1 to {MAX_DAYS} (3650)"
    )
    parser.add_argument(
        "--renew-before",
        type=_duration_text,
        default="30d",
        metavar="DURATION",
        help="renew tls.crt this early (30d)",
    )
    parser.add_argument(
        "--ca-renew-before",
        type=_duration_text,
        default="90d",
        metavar="DURATION",
        help="add a new CA this early (90d)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        plan = _renewal(args)
        api = _connect(args)
        store = _store(args, api)
        loaded = store.load()
        _warn_loose_keys(args, loaded)
        outcome = renew(loaded, plan, dt.datetime.now(dt.UTC))
        if api is not None and args.patch_webhooks:
            _patch_webhooks(api, args, outcome.certs.bundle_pem())
        if outcome.changes:
            store.save(outcome.certs)
    except (UsageError, BundleError) as exc:
        error(str(exc))
        return EXIT_BAD_INPUT
    except (cluster.ClusterError, OSError) as exc:
        error(str(exc))
        return EXIT_FAILED
    _report(outcome, store)
    return _print_bundle(outcome, store)


def _print_bundle(outcome: Outcome, store: CertStore) -> int:
    """The CA bundle on stdout, unless the set itself went there; the set is stored already."""
    if not store.prints_bundle:
        return EXIT_OK
    try:
        write_stdout(outcome.certs.bundle_pem().decode("ascii"), "the CA bundle")
    except OSError as exc:
        error(f"{exc} (the certificates in {store.describe()} are stored)")
        return EXIT_FAILED
    return EXIT_OK


def _renewal(args: argparse.Namespace) -> Renewal:
    _check_names(args)
    renew_before = _duration(args.renew_before, "--renew-before")
    ca_renew_before = _duration(args.ca_renew_before, "--ca-renew-before")
    if renew_before >= dt.timedelta(days=args.days):
        raise UsageError(f"--renew-before {args.renew_before} must be shorter than --days {args.days}")
    if ca_renew_before >= dt.timedelta(days=args.ca_days):
        raise UsageError(
            f"--ca-renew-before {args.ca_renew_before} must be shorter than --ca-days {args.ca_days}"
        )
    if ca_renew_before <= renew_before:
        raise UsageError("--ca-renew-before must be longer than --renew-before (the CAs need an overlap)")
    hosts = service_hosts(args.service, args.namespace, [*args.dns, *(_ip(i) for i in args.ip)])
    return Renewal(hosts, args.days, args.ca_days, renew_before, ca_renew_before)


def _check_names(args: argparse.Namespace) -> None:
    for option, value in (("--service", args.service), ("--namespace", args.namespace)):
        if not _DNS_LABEL.match(value):
            raise UsageError(f"{option} {value!r} is not a DNS label (lowercase letters, digits, '-')")
    for name in args.dns:
        if len(name) > 253 or not _DNS_NAME.match(name):
            raise UsageError(f"--dns {name!r} is not a DNS name")
    if args.secret is not None and (len(args.secret) > 253 or not _DNS_SUBDOMAIN.match(args.secret)):
        raise UsageError(
            f"--secret {args.secret!r} is not a valid Secret name (lowercase letters, digits, '-' and '.')"
        )
    if args.secret is None and (args.secret_file or args.apply):
        raise UsageError("--secret-file and --apply need --secret")
    if args.secret_file and args.apply:
        raise UsageError("--secret-file and --apply exclude each other")


def _ip(text: str) -> str:
    try:
        address = ipaddress.ip_address(text)
    except ValueError as exc:
        raise UsageError(f"--ip {text!r} is not an IP address") from exc
    if isinstance(address, ipaddress.IPv6Address) and address.scope_id is not None:
        zone = f"%{address.scope_id}"
        raise UsageError(
            f"--ip {text!r}: a certificate cannot name a zone ({zone}); give the address without it"
        )
    return str(address)


def _duration(text: str, option: str) -> dt.timedelta:
    match = _DURATION.match(text.strip())
    if match is None:
        raise UsageError(f"{option} {text!r}: use a number with d, h or m, e.g. 30d or 720h")
    unit, count = _UNITS[match.group(2)], int(match.group(1))
    if count > MAX_DAYS * _PER_DAY[unit]:
        raise UsageError(f"{option} {text!r}: at most {MAX_DAYS} days")
    return dt.timedelta(**{unit: count})


def _days(text: str) -> int:
    """argparse type of --days and --ca-days: a whole number of days, 1 to MAX_DAYS."""
    try:
        days = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of days: {text!r}") from None
    if not 1 <= days <= MAX_DAYS:
        raise argparse.ArgumentTypeError(f"must be 1 to {MAX_DAYS} days, got {days}")
    return days


def _duration_text(text: str) -> str:
    """argparse type of the --*renew-before options: checked here, kept as written."""
    try:
        _duration(text, "")
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc).lstrip()) from None
    return text


def _connect(args: argparse.Namespace) -> ApiClient | None:
    if not (args.apply or args.patch_webhooks):
        return None
    check_kubeconfig(args.kubeconfig)
    return cluster.connect(args.kubeconfig)


def _store(args: argparse.Namespace, api: ApiClient | None) -> CertStore:
    if args.out_dir is not None:
        return DirStore(args.out_dir)
    if args.apply:
        assert api is not None
        return ClusterStore(api, args.secret, args.namespace)
    return ManifestStore(args.secret, args.namespace, args.secret_file)


def _warn_loose_keys(args: argparse.Namespace, loaded: CertSet) -> None:
    """Once a run, for each key file it reads that the group or others can read: the keys it
    writes are 0600, so such a file was made or changed by hand (or another tool). A
    --secret-file only when it held a key: an empty one (`mktemp`'s) was said to hold one."""
    if args.out_dir is not None:
        keys = [Path(args.out_dir) / CA_KEY_FILE, Path(args.out_dir) / KEY_FILE]
    else:
        holds_key = loaded.ca_key is not None or loaded.serving is not None
        keys = [Path(args.secret_file)] if args.secret_file and holds_key else []
    for warning in loose_key_warnings(keys):
        error(warning)


def _patch_webhooks(api: ApiClient, args: argparse.Namespace, bundle: bytes) -> None:
    targets = (
        ("MutatingWebhookConfiguration", args.mutating_webhook),
        ("ValidatingWebhookConfiguration", args.validating_webhook),
    )
    for kind, name in targets:
        changed = cluster.patch_ca_bundle(api, kind, name, bundle)
        state = f"set caBundle on {changed} webhook(s)" if changed else "caBundle already current"
        print(f"{kind} {name}: {state}", file=sys.stderr)


def _report(outcome: Outcome, store: CertStore) -> None:
    for change in outcome.changes:
        print(f"{store.describe()}: {change}", file=sys.stderr)
    if not outcome.changes:
        print(
            f"{store.describe()}: nothing changed; nothing is due ({_validity(outcome.certs)})",
            file=sys.stderr,
        )


def _validity(certs: CertSet) -> str:
    """`serving certificate until ..., its CA until ...`, and the next CA when a rotation is under way."""
    serving, issuer, signer = certs.serving, certs.serving_issuer(), certs.signer()
    if serving is None or issuer is None or signer is None:
        return "incomplete set"
    text = f"serving certificate until {serving.certificate.not_valid_after_utc:%Y-%m-%d}, "
    text += f"its CA until {issuer.not_valid_after_utc:%Y-%m-%d}"
    if signer != issuer:
        text += f"; the next CA, until {signer.not_valid_after_utc:%Y-%m-%d}, signs the next one"
    return text
