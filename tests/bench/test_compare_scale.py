"""``bench/compare_scale.py`` on a few models: it stands the stack up,
times the API and the page, prints every figure and its aims, and leaves
nothing behind in the temporary folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.browser import needs_chromium

ROOT = Path(__file__).resolve().parents[2]


@needs_chromium
def test_a_small_comparison_run_reports_its_figures():
    # A short temporary folder: Chromium's socket path under a test's own
    # (/tmp/pytest-of-root/pytest-N/popen-gwN/test_…) is too long for it.
    folder = Path(tempfile.mkdtemp(prefix="cmp"))
    try:
        ended = subprocess.run([sys.executable, str(ROOT / "bench" / "compare_scale.py"), "--models", "5", "--epochs",
                                "2", "--train-points", "3", "--repeats", "2"], cwd=ROOT, capture_output=True, text=True,
                               timeout=300, env={**os.environ, "TMPDIR": str(folder)})
        assert ended.returncode == 0, ended.stdout + ended.stderr
        assert not list(folder.iterdir()), "the benchmark left its stack's folder behind"
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    report = ended.stdout
    for line in ("5 models, 2 epochs of 3 train events", "API, cold", "API, warm: p50", "plain read of every event",
                 "ratio API/plain", "  first_screen  p50", "  all           p50", "aims: answers in under 1 s"):
        assert line in report, report
