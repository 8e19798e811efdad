"""``bench/load.py`` with a few browsers for a few seconds: it stands the
stack up, loads pages, follows the stream, and reports every figure with no
error, and leaves nothing behind in the temporary folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_small_load_run_reports_its_figures_and_no_errors(tmp_path):
    ended = subprocess.run([sys.executable, str(ROOT / "bench" / "load.py"), "--streams", "4", "--users", "2",
                            "--rate", "5", "--seconds", "2", "--baseline-seconds", "1", "--history", "0"],
                           cwd=ROOT, capture_output=True, text=True, timeout=180, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert ended.returncode == 0, ended.stdout + ended.stderr
    assert not list(tmp_path.iterdir()), "the benchmark left its stack's folder behind"
    report = ended.stdout
    assert report.count("page load ") == 2 and report.count("event delay (append") == 2
    assert report.count("errors: none") == 2, report
    assert "no samples" not in report
    assert "aims (no errors, page p95 < 300 ms, event delay p95 < 500 ms):" in report
