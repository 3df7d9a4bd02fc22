"""The Deployment, Service, PDB and certs Job are highly available, locked down and consistent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT
from tests.deploy.conftest import DEPLOY, Objects, one, render_path
from webhook.cli import build_parser
from webhook.server import gunicorn_conf
from webhook.tls.bundle import service_hosts

SERVE_ARGS = [
    "serve",
    "--bind=0.0.0.0:8443",
    "--cert-dir=/etc/gpu-webhook/tls",
    "--templates=/etc/gpu-webhook/templates",
    "--policies=/etc/gpu-webhook/policies",
    "--in-cluster",
    "--workers=2",
]


def _pod(objects: Objects) -> dict[str, Any]:
    spec: dict[str, Any] = one(objects, "Deployment", "gpu-webhook")["spec"]["template"]["spec"]
    return spec


def _container(objects: Objects) -> dict[str, Any]:
    (container,) = _pod(objects)["containers"]
    return dict(container)


def test_replicas_spread_and_rollout_keep_an_answer(objects: Objects) -> None:
    deployment = one(objects, "Deployment", "gpu-webhook")
    assert deployment["spec"]["replicas"] >= 2
    assert deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    spread = {c["topologyKey"]: c for c in _pod(objects)["topologySpreadConstraints"]}
    assert spread["kubernetes.io/hostname"]["maxSkew"] == 1
    assert spread["kubernetes.io/hostname"]["labelSelector"]["matchLabels"].items() <= labels.items()


def test_replicas_are_not_preempted_and_their_class_is_admitted_in_the_namespace(objects: Objects) -> None:
    """The validating webhook fails closed: a replica preempted for other pods stops pod creation.
    Where the API server limits the critical classes to kube-system (GKE), a pod of one is refused
    in a namespace without a quota covering it, so the quota must cover the replicas and a surge."""
    deployment = one(objects, "Deployment", "gpu-webhook")
    assert _pod(objects)["priorityClassName"] == "system-cluster-critical"
    quota = one(objects, "ResourceQuota")
    assert quota["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    (scope,) = quota["spec"]["scopeSelector"]["matchExpressions"]
    assert (scope["scopeName"], scope["operator"]) == ("PriorityClass", "In")
    assert "system-cluster-critical" in scope["values"]
    surge = deployment["spec"]["strategy"]["rollingUpdate"]["maxSurge"]
    assert int(quota["spec"]["hard"]["pods"]) >= deployment["spec"]["replicas"] + surge


def test_spread_counts_only_the_pods_of_one_rollout(objects: Objects) -> None:
    """Counted with the old pods still running, the second new pod sees two nodes (or zones) with
    one pod each and may join the first: after a rollout both replicas can share one node, and
    losing it refuses every GPU pod. pod-template-hash counts each ReplicaSet's pods alone."""
    for constraint in _pod(objects)["topologySpreadConstraints"]:
        assert "pod-template-hash" in constraint.get("matchLabelKeys", []), constraint["topologyKey"]


def test_a_rollout_keeps_serving_until_the_pod_has_left_the_endpoints(objects: Objects) -> None:
    """preStop holds SIGTERM back while the endpoints drop the pod (the validating webhook fails
    closed), and the grace period covers that pause plus gunicorn's graceful shutdown."""
    command = _container(objects)["lifecycle"]["preStop"]["exec"]["command"]
    assert command[0] == "sleep" and len(command) == 2
    pause = int(command[1])
    assert pause >= 5
    grace = _pod(objects)["terminationGracePeriodSeconds"]
    assert grace > pause + gunicorn_conf.graceful_timeout
    assert gunicorn_conf.graceful_timeout >= 10, "a review (timeoutSeconds 5) in flight can finish"


def test_pdb_allows_one_disruption_of_exactly_these_pods(objects: Objects) -> None:
    pdb = one(objects, "PodDisruptionBudget", "gpu-webhook")
    deployment = one(objects, "Deployment", "gpu-webhook")
    assert pdb["spec"]["maxUnavailable"] == 1 and "minAvailable" not in pdb["spec"]
    assert pdb["spec"]["selector"] == deployment["spec"]["selector"]


