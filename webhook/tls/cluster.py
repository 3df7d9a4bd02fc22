"""The API server side of `gpu-webhook certs`: the TLS Secret and the webhooks' caBundle.

Everything goes through the official `kubernetes` client. Reads ask for the raw JSON
(`_preload_content=False`) so no field is lost to a model class; every failure becomes a
ClusterError whose message says which object, what the server answered, or why it is
unreachable.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from webhook.kubeconfig import CONFIG_ERRORS, config_problem

REQUEST_TIMEOUT = (5, 30)
KINDS = {
    "MutatingWebhookConfiguration": "mutating_webhook_configuration",
    "ValidatingWebhookConfiguration": "validating_webhook_configuration",
}


class ClusterError(Exception):
    """The API server could not be reached or refused a request; printed without a traceback."""


def connect(kubeconfig: str | None) -> client.ApiClient:
    """A client from --kubeconfig, else the in-cluster service account, else $KUBECONFIG/~/.kube/config."""
    try:
        if kubeconfig is None and "KUBERNETES_SERVICE_HOST" in os.environ:
            configuration = client.Configuration()
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
            return client.ApiClient(configuration)
        loaded: client.ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig, persist_config=False
        )
        return loaded
    except CONFIG_ERRORS as exc:
        source = kubeconfig or "the in-cluster or default kubeconfig"
        raise ClusterError(f"cannot load {source}: {config_problem(exc)}") from exc


def read_secret(api: client.ApiClient, namespace: str, name: str) -> dict[str, Any] | None:
    """The Secret as a dict, or None when it does not exist."""
    core = client.CoreV1Api(api)
    what = f"Secret {namespace}/{name}"
    return _call(what, lambda: core.read_namespaced_secret(name, namespace, **_RAW), missing_ok=True)


def write_secret(api: client.ApiClient, secret: dict[str, Any], resource_version: str | None) -> None:
    """Create the Secret, or replace it guarded by the resourceVersion that was read."""
    core = client.CoreV1Api(api)
    metadata = secret["metadata"]
    name, namespace = metadata["name"], metadata["namespace"]
    body = client.V1Secret(
        api_version="v1",
        kind="Secret",
        metadata=client.V1ObjectMeta(
            name=name, namespace=namespace, labels=metadata.get("labels"), resource_version=resource_version
        ),
        type=secret["type"],
        data=secret["data"],
    )
    what = f"Secret {namespace}/{name}"
    if resource_version is None:
        _call(what, lambda: core.create_namespaced_secret(namespace, body, **_RAW))
    else:
        _call(what, lambda: core.replace_namespaced_secret(name, namespace, body, **_RAW))


def patch_ca_bundle(api: client.ApiClient, kind: str, name: str, bundle_pem: bytes) -> int:
    """Set caBundle on every webhook of one configuration; return how many entries changed.

    The JSON Patch tests each entry's name at its index, so a concurrent reorder makes the
    server refuse the patch instead of giving a bundle to the wrong webhook.
    """
    admission = client.AdmissionregistrationV1Api(api)
    what = f"{kind} {name}"
    read = getattr(admission, f"read_{KINDS[kind]}")
    current = _call(what, lambda: read(name, **_RAW))
    assert current is not None
    operations = ca_bundle_patch(current, base64.b64encode(bundle_pem).decode("ascii"))
    if not operations:
        return 0
    patch = getattr(admission, f"patch_{KINDS[kind]}")
    _call(what, lambda: patch(name, operations, **_RAW))
    return len(operations) // 2


def ca_bundle_patch(configuration: dict[str, Any], ca_bundle: str) -> list[dict[str, Any]]:
    """JSON Patch operations that set caBundle where it differs (none when all already match)."""
    operations: list[dict[str, Any]] = []
    for index, webhook in enumerate(configuration.get("webhooks") or []):
        if (webhook.get("clientConfig") or {}).get("caBundle") == ca_bundle:
            continue
        operations.append({"op": "test", "path": f"/webhooks/{index}/name", "value": webhook["name"]})
        operations.append(
            {"op": "add", "path": f"/webhooks/{index}/clientConfig/caBundle", "value": ca_bundle}
        )
    return operations


_RAW: Mapping[str, Any] = MappingProxyType({"_preload_content": False, "_request_timeout": REQUEST_TIMEOUT})


def _call(what: str, request: Callable[[], Any], missing_ok: bool = False) -> dict[str, Any] | None:
    try:
        response = request()
    except ApiException as exc:
        if missing_ok and exc.status == 404:
            return None
        raise ClusterError(f"{what}: the API server answered {exc.status} {_status_message(exc)}") from exc
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise ClusterError(f"{what}: cannot reach the API server: {_reason(exc)}") from exc
    body: dict[str, Any] = json.loads(response.data or b"{}")
    return body


def _status_message(exc: ApiException) -> str:
    try:
        status = json.loads(exc.body or "{}")
    except ValueError:
        return str(exc.reason or "")
    return str(status.get("message") or exc.reason or "") if isinstance(status, dict) else str(exc.reason)


def _reason(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None)
    return str(reason or exc)
