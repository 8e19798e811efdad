"""Where a training process runs (``trainer.distributed.device_for``) and how
it ends (``exit_process``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from trainer import eventlog, jobfiles
from trainer.distributed import DeviceError, device_for, runs_on

ROOT = Path(__file__).resolve().parents[2]

# A C++ thread still working when the process ends, as gloo's communication
# workers may be after the last collective: a torch operation releases the GIL
# and takes it back when it returns. A normal interpreter exit aborts here
# ("terminate called without an active exception") nearly every time.
BUSY_THREAD_AT_EXIT = """
import sys, threading, time, torch
from trainer.distributed import exit_process
matrix = torch.randn(300, 300)
def work():
    while True:
        matrix @ matrix
threading.Thread(target=work, daemon=True).start()
time.sleep(0.2)
print("trained", end="")
exit_process(int(sys.argv[1]))
"""


def test_a_process_ends_cleanly_while_torch_threads_still_work():
    for code in (0, 1, 0):
        ended = subprocess.run([sys.executable, "-c", BUSY_THREAD_AT_EXIT, str(code)], cwd=ROOT,
                               capture_output=True, text=True, timeout=120)
        assert ended.returncode == code, ended.stderr
        assert "terminate called" not in ended.stderr
        assert ended.stdout == "trained", "buffered output is flushed before the process ends"


# Which device a job's process uses: a GPU it leased, or a failure saying why.

def test_a_build_runs_on_its_architectures_and_newer_minor_versions_of_them():
    built = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
    assert runs_on((8, 9), built), "sm_86 code runs on an 8.9 board (L4, L40S)"
    assert runs_on((9, 0), built) and runs_on((10, 0), built)
    assert not runs_on((7, 0), built), "no kernels for a V100"
    assert not runs_on((6, 1), built)
    assert runs_on((12, 1), ["sm_90a", "compute_90"]), "PTX is compiled for newer boards"
    assert not runs_on((8, 0), ["sm_90a", "compute_90"])


def test_a_process_that_leased_a_gpu_numbers_them_as_nvml_does_or_fails_saying_why(monkeypatch):
    monkeypatch.delenv("CUDA_DEVICE_ORDER", raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # no GPU visible, whatever the machine has
    with pytest.raises(DeviceError, match="The job leased gpu3 but cannot use it") as failure:
        device_for(["gpu3"], 0)
    assert f"CUDA {torch.version.cuda}" in str(failure.value) and "NVIDIA driver" in str(failure.value)
    assert os.environ["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"


def test_cpu_slots_train_on_the_cpu():
    assert device_for(["cpu0", "cpu1"], 1) == torch.device("cpu")


def test_the_device_check_fails_on_a_gpu_it_cannot_use(tmp_path):
    (tmp_path / jobfiles.CONFIG).write_text(json.dumps({"seconds": 0.2, "size": 64, "devices": ["gpu0"]}))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": ""}
    ended = subprocess.run([sys.executable, "-m", "trainer.devicecheck", jobfiles.CONFIG], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)
    assert ended.returncode == 1, ended.stdout + ended.stderr
    errors = [e["data"]["message"] for e in eventlog.read_all(tmp_path) if e["kind"] == "error"]
    assert errors and "The job leased gpu0 but cannot use it" in errors[0]
    assert not [e for e in eventlog.read_all(tmp_path) if e["kind"] == "result"]
