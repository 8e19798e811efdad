"""Helpers for tests that run jobs through a real worker."""

from __future__ import annotations

import os
from pathlib import Path

from jobs import services
from jobs.models import Job, Status
from tests.processes import wait_for
from trainer import eventkinds, eventlog


def submit_sleep(owner, steps: int = 5, step_seconds: float = 0.1, name: str = "sleeper", **params) -> Job:
    return services.submit(owner, "sleep", name, {"steps": steps, "step_seconds": step_seconds, **params},
                           {"device": "cpu", "count": 1})


def status_of(job: Job) -> str:
    return Job.objects.values_list("status", flat=True).get(pk=job.pk)


def wait_status(job: Job, *statuses: str, timeout: float = 30.0) -> Job:
    wait_for(lambda: status_of(job) in statuses, timeout=timeout,
             what=lambda: f"job {job.pk} to be {' or '.join(statuses)} (it is {status_of(job)})")
    job.refresh_from_db()
    return job


def events_of(job: Job, kind: str | None = None) -> list[dict]:
    found = eventlog.read_all(job.folder)
    return [e for e in found if kind is None or e["kind"] == kind]


def all_events_of_ended(job: Job, timeout: float = 30.0) -> list[dict]:
    """Every event of a job that has ended, its final status event included.
    The database records a status a moment before the status event is
    appended to the file (``Job.transition`` commits, then publishes), so
    right after ``wait_status`` the file may still lack the last event."""
    wait_status(job, *TERMINAL, timeout=timeout)
    return wait_for(lambda: (found := events_of(job)) and found[-1]["kind"] == eventkinds.STATUS
                    and found[-1]["data"]["status"] in TERMINAL and found, timeout=timeout,
                    what=f"job {job.pk}'s final status event in its file")


def child_pid(job: Job, timeout: float = 30.0) -> int:
    """The pid the sleeper reported in its ``started`` event."""
    started = wait_for(lambda: events_of(job, "started"), timeout=timeout, what=f"job {job.pk} to start")
    return started[-1]["data"]["pid"]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def history(job: Job) -> list[str]:
    return list(job.transitions.order_by("at", "pk").values_list("status", flat=True))


TERMINAL = (Status.DONE, Status.FAILED, Status.ABORTED)


def pids_running(folder: Path, module: str) -> list[int]:
    """Processes working in the job folder ``folder`` that run ``python -m module``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cwd").resolve() == folder.resolve():
                argv = (entry / "cmdline").read_bytes().split(b"\0")
                if argv[1:3] == [b"-m", module.encode()]:
                    found.append(int(entry.name))
        except (FileNotFoundError, PermissionError, ProcessLookupError):
            continue
    return found
