#!/usr/bin/env bash
# Set up and run every test: lint, types, unit, golden, corpus and end-to-end tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-system.sh || echo "test: could not install the Debian packages above; the tests that need them will skip" >&2
scripts/setup.sh
. .venv/bin/activate
echo "== ruff"; ruff check webhook tests tools benchmarks setup.py
echo "== ruff format"; ruff format --check webhook tests tools benchmarks setup.py
echo "== mypy"; mypy
echo "== lint templates and policies"; gpu-webhook lint templates policies
echo "== pytest"; python -m pytest "$@"
# The same decision and server tests against the build the image ships: the core compiled with
# mypyc. -P and --import-mode=append put the installed package ahead of the sources in this
# checkout; GPU_WEBHOOK_EXPECT_COMPILED makes tests/test_build.py fail if they were not.
echo "== build the compiled core (mypyc)"; scripts/setup-compiled.sh
echo "== pytest, compiled core"
GPU_WEBHOOK_EXPECT_COMPILED=1 .venv-compiled/bin/python -P -m pytest --import-mode=append -p no:cacheprovider \
  tests/test_build.py tests/test_cases.py tests/test_cases_packing.py tests/test_corpus.py tests/unit \
  tests/workloads tests/server tests/scheduling "$@"
