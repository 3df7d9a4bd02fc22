"""webhook/core/mig_reference.py is what tools/gen_mig_reference.py makes of the reference catalog."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import yaml

from tests.conftest import ROOT, SHARED, needs_shared
from webhook.core import mig_reference

CATALOG = SHARED / "reference" / "mig-profiles.yaml"
pytestmark = needs_shared("reference")


def _tool() -> ModuleType:
    path = ROOT / "tools" / "gen_mig_reference.py"
    spec = importlib.util.spec_from_file_location("gen_mig_reference", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_table_is_generated_from_the_reference_catalog() -> None:
    tool = _tool()
    data = yaml.safe_load(Path(CATALOG).read_text(encoding="utf-8"))
    assert tool.models(data) == mig_reference.MODELS, "run python tools/gen_mig_reference.py <catalog>"
    source = (ROOT / "webhook" / "core" / "mig_reference.py").read_text(encoding="utf-8")
    assert source.startswith(tool.HEADER), "the module's docstring is the tool's"


def test_an_unmeasured_profile_takes_the_measured_memory_of_its_plain_namesake() -> None:
    """H100 NVL: the reference measures 3g.47gb (46.38 GiB) but not 4g.47gb, which uses the same
    four memory slices; the nominal 47 GB would make a pod that fits 3g.47gb not fit 4g.47gb."""
    (nvl,) = [m for m in mig_reference.MODELS if m["key"] == "H100-94GB"]
    assert nvl["profiles"]["4g.47gb"] == (4, nvl["profiles"]["3g.47gb"][1]) == (4, 47493)
    (rtx,) = [m for m in mig_reference.MODELS if m["key"] == "RTX-PRO-6000-Blackwell"]
    assert rtx["profiles"]["1g.24gb+me"][1] == rtx["profiles"]["1g.24gb"][1]


def test_memory_nvidia_smi_showed_for_a_model_is_its_measured_memory() -> None:
    """The reference gives the A100 40GB's 3g.20gb the memory the MIG User Guide's nvidia-smi
    example shows (20224 and 20096 MiB, `observed_usable_mib`): the least of them, and 4g.20gb,
    on the same four memory slices, takes it too. The nominal 20 GB (19073 MiB) left a 19Gi need
    fitting neither, so a GKE A100 40GB pool of 3g.20gb partitions was passed over for 7g.40gb."""
    (a100,) = [m for m in mig_reference.MODELS if m["key"] == "A100-40GB"]
    assert a100["profiles"]["3g.20gb"] == (3, 20096)
    assert a100["profiles"]["4g.20gb"] == (4, 20096)
