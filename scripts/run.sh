#!/usr/bin/env bash
# Set up and show the webhook's decisions on the example pods against the example inventory.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
. .venv/bin/activate
exec gpu-webhook check examples/pods/ --inventory examples/inventories/mixed-cluster.yaml "$@"
