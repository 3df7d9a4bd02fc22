"""The opt-in component deploy/components/monitoring: a ServiceMonitor, a PrometheusRule and a
Grafana dashboard.

Rendered with the real `kubectl kustomize` in an overlay over each install. The Prometheus
Operator's CRDs are in no Kubernetes OpenAPI schema, so their shape is checked by hand against the
fields the operator requires. Every metric and label each alert's and panel's PromQL names must
be one the server exports (read from the metric definitions, with the suffixes prometheus-client adds) or one
Prometheus and kube-state-metrics provide: a typo in a name would leave an alert that never fires.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from tests.conftest import ROOT
from tests.deploy.conftest import DEPLOY, Objects, one, render_path
from webhook.catalog.reload import CatalogMetrics
from webhook.report.files import StaticUsageInventorySource
from webhook.report.metrics import inventory_registry
from webhook.report.service import ReportService
from webhook.server.metrics import LATENCY_BUCKETS, certificate_expiry_gauge, create_metrics
from webhook.sources import StaticCatalogSource
from webhook.tls.bundle import service_hosts

MONITORING = "monitoring.coreos.com/v1"
INSTALLS = {"default": "deploy", "cert-manager": "deploy/overlays/cert-manager"}
TARGET_LABELS = {"job", "instance", "namespace", "service", "pod", "container", "endpoint"}
"""What the Prometheus Operator labels each ServiceMonitor target with."""
EXTERNAL = {
    "up": set(),  # Prometheus: 1 when the scrape succeeded; target labels only
    "kube_deployment_status_replicas_available": {"namespace", "deployment"},  # kube-state-metrics
    "kube_cronjob_status_last_successful_time": {"namespace", "cronjob"},
    "kube_cronjob_created": {"namespace", "cronjob"},
}
INVENTORY = ROOT / "examples" / "inventories"
SEVERITIES = {"critical", "warning"}


@pytest.fixture(scope="module", params=sorted(INSTALLS))
def monitored(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Objects:
    """An overlay of an install with the component, as README says to write it."""
    root = tmp_path_factory.mktemp("monitored")
    shutil.copytree(DEPLOY, root / "deploy")
    overlay = root / "overlay"
    overlay.mkdir()
    install = Path("..") / INSTALLS[str(request.param)]
    kustomization = {"resources": [str(install)], "components": ["../deploy/components/monitoring"]}
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    return render_path(overlay)


def exported_metrics() -> dict[str, set[str]]:
    """Every series name /metrics can serve, with its labels: the review metrics, the catalog
    reload metrics, the certificate's expiry and the inventory gauges (computed from the example
    cluster)."""
    metrics = create_metrics()
    wrappers: list[Counter | Histogram | Gauge] = [
        getattr(metrics, name)
        for name in vars(metrics)
        if isinstance(getattr(metrics, name), Counter | Histogram)
    ]
    catalog = CatalogMetrics.create(CollectorRegistry())
    wrappers += [catalog.reloads, catalog.last_success, catalog.last_success_time]
    wrappers.append(certificate_expiry_gauge())
    found: dict[str, set[str]] = {}
    for wrapper in wrappers:
        labels = set(wrapper._labelnames)
        for name, extra in _series(wrapper._name, wrapper._type):
            found[name] = labels | extra
    inventory = StaticUsageInventorySource(
        INVENTORY / "mixed-cluster.yaml", INVENTORY / "mixed-cluster-pods.yaml"
    )
    catalog_source = StaticCatalogSource([ROOT / "templates", ROOT / "policies"])
    inventory.start()
    catalog_source.start()
    for family in inventory_registry(ReportService(inventory, catalog_source)).collect():
        found[family.name] = set(family._labelnames)  # type: ignore[attr-defined]
    return found


def _series(name: str, kind: str) -> list[tuple[str, set[str]]]:
    """The series names prometheus-client writes for a metric (_created left out: the server
    runs in multiprocess mode, which does not export it)."""
    if kind == "counter":
        return [(f"{name}_total", set())]
    if kind == "histogram":
        return [(f"{name}_bucket", {"le"}), (f"{name}_count", set()), (f"{name}_sum", set())]
    return [(name, set())]


@dataclass
class Expression:
    selectors: list[tuple[str, set[str]]] = field(default_factory=list)
    """Each metric selected, with the labels its matchers name."""
    grouping: set[str] = field(default_factory=set)
    """Labels named in by/without/on/ignoring/group_left/group_right."""


TOKEN = re.compile(
    r"""(?P<string>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`[^`]*`)
    |(?P<range>\[[^\]]*\])
    |(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)
    |(?P<number>[0-9][0-9.]*(?:e[+-]?[0-9]+)?[a-z]*)
    |(?P<punct>=~|!~|!=|==|>=|<=|[{}(),=<>+\-*/^%])
    |(?P<space>\s+)""",
    re.VERBOSE,
)
GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}
KEYWORDS = {"and", "or", "unless", "offset", "bool", "inf", "nan"}


def parse(expr: str) -> Expression:
    """The metrics and labels a PromQL expression names (enough PromQL for alerting rules)."""
    tokens: list[tuple[str, str]] = []
    position = 0
    while position < len(expr):
        match = TOKEN.match(expr, position)
        assert match, f"cannot read {expr[position:]!r}"
        position = match.end()
        if match.lastgroup != "space":
            tokens.append((str(match.lastgroup), match.group()))
    parsed = Expression()
    i = 0
    while i < len(tokens):
        kind, text = tokens[i]
        following = tokens[i + 1][1] if i + 1 < len(tokens) else ""
        if kind != "name" or text.lower() in KEYWORDS:
            i += 1
        elif text.lower() in GROUPING and following == "(":
            end = _closing(tokens, i + 1)
            parsed.grouping |= {t for k, t in tokens[i + 2 : end] if k == "name"}
            i = end + 1
        elif following == "(" or following.lower() in ("by", "without"):  # a function or an aggregation
            i += 1
        elif following == "{":
            end = next(j for j in range(i + 1, len(tokens)) if tokens[j][1] == "}")
            matchers = tokens[i + 2 : end]
            parsed.selectors.append(
                (text, {t for j, (k, t) in enumerate(matchers) if k == "name" and j % 4 == 0})
            )
            i = end + 1
        else:
            parsed.selectors.append((text, set()))
            i += 1
    return parsed


def _closing(tokens: list[tuple[str, str]], opening: int) -> int:
    depth = 0
    for j in range(opening, len(tokens)):
        depth += {"(": 1, ")": -1}.get(tokens[j][1], 0)
        if depth == 0:
            return j
    raise AssertionError("unbalanced parentheses")


def rules(objects: Objects) -> list[dict[str, Any]]:
    rule = one(objects, "PrometheusRule")
    return [r for group in rule["spec"]["groups"] for r in group["rules"]]


def dashboard(objects: Objects) -> dict[str, Any]:
    config_map = one(objects, "ConfigMap", "gpu-webhook-grafana-dashboard")
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    (text,) = config_map["data"].values()
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def expressions(objects: Objects) -> list[tuple[str, str]]:
    """(where, PromQL) of every alert and every dashboard panel's query."""
    found = [(r["alert"], r["expr"]) for r in rules(objects)]
    for panel in dashboard(objects)["panels"]:
        found += [(f"panel {panel['title']}", t["expr"]) for t in panel["targets"]]
    return found


def target_labels(objects: Objects) -> set[str]:
    """The operator's target labels, less those the ServiceMonitor drops before the scrape."""
    (endpoint,) = one(objects, "ServiceMonitor")["spec"]["endpoints"]
    dropped = {r["regex"] for r in endpoint.get("relabelings", []) if r.get("action") == "labeldrop"}
    return {label for label in TARGET_LABELS if not any(re.fullmatch(d, label) for d in dropped)}


def test_the_parser_reads_metrics_matchers_and_grouping() -> None:
    parsed = parse(
        'histogram_quantile(0.99, sum by (le, endpoint) (rate(a_bucket{dry_run="false", x=~"y"}[5m])))'
        " > 2.5 or on (pod) b offset 10m"
    )
    assert parsed.selectors == [("a_bucket", {"dry_run", "x"}), ("b", set())]
    assert parsed.grouping == {"le", "endpoint", "pod"}


def test_every_metric_and_label_an_expression_names_is_exported(monitored: Objects) -> None:
    exported = exported_metrics()
    assert "gpu_webhook_review_duration_seconds_bucket" in exported  # the suffixes are added
    targets = target_labels(monitored)
    for where, expr in expressions(monitored):
        parsed = parse(expr)
        assert parsed.selectors, where
        for metric, matched in parsed.selectors:
            known = exported.get(metric, EXTERNAL.get(metric))
            assert known is not None, f"{where}: {metric} is not a metric anything exports"
            labels = known | targets
            assert matched <= labels, f"{where}: {metric} has no label {matched - labels}"
            assert parsed.grouping <= labels, f"{where}: {metric} has no label {parsed.grouping - labels}"


def test_the_dashboard_s_legends_name_labels_its_queries_keep(monitored: Objects) -> None:
    board = dashboard(monitored)
    variables = {v["name"] for v in board["templating"]["list"]}
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids))
    for panel in board["panels"]:
        for target in [panel, *panel["targets"]]:
            assert target["datasource"]["uid"].strip("${}") in variables, panel["title"]
        for target in panel["targets"]:
            named = set(re.findall(r"{{\s*(\w+)\s*}}", target.get("legendFormat", "")))
            assert named <= parse(target["expr"]).grouping, f"{panel['title']}: {named}"


def test_no_exported_label_clashes_with_a_target_label(monitored: Objects) -> None:
    """Prometheus renames a scraped label that a target label also has to exported_<name>: the
    operator's `endpoint` (the port's name) would hide the metrics' own (mutate, validate)."""
    targets = target_labels(monitored)
    for metric, labels in exported_metrics().items():
        assert not labels & targets, f"{metric}: {labels & targets}"


def test_the_service_monitor_scrapes_the_service_over_verified_https(monitored: Objects) -> None:
    monitor = one(monitored, "ServiceMonitor")
    service = one(monitored, "Service", "gpu-webhook")
    assert monitor["apiVersion"] == MONITORING
    spec = monitor["spec"]
    assert spec["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert spec["namespaceSelector"]["matchNames"] == [service["metadata"]["namespace"]]
    (endpoint,) = spec["endpoints"]
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert (endpoint["scheme"], endpoint.get("path", "/metrics")) == ("https", "/metrics")
    tls = endpoint["tlsConfig"]
    assert not tls.get("insecureSkipVerify")
    deployment = one(monitored, "Deployment", "gpu-webhook")
    (volume,) = [v for v in deployment["spec"]["template"]["spec"]["volumes"] if v["name"] == "tls"]
    assert tls["ca"]["secret"] == {"name": volume["secret"]["secretName"], "key": "ca.crt"}
    assert tls["serverName"] in service_hosts("gpu-webhook", "gpu-webhook")


def test_each_alert_has_a_severity_and_says_what_to_do(monitored: Objects) -> None:
    rule = one(monitored, "PrometheusRule")
    assert rule["apiVersion"] == MONITORING
    assert rule["metadata"]["namespace"] == "gpu-webhook"
    found = rules(monitored)
    names = [r["alert"] for r in found]
    assert len(names) == len(set(names))
    for alert in found:
        assert alert["expr"].strip() and alert["labels"]["severity"] in SEVERITIES, alert["alert"]
        assert alert["annotations"]["summary"] and alert["annotations"]["description"], alert["alert"]
        assert re.fullmatch(r"[0-9]+[smh]", alert.get("for", "0s")), alert["alert"]


def test_the_latency_alert_fires_below_the_webhook_timeout_at_a_bucket_bound(monitored: Objects) -> None:
    """The API server gives up at timeoutSeconds; a threshold on a bucket bound is exact."""
    (alert,) = [r for r in rules(monitored) if "gpu_webhook_review_duration_seconds_bucket" in r["expr"]]
    threshold = float(re.search(r">\s*([0-9.]+)\s*$", alert["expr"]).group(1))  # type: ignore[union-attr]
    timeouts = [
        w["timeoutSeconds"]
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
        for w in one(monitored, kind)["webhooks"]
    ]
    assert threshold in LATENCY_BUCKETS
    assert threshold < min(timeouts)


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        pytest.skip("promtool is not installed (Debian package prometheus); cannot check the rules")
    return found


def test_promtool_accepts_the_rules_and_the_dashboard_s_queries(monitored: Objects, tmp_path: Path) -> None:
    """The panels' queries as recording rules: promtool parses their PromQL as it does the alerts'."""
    spec = copy.deepcopy(one(monitored, "PrometheusRule")["spec"])
    queries = [e for where, e in expressions(monitored) if where.startswith("panel ")]
    spec["groups"].append(
        {"name": "dashboard", "rules": [{"record": f"panel_{i}", "expr": e} for i, e in enumerate(queries)]}
    )
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(spec))
    result = subprocess.run(
        [promtool(), "check", "rules", str(path)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


ERRORS = (
    'gpu_webhook_internal_errors_total{namespace="gpu-webhook",pod="a",endpoint="mutate",dry_run="false"}'
)
SKIPPED = (
    'gpu_webhook_violations_total{namespace="gpu-webhook",pod="b",endpoint="mutate",'
    'code="MutationSkipped",outcome="warn",dry_run="false"}'
)
POD_A, POD_B = ({"severity": "warning", "namespace": "gpu-webhook", "pod": pod} for pod in "ab")
FIRST_ERRORS = {
    "rule_files": ["rules.yaml"],
    "evaluation_interval": "1m",
    "tests": [
        {
            "interval": "1m",
            "input_series": [
                {"series": ERRORS, "values": "_x5 1x30"},  # absent 5 minutes, then 1
                {"series": SKIPPED, "values": "_x3 2x40"},
            ],
            "alert_rule_test": [
                {
                    "eval_time": "8m",
                    "alertname": "GpuWebhookInternalErrors",
                    "exp_alerts": [{"exp_labels": {**POD_A, "endpoint": "mutate"}}],
                },
                {
                    "eval_time": "8m",
                    "alertname": "GpuWebhookMutationsFailingOpen",
                    "exp_alerts": [{"exp_labels": POD_A}, {"exp_labels": POD_B}],
                },
                {"eval_time": "25m", "alertname": "GpuWebhookInternalErrors", "exp_alerts": []},
                {"eval_time": "25m", "alertname": "GpuWebhookMutationsFailingOpen", "exp_alerts": []},
            ],
        }
    ],
}


def test_the_first_error_of_a_pod_fires_the_error_alerts(monitored: Objects, tmp_path: Path) -> None:
    """A counter appears at its first count, 1, where increase() sees nothing: the error alerts
    must fire on it, and stop once it is 10 minutes old (`promtool test rules`)."""
    promtool_test(monitored, tmp_path, FIRST_ERRORS)


def promtool_test(monitored: Objects, tmp_path: Path, tests: dict[str, Any]) -> None:
    """`promtool test rules` of `tests` against the rendered PrometheusRule."""
    spec = copy.deepcopy(one(monitored, "PrometheusRule")["spec"])
    for group in spec["groups"]:
        for rule in group["rules"]:
            rule.pop("annotations", None)  # promtool compares them too; checked above
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(spec))
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(tests))
    result = subprocess.run(
        [promtool(), "test", "rules", "test.yaml"], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


DAY = 24 * 60
"""Samples (one a minute) in a day."""
ENDS = 10 * 86400
"""The certificate the pods serve ends 10 days after the test starts (promtool's time() is 0 then)."""


def expiry(pod: str) -> str:
    return f"gpu_webhook_tls_certificate_not_after_seconds{target(pod)}"


def up(pod: str) -> str:
    return f"up{target(pod)}"


def target(pod: str) -> str:
    return f'{{job="gpu-webhook",namespace="gpu-webhook",pod="{pod}"}}'


def expiry_alerts(at: str, warned: str, paged: str) -> list[dict[str, Any]]:
    """What each expiry alert should fire for at `at`: the pods in `warned` and in `paged`."""
    labels = {"job": "gpu-webhook", "namespace": "gpu-webhook"}
    return [
        {
            "eval_time": at,
            "alertname": alert,
            "exp_alerts": [{"exp_labels": {**labels, "severity": severity, "pod": pod}} for pod in pods],
        }
        for alert, severity, pods in (
            ("GpuWebhookCertificateExpiringSoon", "warning", warned),
            ("GpuWebhookCertificateExpiring", "critical", paged),
        )
    ]


CERTIFICATE_ENDS = {
    "rule_files": ["rules.yaml"],
    "evaluation_interval": "5m",
    "tests": [
        {
            "interval": "1m",
            "input_series": [
                # a: never renewed; once it has ended, the scrape (which verifies it) fails.
                {"series": expiry("a"), "values": f"{ENDS}x{10 * DAY - 1} _x{DAY}"},
                {"series": up("a"), "values": f"1x{10 * DAY - 1} 0x{DAY}"},
                # b: renewed on day 5 to one that ends on day 40.
                {"series": expiry("b"), "values": f"{ENDS}x{5 * DAY - 1} {4 * ENDS}x{6 * DAY}"},
                {"series": up("b"), "values": f"1x{11 * DAY}"},
                # c: a pod deleted on day 8.5, with the old certificate.
                {"series": expiry("c"), "values": f"{ENDS}x{8 * DAY + DAY // 2}"},
                {"series": up("c"), "values": f"1x{8 * DAY + DAY // 2}"},
            ],
            "alert_rule_test": [
                *expiry_alerts("2d", "", ""),
                *expiry_alerts("4d", "abc", ""),
                *expiry_alerts("6d", "ac", ""),
                *expiry_alerts("9d12h", "a", "a"),
                *expiry_alerts("10d12h", "a", "a"),
            ],
        }
    ],
}


def test_the_expiry_alerts_fire_before_the_certificate_ends_and_stay_on_after(
    monitored: Objects, tmp_path: Path
) -> None:
    """A warning from 7 days before the served certificate ends and a page from 1 day, until it
    is renewed; still on once it has ended and the pod's scrape fails, and off for a pod that is
    gone (`promtool test rules`)."""
    promtool_test(monitored, tmp_path, CERTIFICATE_ENDS)


def test_every_alert_is_explained_in_the_readme(monitored: Objects) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for alert in rules(monitored):
        assert f"| `{alert['alert']}`" in readme, alert["alert"]


CERTS_CRONJOB = '{namespace="gpu-webhook",cronjob="gpu-webhook-certs"}'
RENEWAL = {"severity": "warning", "namespace": "gpu-webhook", "cronjob": "gpu-webhook-certs"}
RENEWALS = {
    "rule_files": ["rules.yaml"],
    "evaluation_interval": "5m",
    "tests": [
        {  # runs succeed on days 0 and 1, then fail
            "interval": "1m",
            "input_series": [
                {"series": f"kube_cronjob_created{CERTS_CRONJOB}", "values": f"0x{4 * DAY}"},
                {
                    "series": f"kube_cronjob_status_last_successful_time{CERTS_CRONJOB}",
                    "values": f"0x{DAY - 1} 86400x{3 * DAY}",
                },
            ],
            "alert_rule_test": [
                {"eval_time": "1d12h", "alertname": "GpuWebhookCertificateRenewalFailing", "exp_alerts": []},
                {"eval_time": "3d1h", "alertname": "GpuWebhookCertificateRenewalFailing", "exp_alerts": []},
                {
                    "eval_time": "3d3h",
                    "alertname": "GpuWebhookCertificateRenewalFailing",
                    "exp_alerts": [{"exp_labels": RENEWAL}],
                },
            ],
        },
        {  # a CronJob whose runs never succeeded
            "interval": "1m",
            "input_series": [{"series": f"kube_cronjob_created{CERTS_CRONJOB}", "values": f"0x{3 * DAY}"}],
            "alert_rule_test": [
                {"eval_time": "1d", "alertname": "GpuWebhookCertificateRenewalFailing", "exp_alerts": []},
                {
                    "eval_time": "2d3h",
                    "alertname": "GpuWebhookCertificateRenewalFailing",
                    "exp_alerts": [{"exp_labels": RENEWAL}],
                },
            ],
        },
    ],
}


def test_the_renewal_alert_fires_when_the_certs_cronjob_has_not_succeeded_for_two_days(
    monitored: Objects, tmp_path: Path
) -> None:
    """The daily run succeeds even with nothing to renew: two failed in a row fire the alert,
    and so does a CronJob that never succeeded, from its creation (`promtool test rules`)."""
    promtool_test(monitored, tmp_path, RENEWALS)
