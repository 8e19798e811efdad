"""A node of a job over several machines whose job has just ended: the
node's runner lets a done job's node end on its own, within a grace, and
stops at once the node of a job that failed or was aborted.

Node 0 records the job's end before its partners' processes have exited;
on a loaded machine a partner that had done all its work was stopped in
that moment and recorded as stopped with its job (the fresh clone's
failure of ``test_a_model_over_two_nodes_trains_as_one_process_does``).
Here the node's process is a real one that takes 3 s to end, under the
real runner loop and database."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from jobs import noderunner
from jobs.models import Job, JobNode, Status

ENDS_IN_SECONDS = 3.0


def ended_job_with_a_node(owner, status: str) -> JobNode:
    job = Job.objects.create(kind="sleep", name="two nodes", owner=owner, params={}, status=status, attempt=1,
                             resources={"device": "cpu", "count": 1, "nodes": 2})
    return JobNode.objects.create(job=job, attempt=1, rank=1, status=Status.RUNNING)


def node_process() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({ENDS_IN_SECONDS})"])


def test_the_node_of_a_done_job_ends_on_its_own(alice):
    node = ended_job_with_a_node(alice, Status.DONE)
    started = time.monotonic()
    assert noderunner.supervise(node, node_process()) == (0, False)
    assert time.monotonic() - started >= ENDS_IN_SECONDS - 0.5


def test_the_node_of_a_done_job_past_its_grace_is_stopped(alice, monkeypatch):
    monkeypatch.setattr(noderunner, "DONE_EXIT_GRACE_SECONDS", 1.0)
    node = ended_job_with_a_node(alice, Status.DONE)
    code, stopped = noderunner.supervise(node, node_process())
    assert stopped and code < 0  # ended by the signal, before its own end


@pytest.mark.parametrize("status", [Status.FAILED, Status.ABORTED])
def test_the_node_of_a_job_that_failed_or_was_aborted_is_stopped_at_once(alice, status):
    node = ended_job_with_a_node(alice, status)
    code, stopped = noderunner.supervise(node, node_process())
    assert stopped and code < 0  # ended by the signal, before its own end
