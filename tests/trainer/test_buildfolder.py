"""``trainer.buildfolder.building``: a job's output appears whole or not at all."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.processes import wait_for
from trainer.buildfolder import building


def test_a_finished_build_moves_into_place_beside_what_was_kept(tmp_path):
    final = tmp_path / "output"
    final.mkdir()
    (final / "kept.txt").write_text("kept")
    (final / "report.json").write_text("old")
    with building(final) as work:
        assert work == tmp_path / "output.partial" and not any(work.iterdir())
        (work / "report.json").write_text("new")
    assert sorted(p.name for p in final.iterdir()) == ["kept.txt", "report.json"]
    assert (final / "report.json").read_text() == "new" and not work.exists()


def test_a_failed_build_leaves_no_partial_files_and_the_old_output_as_it_was(tmp_path):
    final = tmp_path / "output"
    (tmp_path / "output.partial").mkdir()
    (tmp_path / "output.partial" / "stale").write_text("from a run that was killed")
    with pytest.raises(ValueError), building(final) as work:
        assert not (work / "stale").exists(), "a killed run's leftovers are cleared first"
        (work / "report.json").write_text("half")
        raise ValueError("the build failed")
    assert not final.exists() and not work.exists()


def test_an_aborted_build_removes_its_partial_files_and_exits_with_the_signal(tmp_path):
    script = textwrap.dedent(f"""
        import time
        from pathlib import Path
        from trainer.buildfolder import building
        with building(Path({str(tmp_path / "output")!r})) as work:
            (work / "half.bin").write_bytes(b"x")
            (work.parent / "ready").touch()
            time.sleep(60)
    """)
    process = subprocess.Popen([sys.executable, "-c", script])
    wait_for(lambda: (tmp_path / "ready").exists(), timeout=60, what="the build to start")
    process.terminate()
    assert process.wait(timeout=30) == 128 + 15
    assert not (tmp_path / "output.partial").exists() and not (tmp_path / "output").exists()
