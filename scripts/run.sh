#!/usr/bin/env bash
# Set up and run the webhook on the embedded default: a self-signed certificate in
# .gpu-webhook/certs, the repository's templates and policies, and the example inventory.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
. .venv/bin/activate
exec gpu-webhook serve "$@"
