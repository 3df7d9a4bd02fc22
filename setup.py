"""Optional compilation of the decision core with mypyc: `GPU_WEBHOOK_MYPYC=1 pip install .`

Without the switch the package is pure Python (development, editable installs, tests). With it,
webhook/core and webhook/admission.py are compiled to C extensions, about 3.5 times as fast
(benchmarks/bench_decide.py). The switch refuses editable installs: the compiled modules would be
written next to the sources and take precedence over them, so edits would silently do nothing.
Everything else about the package is in pyproject.toml.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import setup

SWITCH = "GPU_WEBHOOK_MYPYC"
COMPILED = ["webhook/admission.py", *sorted(str(p) for p in Path("webhook/core").rglob("*.py"))]


def compiled_extensions() -> list[object]:
    if os.environ.get(SWITCH) != "1":
        return []
    if "editable_wheel" in sys.argv:
        sys.exit(f"{SWITCH}=1 builds wheels and installs, not editable installs: unset it for pip install -e")
    from mypyc.build import mypycify

    return list(mypycify(COMPILED, opt_level="3", group_name="gpu_webhook"))


setup(ext_modules=compiled_extensions())
