"""A running job whose process stops saying anything is reported "not
responding" on its page and in the API, and can be killed and resumed from
there; one that speaks again is cleared."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.models import Status
from jobs.watchdog import SILENCE_FACTOR, Watchdog
from tests.jobtools import events_of, history, submit_sleep, wait_status
from tests.processes import wait_for


def test_the_limit_is_ten_times_the_usual_gap_and_never_below_the_minimum():
    watchdog = Watchdog(minimum_seconds=30, now=0)
    assert watchdog.limit() == 30 and not watchdog.silent(30) and watchdog.silent(30.01)
    for now in range(1, 21):  # heard every second: the minimum rules
        watchdog.heard(now)
    assert watchdog.limit() == 30
    for now in range(30, 530, 10):  # then every 10 s, most of the recent gaps: ten times that
        watchdog.heard(now)
    assert watchdog.limit() == SILENCE_FACTOR * 10
    assert not watchdog.silent(520 + 100) and watchdog.silent(520 + 100.5)


@pytest.mark.django_db(transaction=True)
def test_a_silent_job_is_not_responding_and_kill_and_resume_runs_it_again(client, alice, worker_factory):
    worker_factory("worker", JOB_SILENT_SECONDS="2")
    client.force_login(alice)
    job = submit_sleep(alice, steps=6, step_seconds=0.2, hang_after=2)
    # With both cores busy the process may also say nothing for 2 s while it
    # starts, and be reported, then cleared when its first words come: what
    # this test judges is the silence after it hung.
    wait_for((job.folder / "hung").exists, timeout=30, what="the job to hang")
    hung_at = max((e["seq"] for e in events_of(job)), default=0)

    def reported_since_it_hung() -> bool:
        # A report of the start's silence may be cleared in between, once its
        # first words are relayed.
        reports = [e["data"]["since"] is not None for e in events_of(job, "silence") if e["seq"] > hung_at]
        return reports[-1:] == [True]

    def silent_in_the_api() -> bool:
        # A report of the start's silence can land in the events after the hang
        # was seen, and be cleared by the words the job said before it hung; the
        # clear writes the record before it publishes its event, so the API may
        # read None while the events' last word is still the report. The hung
        # job is reported again at the next check.
        return reported_since_it_hung() and client.get(f"/api/jobs/{job.pk}").json()["silent_since"] is not None

    wait_for(silent_in_the_api, timeout=30, what="the job to be reported silent after it hung, in its events and the API")
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "Not responding" in page and f"/jobs/{job.pk}/restart" in page

    # Words the job said before it hung may still be relayed after this,
    # on a loaded machine, clearing the report until the next check: the
    # restart is refused then ("responding"), and taken once the hung job
    # is reported again, as a user clicking again would see.
    answers = []

    def restarted() -> bool:
        answers.append(client.post(f"/api/jobs/{job.pk}/restart"))
        return answers[-1].status_code == 202

    wait_for(restarted, timeout=30, every=0.5, what=lambda: f"the restart to be taken: {answers[-1].content!r}")
    assert {answer.status_code for answer in answers} <= {202, 409}
    job = wait_status(job, Status.DONE, timeout=60)
    ran = [status for status in history(job) if status != Status.WAITING]
    assert ran == [Status.QUEUED, Status.RUNNING, Status.QUEUED, Status.RUNNING, Status.DONE]
    hung = events_of(job, "started")[0]["data"]["pid"]
    wait_for(lambda: not alive(hung), timeout=10, what=f"the hung process {hung} to be gone after its restart")

    assert "stopped responding and was killed on request" in job.transitions.filter(status=Status.QUEUED).last().message
    assert job.silent_since is None and not job.restart_requested and job.attempt == 2


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead and not yet reaped, does not)."""
    try:
        state = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("State:"))
    except (FileNotFoundError, ProcessLookupError):
        return False
    return "zombie" not in state


@pytest.mark.django_db(transaction=True)
def test_only_a_silent_running_job_can_be_restarted_and_only_by_its_owner(client, alice, bob, worker):
    job = submit_sleep(alice, steps=40, step_seconds=0.1)
    wait_status(job, Status.RUNNING)
    client.force_login(bob)
    assert client.post(f"/api/jobs/{job.pk}/restart").status_code == 403
    client.force_login(alice)
    refused = client.post(f"/api/jobs/{job.pk}/restart")
    assert refused.status_code == 409 and "responding" in refused.json()["error"], refused.content
    assert wait_status(job, Status.DONE, timeout=60).attempt == 1
