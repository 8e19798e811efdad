"""The job processes' pools: children start with the default SIGTERM
whatever handler their parent has, and a child that dies is reported, not
waited for. Each case runs in a fresh interpreter that installs a job's
handler first, as the trainer and the builds do."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PARENT = """
import os, signal, sys, time
from pathlib import Path
from trainer.children import ChildDied, fork_pool

marker = Path(sys.argv[1])

def clean_up(signum, frame):  # what an evaluation's handler does: remove the unfinished folder
    marker.write_text("the parent's handler ran in " + str(os.getpid()))

signal.signal(signal.SIGTERM, clean_up)

def blocked():
    return signal.SIGTERM in signal.pthread_sigmask(signal.SIG_BLOCK, [])
"""


def run_parent(body: str, tmp_path: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "parent.py"
    script.write_text(PARENT + textwrap.dedent(body))
    return subprocess.run([sys.executable, str(script), str(tmp_path / "marker")], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_children_start_with_the_default_sigterm_unblocked_and_the_pool_ends(tmp_path):
    done = run_parent("""
        def disposition(_):
            return signal.getsignal(signal.SIGTERM) is signal.SIG_DFL, blocked()

        with fork_pool(2) as pool:
            print(sorted(set(pool.map(disposition, range(8)))))
        print("ended", signal.getsignal(signal.SIGTERM) is clean_up, blocked())
    """, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[(True, False)]", "ended True False"]


def test_a_child_ended_by_sigterm_is_reported_and_never_runs_the_parents_handler(tmp_path):
    done = run_parent("""
        def terminated(_):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(30)

        try:
            with fork_pool(2) as pool:
                list(pool.map(terminated, range(4)))
        except ChildDied as exc:
            print("reported:", exc)
    """, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("reported: A worker process ended unexpectedly"), done.stdout
    assert not (tmp_path / "marker").exists(), (tmp_path / "marker").read_text()


def test_the_items_come_back_in_order_with_few_in_flight(tmp_path):
    done = run_parent("""
        started = []

        def items():
            for number in range(200):
                started.append(number)
                yield number

        with fork_pool(2) as pool:
            results = pool.map(abs, items())
            first = next(results)
            in_flight = len(started)
            print(first, in_flight, list(results) == list(range(1, 200)))
    """, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "8", "True"]
