"""``bench/stream_stress.py --quick``: a few thousand deliveries through the
web server under the CPU hog, the adversarial writers and streams that
reconnect at random; every stream gets every event once, in order, and the
run leaves nothing behind."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_quick_stress_run_loses_repeats_and_reorders_no_event(tmp_path):
    ended = subprocess.run([sys.executable, str(ROOT / "bench" / "stream_stress.py"), "--quick"], cwd=ROOT,
                           capture_output=True, text=True, timeout=180, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert ended.returncode == 0, ended.stdout + ended.stderr
    assert not list(tmp_path.iterdir()), "the benchmark left its stack's folder behind"
    report = ended.stdout
    stressed = next(line for line in report.splitlines() if line.startswith("stressed"))
    assert "deliveries 4,000," in stressed, stressed
    assert "lost 0, repeated 0, out of order 0; not reached by the deadline 0;" in stressed, stressed
    assert int(re.search(r"reconnects (\d+)", stressed).group(1)) > 0, "no stream reconnected"
    assert "errors: none" in stressed and "ratio stressed/baseline: deliveries/s" in report
    assert "every stream got every event once, in order: yes" in report
