"""The supervisor every job runs under: it ends the job's whole process group
on SIGTERM (then SIGKILL after the grace period), when the job's main process
exits, and when its own parent (the worker) dies."""

import os
import signal
import subprocess
import sys
import textwrap
import time

from jobs.runner import PROCGROUP
from tests.jobtools import alive
from tests.processes import wait_for

# A job that starts a grandchild, reports both pids, then sleeps.
FAMILY = textwrap.dedent("""
    import os, signal, subprocess, sys, time
    if sys.argv[2] == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    grandchild = subprocess.Popen([sys.executable, "-c", "import signal, time; "
        + ("signal.signal(signal.SIGTERM, signal.SIG_IGN); " if sys.argv[2] == "stubborn" else "")
        + "time.sleep(600)"])
    open(sys.argv[1], "w").write(f"{os.getpid()} {grandchild.pid}")
    time.sleep(float(sys.argv[3]))
""")


def start(tmp_path, parent_pid=None, grace=1.0, mode="polite", sleep=600):
    pids = tmp_path / "pids"
    argv = [sys.executable, str(PROCGROUP), str(parent_pid or os.getpid()), str(grace), "--",
            sys.executable, "-c", FAMILY, str(pids), mode, str(sleep)]
    supervisor = subprocess.Popen(argv, start_new_session=True)
    wait_for(lambda: pids.exists() and pids.read_text(), what="the job to start")
    return supervisor, [int(p) for p in pids.read_text().split()]


def test_sigterm_ends_the_whole_group(tmp_path):
    supervisor, family = start(tmp_path)
    supervisor.send_signal(signal.SIGTERM)
    assert supervisor.wait(10) == 128 + signal.SIGTERM
    wait_for(lambda: not any(alive(p) for p in family), timeout=5, what="the group to end")


def test_a_group_that_ignores_sigterm_is_killed_after_the_grace_period(tmp_path):
    # A grace period well beyond the half second looked at, so that a busy
    # machine's pauses cannot end it before the look.
    supervisor, family = start(tmp_path, grace=3.0, mode="stubborn")
    asked = time.monotonic()
    supervisor.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    assert all(alive(p) for p in family)
    assert supervisor.wait(10) == 128 + signal.SIGKILL
    assert time.monotonic() - asked >= 3.0
    wait_for(lambda: not any(alive(p) for p in family), timeout=5, what="the group to be killed")


def test_leftovers_go_when_the_job_exits(tmp_path):
    supervisor, (child, grandchild) = start(tmp_path, sleep=0.2)
    assert supervisor.wait(10) == 0
    wait_for(lambda: not alive(grandchild), timeout=5, what="the grandchild to be cleaned up")


def test_the_group_ends_when_the_worker_dies(tmp_path):
    pids = tmp_path / "pids"
    worker_code = (
        "import os, subprocess, sys, time; "
        "subprocess.Popen([sys.executable, sys.argv[1], str(os.getpid()), '1', '--', sys.executable, '-c', sys.argv[2], "
        "sys.argv[3], 'polite', '600']); time.sleep(600)"
    )
    worker = subprocess.Popen([sys.executable, "-c", worker_code, str(PROCGROUP), FAMILY, str(pids)])
    wait_for(lambda: pids.exists() and pids.read_text(), what="the job to start")
    family = [int(p) for p in pids.read_text().split()]
    worker.kill()  # as the OOM killer would: no chance to clean up
    worker.wait()
    wait_for(lambda: not any(alive(p) for p in family), timeout=10, what="the group to end with the worker")


def test_a_wrong_call_says_how_to_call_it():
    result = subprocess.run([sys.executable, str(PROCGROUP), "1", "1", "x"], capture_output=True, text=True)
    assert result.returncode == 2 and "usage" in result.stderr
