#!/usr/bin/env bash
# Create .venv-compiled: gpu-webhook installed from a wheel whose decision core is compiled with
# mypyc (GPU_WEBHOOK_MYPYC=1, see setup.py), as the container image ships it, with the test tools.
# Safe to run again: it rebuilds (about 90 s) only when the package's sources changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=.venv-compiled
STAMP=$VENV/.built-from
digest=$(find webhook -type f \( -name '*.py' -o -name '*.json' -o -name '*.html' -o -name '*.css' \) -print0 \
  | sort -z | xargs -0 sha256sum | cat - setup.py pyproject.toml | sha256sum | cut -d' ' -f1)
if [ -x $VENV/bin/python ] && [ "$(cat $STAMP 2>/dev/null)" = "$digest" ]; then
  exit 0
fi
if ! command -v "${CC:-cc}" >/dev/null; then
  echo "setup-compiled: mypyc needs a C compiler and there is no ${CC:-cc}; install gcc (apt-get install gcc)" >&2
  exit 2
fi
[ -x $VENV/bin/python ] || "$PYTHON" -m venv $VENV
$VENV/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
# The dependencies and test tools first; then the package itself, compiled, in place of the pure one.
$VENV/bin/python -m pip install --quiet --disable-pip-version-check '.[test]'
rm -rf build  # setuptools packs whatever its build folder holds: a module compiled earlier would ship too
GPU_WEBHOOK_MYPYC=1 $VENV/bin/python -m pip install --quiet --disable-pip-version-check \
  --force-reinstall --no-deps .
$VENV/bin/python -P -c 'from webhook.buildinfo import core_compiled; assert core_compiled(), "not compiled"'
echo "$digest" > $STAMP
