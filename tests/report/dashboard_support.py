"""The dashboard page served over files, as `serve --inventory F --pods P` serves it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from flask import Flask

from tests.conftest import ROOT
from webhook.report.files import StaticUsageInventorySource
from webhook.server.report_routes import report_blueprint
from webhook.sources import StaticCatalogSource


def dashboard_page(folder: Path, nodes: list[dict[str, Any]], pods: list[dict[str, Any]] | None) -> str:
    """GET /dashboard for these nodes and pods (None: no pod list, usage unknown), with the shipped
    templates and policies."""
    nodes_file, pods_file = folder / "nodes.yaml", folder / "pods.yaml"
    nodes_file.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": nodes}))
    if pods is not None:
        pods_file.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": pods}))
    inventory = StaticUsageInventorySource(nodes_file, None if pods is None else pods_file)
    catalog = StaticCatalogSource([ROOT / "templates", ROOT / "policies"])
    inventory.start()
    catalog.start()
    app = Flask("test")
    app.register_blueprint(report_blueprint(inventory, catalog))
    return app.test_client().get("/dashboard").get_data(as_text=True)
