"""The command that runs a training job: one process for one device, torchrun
with one process per device for several."""

from __future__ import annotations

import sys

from jobs.models import Job
from trainer.jobfiles import CONFIG


def train_command(job: Job) -> list[str]:
    devices = job.held.get("devices", [])
    if len(devices) <= 1:
        return [sys.executable, "-m", "trainer.train", CONFIG]
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={len(devices)}",
            "-m", "trainer.train", CONFIG]
