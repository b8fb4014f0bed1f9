"""Issue 43's redaction bar, as a test: the corpus (tests/redaction_corpus.py, one secret per shape and
path here, 42 shapes; bench/redaction.py runs 3 per shape) over every write path (session ingest, POST
/edits free-text fields, forget reason, `evomem import`, MCP add_memory/add_session, a real `evomem
serve`): 0 readable afterwards in responses, Cypher results, exports, logs or store files; and the same
run with redaction off finds every one of them (tests/redaction_paths.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from redaction_corpus import SHAPES
from redaction_paths import PATHS, run

pytestmark = pytest.mark.timeout(600)


def test_no_secret_is_readable_after_any_write_path_and_the_control_finds_all(tmp_path: Path) -> None:
    on = run(tmp_path / "on", redact=True, per_shape=1).summary()
    off = run(tmp_path / "off", redact=False, per_shape=1).summary()
    assert len(SHAPES) >= 25 and on["shapes"] == len(SHAPES)
    assert set(on["secrets_per_path"]) == set(PATHS) and on["secrets_total"] >= 100
    assert on["readable_per_path"] == {p: 0 for p in PATHS}, on["readable_per_path_and_surface"]
    # the control: the same checks find every secret of every path when nothing is redacted
    assert off["readable_per_path"] == off["secrets_per_path"], off["readable_per_path_and_surface"]
    for p in PATHS:  # and each path's secrets reach the store files and an export when not redacted
        assert off["readable_per_path_and_surface"][p]["store_files"] == off["secrets_per_path"][p], p
        assert off["readable_per_path_and_surface"][p]["exports"] == off["secrets_per_path"][p], p