def test_pdb_lets_a_drain_evict_webhook_pods_that_are_not_ready(objects: Objects) -> None:
    """With both replicas crashlooping (or not ready), the default IfHealthyBudget refuses every
    eviction (0 healthy < the 1 desired), so `kubectl drain` and node pool upgrades hang on them."""
    pdb = one(objects, "PodDisruptionBudget", "gpu-webhook")
    assert pdb["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow"


def test_pod_is_locked_down(objects: Objects) -> None:
    pod = _pod(objects)
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] > 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    context = _container(objects)["securityContext"]
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert context.get("privileged", False) is False


def test_writable_tmp_is_an_empty_dir(objects: Objects) -> None:
    volumes = {v["name"]: v for v in _pod(objects)["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in _container(objects)["volumeMounts"]}
    assert "emptyDir" in volumes[mounts["/tmp"]]
    env = {e["name"]: e["value"] for e in _container(objects).get("env", [])}
    metrics_dir = env["PROMETHEUS_MULTIPROC_DIR"]
    assert metrics_dir.startswith("/tmp") and "emptyDir" in volumes[mounts[metrics_dir]]


def test_resources_have_requests_and_limits(objects: Objects) -> None:
    resources = _container(objects)["resources"]
    assert {"cpu", "memory"} <= set(resources["requests"]) and {"cpu", "memory"} <= set(resources["limits"])


def test_probes_use_https_health_endpoints_on_the_serving_port(objects: Objects) -> None:
    container = _container(objects)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"https": 8443}
    expected = {"livenessProbe": "/healthz", "readinessProbe": "/readyz", "startupProbe": "/healthz"}
    for probe, path in expected.items():
        check = container[probe]["httpGet"]
        assert (check["path"], check["scheme"]) == (path, "HTTPS")
        assert ports.get(check["port"], check["port"]) == 8443


def test_service_maps_443_to_the_container_port(objects: Objects) -> None:
    service = one(objects, "Service", "gpu-webhook")
    (port,) = service["spec"]["ports"]
    ports = {p["name"]: p["containerPort"] for p in _container(objects)["ports"]}
    assert port["port"] == 443 and ports.get(port["targetPort"], port["targetPort"]) == 8443
    labels = one(objects, "Deployment", "gpu-webhook")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()


def test_server_runs_with_the_agreed_command_and_mounts(objects: Objects) -> None:
    container = _container(objects)
    assert container.get("command") is None and container["args"] == SERVE_ARGS
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in _pod(objects)["volumes"]}
    tls = volumes[mounts["/etc/gpu-webhook/tls"]["name"]]["secret"]
    assert tls["secretName"] == "gpu-webhook-tls"
    assert {i["key"] for i in tls["items"]} == {"tls.crt", "tls.key", "ca.crt"}, "ca.key stays out of the pod"
    for folder in ("templates", "policies"):
        mount = mounts[f"/etc/gpu-webhook/{folder}"]
        config_map = volumes[mount["name"]]["configMap"]["name"]
        assert mount["readOnly"] and config_map.startswith(f"gpu-webhook-{folder}-"), "hashed name rolls pods"
        one(objects, "ConfigMap", config_map)


