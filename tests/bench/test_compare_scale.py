"""``bench/compare_scale.py`` on a few models: it stands the stack up,
times the API and the page, prints every figure and its aims, and leaves
nothing behind in the temporary folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.browser import needs_chromium

ROOT = Path(__file__).resolve().parents[2]


@needs_chromium
def test_a_small_comparison_run_reports_its_figures(tmp_path):
    ended = subprocess.run([sys.executable, str(ROOT / "bench" / "compare_scale.py"), "--models", "5", "--epochs", "2",
                            "--train-points", "3", "--repeats", "2"],
                           cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert ended.returncode == 0, ended.stdout + ended.stderr
    assert not list(tmp_path.iterdir()), "the benchmark left its stack's folder behind"
    report = ended.stdout
    for line in ("5 models, 2 epochs of 3 train events", "API, cold", "API, warm: p50", "plain read of every event",
                 "ratio API/plain", "  first_screen  p50", "  all           p50", "aims: answers in under 1 s"):
        assert line in report, report
