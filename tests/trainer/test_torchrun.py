"""``trainer.torchrun``: a job over several processes whose process is
killed from outside ends as killed, not as failed, so it can resume."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from tests.processes import wait_for
from tests.trainer.test_train import ROOT, job_folder, log_of, of_kind, rank_pid
from tests.trainfiles import make_dataset, train_config
from trainer import eventkinds as kinds


def launch(folder, *launcher: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", *launcher, "--standalone", "--nproc-per-node=2", "-m", "trainer.train",
               "config.json"]
    with open(folder / "log.txt", "wb") as log:
        return subprocess.Popen(command, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT)


def test_a_rank_killed_from_outside_kills_the_launcher_with_its_signal(tmp_path):
    bars = make_dataset(tmp_path / "bars", per_class={"train": 2000, "val": 10, "test": 10})
    folder = job_folder(tmp_path, train_config(bars, epochs=20, batch_size=8), devices=("cpu0", "cpu1"))
    launcher = launch(folder, "trainer.torchrun")
    wait_for(lambda: of_kind(folder, kinds.TRAIN), timeout=180, what="training to report")
    os.kill(rank_pid(launcher, 1), signal.SIGKILL)
    assert launcher.wait(timeout=120) == -signal.SIGKILL, log_of(folder)
    assert "a process of the job was killed by SIGKILL" in log_of(folder)


def test_a_failure_the_job_reports_stays_an_exit_code(tmp_path):
    bars = make_dataset(tmp_path / "bars", per_class={"train": 40, "val": 10, "test": 10})
    folder = job_folder(tmp_path, train_config(bars, solver="sgd", lr=1e12, epochs=2), devices=("cpu0", "cpu1"))
    assert launch(folder, "trainer.torchrun").wait(timeout=180) == 1, log_of(folder)
    assert "try a lower learning rate" in of_kind(folder, kinds.ERROR)[-1]["message"]
