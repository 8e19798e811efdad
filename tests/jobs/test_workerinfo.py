"""Which devices a worker leases: a GPU split into MIG slices is listed and refused."""

from __future__ import annotations

from jobs.devices import MIG_KIND, MIG_REFUSED
from jobs.workerinfo import WorkerInfo


def test_a_job_for_a_gpu_on_a_worker_whose_gpus_are_mig_slices_is_told_why():
    note = MIG_REFUSED.format(index=0, name="NVIDIA A100-SXM4-80GB")
    worker = WorkerInfo(id="w", host="box", devices=[
        {"id": "gpu0", "kind": MIG_KIND, "index": 0, "name": "NVIDIA A100-SXM4-80GB", "note": note},
        {"id": "cpu0", "kind": "cpu", "index": 0, "name": "CPU slot 0"}])
    candidates, count, problem = worker.candidates({"device": "gpu", "count": 1})
    assert (candidates, count) == ([], 0)
    assert "worker box has 0" in problem and "MIG slices" in problem and "nvidia-smi -i 0 -mig 0" in problem
    assert worker.candidates({"device": "cpu", "count": 1}) == (["cpu0"], 1, "")