def test_certs_job_and_cronjob_run_the_same_idempotent_command(rendered: Any) -> None:
    objects = rendered("default")
    job = one(objects, "Job", "gpu-webhook-certs")["spec"]["template"]
    cron = one(objects, "CronJob", "gpu-webhook-certs")["spec"]["jobTemplate"]["spec"]["template"]
    assert job == cron
    (container,) = job["spec"]["containers"]
    args = container["args"]
    assert args[0] == "certs" and "--apply" in args and "--patch-webhooks" in args
    options = dict(a.split("=", 1) for a in args[1:] if "=" in a)
    assert options["--secret"] == "gpu-webhook-tls"
    assert (options["--service"], options["--namespace"]) == ("gpu-webhook", "gpu-webhook")
    assert options["--mutating-webhook"] == options["--validating-webhook"] == "gpu-webhook"
    assert container["image"] == _container(objects)["image"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert job["spec"]["securityContext"]["runAsNonRoot"] is True


def test_a_stuck_renewal_run_ends_before_the_next_one_is_due(rendered: Any) -> None:
    """concurrencyPolicy Forbid skips a run while the last one is active: a Job whose pod never
    starts (an image that cannot be pulled, fixed since) would stop every renewal for good."""
    cron = one(rendered("default"), "CronJob", "gpu-webhook-certs")["spec"]
    assert cron["schedule"].split()[2:] == ["*", "*", "*"], "daily"
    assert cron["concurrencyPolicy"] == "Forbid"
    assert 0 < cron["jobTemplate"]["spec"]["activeDeadlineSeconds"] < 24 * 3600


def test_cert_manager_serving_certificate_matches_what_the_webhooks_call(rendered: Any) -> None:
    objects = rendered("cert-manager")
    serving = one(objects, "Certificate", "gpu-webhook-serving")
    assert serving["spec"]["secretName"] == "gpu-webhook-tls"
    assert tuple(serving["spec"]["dnsNames"]) == service_hosts("gpu-webhook", "gpu-webhook")
    namespace, name = "gpu-webhook", serving["metadata"]["name"]
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        annotations = one(objects, kind, "gpu-webhook")["metadata"]["annotations"]
        assert annotations["cert-manager.io/inject-ca-from"] == f"{namespace}/{name}"
    issuer = one(objects, "Issuer", serving["spec"]["issuerRef"]["name"])
    ca = [c for c in objects if c["kind"] == "Certificate" and c["spec"].get("isCA")]
    assert [c["spec"]["secretName"] for c in ca] == [issuer["spec"]["ca"]["secretName"]]


def test_cert_manager_keeps_the_ca_key_when_it_renews_the_ca(rendered: Any) -> None:
    """cert-manager >= 1.18 defaults rotationPolicy to Always: a renewed CA would get a new key,
    and the serving certificate signed by the old one would no longer chain to the injected CA."""
    objects = rendered("cert-manager")
    ca = [c for c in objects if c["kind"] == "Certificate" and c["spec"].get("isCA")]
    assert ca and all(c["spec"]["privateKey"]["rotationPolicy"] == "Never" for c in ca)
    serving = one(objects, "Certificate", "gpu-webhook-serving")
    assert serving["spec"]["privateKey"]["rotationPolicy"] == "Always"


def test_switching_installs_deletes_the_other_s_certificate_makers_and_nothing_else(rendered: Any) -> None:
    """README's commands to switch: to cert-manager, delete what deploy/certs-job renders (applying
    the overlay leaves the CronJob patching caBundle against cainjector); back, delete the
    overlay's cert-manager.yaml. Neither may delete an object the other install has."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    switches = {
        "cert-manager": ("kubectl delete -k deploy/certs-job/", render_path(DEPLOY / "certs-job")),
        "default": (
            "kubectl delete -f deploy/overlays/cert-manager/cert-manager.yaml",
            _documents(DEPLOY / "overlays" / "cert-manager" / "cert-manager.yaml"),
        ),
    }
    for target, (command, deleted) in switches.items():
        assert command in readme, command
        kept = {_identity(o) for o in rendered(target)}
        assert not {_identity(o) for o in deleted} & kept, target
    certs_job = {_identity(o) for o in switches["cert-manager"][1]}
    assert {
        ("CronJob", "gpu-webhook", "gpu-webhook-certs"),
        ("Job", "gpu-webhook", "gpu-webhook-certs"),
    } <= certs_job


def _documents(path: Path) -> Objects:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]


def _identity(document: dict[str, Any]) -> tuple[str, str, str]:
    metadata = document["metadata"]
    return document["kind"], metadata.get("namespace", ""), metadata["name"]


def test_container_args_are_accepted_by_the_cli(rendered: Any) -> None:
    objects = rendered("default")
    job = one(objects, "Job", "gpu-webhook-certs")["spec"]["template"]["spec"]["containers"][0]
    for args in (_container(objects)["args"], job["args"]):
        try:
            parsed = build_parser().parse_args(args)
        except SystemExit:
            pytest.fail(f"gpu-webhook does not accept {args}")
        assert parsed.command == args[0]
