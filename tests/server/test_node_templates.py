"""`serve --node-templates`: pools that autoscale from zero count in the served decisions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.conftest import ROOT
from tests.server.support import Client, WebhookProcess, write_serving_set

MORE_INVENTORIES = ROOT / "tests" / "inventories"


def review(pod: dict[str, Any]) -> dict[str, Any]:
    request = {
        "uid": "0b1e4d4e-1b7e-4a57-9f64-2b0cd29e8a11",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "namespace": "ml",
        "operation": "CREATE",
        "userInfo": {"username": "tester"},
        "object": pod,
        "dryRun": False,
    }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def test_an_eight_gpu_pod_is_allowed_where_a_pool_scales_to_eight(tmp_path: Path) -> None:
    cert_dir = tmp_path / "certs"
    write_serving_set(cert_dir)
    pod = yaml.safe_load(
        (ROOT / "tests/cases/autoscaled-8-gpu-pool-admits-an-8-gpu-pod/input.yaml").read_text()
    )
    inventory = str(MORE_INVENTORIES / "aks-sku-gpu.yaml")
    runs = {}
    for name, extra in (
        ("without", []),
        ("with", ["--node-templates", str(MORE_INVENTORIES / "aks-autoscaled-pools.yaml")]),
    ):
        workdir = tmp_path / name
        workdir.mkdir()
        args = ["--cert-dir", str(cert_dir), "--inventory", inventory, "--workers", "1", *extra]
        process = WebhookProcess(workdir, args)
        try:
            client = Client(process.port, cert_dir / "ca.crt")
            process.wait_ready(client)
            reply = client.post("/validate", review(pod))
            assert reply.status == 200
            runs[name] = (reply.json()["response"], client.get("/readyz").json())
        finally:
            process.stop()
    denied, _ = runs["without"]
    assert denied["allowed"] is False and "ExceedsLargestNode" in denied["status"]["message"]
    allowed, ready = runs["with"]
    assert allowed["allowed"] is True
    assert "aks-nd96-template" in str(ready)
