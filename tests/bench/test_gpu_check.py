"""``bench/gpu_check.py`` on a machine without a GPU: it says so and succeeds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from trainer import gpus

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(gpus.nvml_ready() and gpus.count() > 0, reason="this machine has a GPU: the check would run")
def test_without_a_gpu_the_check_says_so_and_exits_0():
    ended = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_check.py")], cwd=ROOT, capture_output=True,
                           text=True, timeout=120)
    assert ended.returncode == 0, ended.stderr
    assert "No NVIDIA GPU on this machine" in ended.stdout
