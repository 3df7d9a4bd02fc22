#!/usr/bin/env bash
# Set up and run every test: lint, types, unit, golden, corpus and end-to-end tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-system.sh || echo "test: could not install the Debian packages above; the tests that need them will skip" >&2
scripts/setup.sh
. .venv/bin/activate
echo "== ruff"; ruff check webhook tests tools benchmarks
echo "== ruff format"; ruff format --check webhook tests tools benchmarks
echo "== mypy"; mypy
echo "== lint templates and policies"; gpu-webhook lint templates policies
echo "== pytest"; python -m pytest "$@"
