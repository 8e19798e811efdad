"""The allocator settings of a CPU training process: a step's buffers of a
few megabytes are reused from one step to the next instead of being mapped,
faulted in page by page and handed back every step. With glibc's defaults,
whether a process does the one or the other is a toss of its heap's layout
(the same script went either way from one run to the next), so the check
runs in a few processes."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.processes import ROOT

STEPS = """
import json, resource
import torch
from trainer import hostmemory
assert hostmemory.keep_freed_memory()
SIZES = (8, 8, 8, 8, 5, 9, 14, 3, 7)  # MiB: buffers the size of a small network's activations
def step():
    return [torch.ones(size * 1024**2 // 4) for size in SIZES]
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
before = faults()
step()
first = faults() - before
for _ in range(10):  # the heap finds its layout
    step()
before = faults()
for _ in range(40):
    step()
print(json.dumps({"first": first, "later": faults() - before}))
"""
PAGES_A_STEP = 70 * 1024**2 // 4096


def test_a_training_process_reuses_its_freed_memory_from_step_to_step():
    for _ in range(4):
        done = subprocess.run([sys.executable, "-c", STEPS], cwd=ROOT, capture_output=True, text=True, check=True,
                              env={"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"})
        faults = json.loads(done.stdout)
        assert faults["first"] > PAGES_A_STEP // 2  # the count sees a step's pages being touched
        assert faults["later"] < PAGES_A_STEP  # 40 steps later, not one step's pages faulted in again
