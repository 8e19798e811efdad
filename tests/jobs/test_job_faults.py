"""A job process killed from outside (as the out-of-memory killer would):
a kind that resumes is requeued to carry on from its resume file, a bounded
number of times; anything else fails with the reason. An abort and a
failure the job reports are never taken for such a kill."""

import os
import signal

from jobs import services
from jobs.models import Job, Status
from tests.jobtools import child_pid, events_of, history, submit_sleep, wait_status
from tests.processes import wait_for


def submit_probe(owner, steps: int = 100, step_seconds: float = 0.05) -> Job:
    """A probe job that has left its resume file, as a run with a snapshot would."""

    def leave_resume_file(job: Job) -> None:
        job.folder.mkdir(parents=True)
        (job.folder / "probe.state").write_text("step 0")

    return services.submit(owner, "probe", "probe", {"steps": steps, "step_seconds": step_seconds},
                           {"device": "cpu", "count": 1}, prepare=leave_resume_file)


def kill_attempt(job: Job, attempt: int) -> None:
    """SIGKILL the job's process once the given attempt has started it."""
    wait_for(lambda: len(events_of(job, "started")) >= attempt, timeout=30, what=f"attempt {attempt} to start")
    os.kill(events_of(job, "started")[-1]["data"]["pid"], signal.SIGKILL)


def test_a_killed_job_that_can_resume_is_requeued_and_finishes(alice, worker):
    job = submit_probe(alice, steps=30)
    kill_attempt(job, 1)
    job = wait_status(job, Status.DONE, timeout=60)
    assert history(job) == ["queued", "waiting", "running", "queued", "waiting", "running", "done"]
    requeued = job.transitions.filter(status=Status.QUEUED).order_by("at", "pk").last()
    assert "killed by SIGKILL" in requeued.message and "attempt 1 of 3; requeued" in requeued.message
    assert job.attempt == 2


def test_a_job_killed_on_every_attempt_fails_with_the_reason(alice, worker_factory):
    worker_factory("worker", JOB_MAX_ATTEMPTS="2")
    job = submit_probe(alice)
    kill_attempt(job, 1)
    kill_attempt(job, 2)
    job = wait_status(job, Status.FAILED, timeout=60)
    assert job.error == ("The job's process was killed by SIGKILL (not by this app; out of memory?) "
                         "during attempt 2; giving up after 2 attempts.")


def test_a_killed_job_of_a_kind_that_cannot_resume_fails_at_once(alice, worker):
    job = submit_sleep(alice, steps=200)
    os.kill(child_pid(job), signal.SIGKILL)
    job = wait_status(job, Status.FAILED, timeout=30)
    assert job.error.endswith("killed by SIGKILL (not by this app; out of memory?) "
                              "during attempt 1, and it left nothing to resume from.")
    assert job.attempt == 1


def test_an_abort_and_a_reported_failure_are_not_taken_for_a_kill(alice, worker):
    aborted = submit_probe(alice)
    child_pid(aborted)
    wait_status(aborted, Status.RUNNING)
    services.abort(aborted, alice)
    failing = services.submit(alice, "probe", "failing", {"steps": 1, "step_seconds": 0.01, "exit_code": 1},
                              {"device": "cpu", "count": 1},
                              prepare=lambda job: (job.folder.mkdir(parents=True),
                                                   (job.folder / "probe.state").write_text("")))
    assert wait_status(aborted, Status.ABORTED, timeout=30).attempt == 1
    failing = wait_status(failing, Status.FAILED, timeout=30)
    assert failing.error == "failed on purpose with code 1" and failing.attempt == 1
