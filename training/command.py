"""The command that runs a training job: one process for one device, torchrun
with one process per device for several, and torchrun on each machine for
a job over several machines (``jobs.nodes``: node 0's address and port are
the rendezvous, gloo or NCCL then connect the processes)."""

from __future__ import annotations

import sys
from typing import Any

from jobs.models import Job
from trainer.jobfiles import CONFIG

# torchrun, but a process killed from outside kills the launcher with the same
# signal, so the job resumes as a job of one process does (trainer/torchrun.py).
TORCHRUN = [sys.executable, "-m", "trainer.torchrun"]
TRAIN = ["-m", "trainer.train", CONFIG]


def train_command(job: Job) -> list[str]:
    devices = job.held.get("devices", [])
    if "nodes" in job.held:
        return [*TORCHRUN, *node_arguments(job.held["nodes"]), f"--nproc-per-node={len(devices)}", *TRAIN]
    if len(devices) <= 1:
        return [sys.executable, *TRAIN]
    return [*TORCHRUN, "--standalone", f"--nproc-per-node={len(devices)}", *TRAIN]


def node_arguments(nodes: dict[str, Any]) -> list[str]:
    """torchrun's static rendezvous: node 0 serves it, the others join
    within ``timeout`` seconds or give up."""
    return [f"--nnodes={nodes['count']}", f"--node-rank={nodes['rank']}", f"--master-addr={nodes['address']}",
            f"--master-port={nodes['port']}", f"--rdzv-conf=timeout={nodes['timeout']}"]
