"""tests/conftest.py's helpers for ../shared: a checkout without it skips what needs it, naming the
folder; with it, a file missing from it is not skipped."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import conftest


@pytest.fixture
def shared(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setattr(conftest, "SHARED", tmp_path / "shared")
    monkeypatch.setattr(conftest, "CORPUS", tmp_path / "shared" / "corpus" / "manifests")
    return tmp_path / "shared"


def test_without_the_material_a_test_is_skipped_naming_the_folder(shared: Path) -> None:
    with pytest.raises(pytest.skip.Exception, match=re.escape(str(shared / "corpus"))):
        conftest.shared_path("corpus", "manifests", "a.yaml")
    with pytest.raises(pytest.skip.Exception, match=re.escape(str(shared / "corpus"))):
        conftest.corpus_files()
    mark = conftest.needs_shared("reference")
    assert mark.args == (True,) and str(shared / "reference") in mark.kwargs["reason"]
    (param,) = conftest.corpus_params()
    assert [m.name for m in param.marks] == ["skipif"]


def test_with_the_material_a_missing_file_is_not_skipped(shared: Path) -> None:
    manifests = shared / "corpus" / "manifests"
    manifests.mkdir(parents=True)
    (shared / "reference").mkdir()
    assert conftest.shared_path("corpus", "manifests", "gone.yaml") == manifests / "gone.yaml"
    assert conftest.needs_shared("reference").args == (False,)
    with pytest.raises(FileNotFoundError):
        conftest.corpus_files()  # none: the test fails rather than pass on no file
    (manifests / "a.yaml").write_text("kind: Pod\n", encoding="utf-8")
    assert conftest.corpus_files() == conftest.corpus_params() == [manifests / "a.yaml"]
