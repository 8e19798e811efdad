"""How long from submitting a job to its own process running?

Submits a job (the test suite's tiny ``sleep`` kind, no PyTorch import) to a
real worker, waits for it, and takes the time from submit to the ``started``
event the child writes as its first act. The baseline, in the same run, is
starting the same child directly with ``subprocess`` (the Python start-up that
any job pays). Prints p50 and p95 and the ratio app / plain.

    .venv/bin/python bench/job_start_latency.py [--jobs 40]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from stack import ROOT, Stack, report


def app_latencies(stack: Stack, count: int) -> list[float]:
    from jobs import services
    from jobs.models import Job, Status
    from trainer import eventlog

    owner = stack.user()
    worker = stack.start_worker()
    deadline = time.monotonic() + 60
    from jobs.models import Worker

    while not Worker.objects.exists():
        if time.monotonic() > deadline:
            sys.exit(f"the worker did not start:\n{worker.output()}")
        time.sleep(0.05)
    latencies = []
    for i in range(count + 2):  # the first two warm the worker up
        submitted = time.time()
        job = services.submit(owner, "sleep", f"bench {i}", {"steps": 0}, {"device": "cpu", "count": 1})
        while Job.objects.filter(pk=job.pk).values_list("status", flat=True).get() != Status.DONE:
            time.sleep(0.01)
        started = next(e for e in eventlog.read_all(job.folder) if e["kind"] == "started")
        if i >= 2:
            latencies.append(started["data"]["t"] - submitted)
    return latencies


def plain_latencies(count: int) -> list[float]:
    from trainer import jobfiles

    latencies = []
    for _ in range(count):
        with tempfile.TemporaryDirectory() as folder:
            config = Path(folder) / jobfiles.CONFIG
            config.write_text(json.dumps({"steps": 0}))
            launched = time.time()
            subprocess.run([sys.executable, "-m", "tests.sleeper", str(config)], cwd=ROOT, check=True,
                           stdout=subprocess.DEVNULL, env={"PYTHONPATH": str(ROOT)})
            started = json.loads((Path(folder) / jobfiles.EVENTS).read_text().splitlines()[0])
            latencies.append(started["data"]["t"] - launched)
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=40)
    args = parser.parse_args()
    stack = Stack()
    try:
        app = app_latencies(stack, args.jobs)
    finally:
        stack.close()
    plain = plain_latencies(args.jobs)
    report(f"jobs: {args.jobs}", "app: submit -> job process running", app, "plain: subprocess start", plain)


if __name__ == "__main__":
    main()
