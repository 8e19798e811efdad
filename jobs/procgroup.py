"""Supervisor of one job's process group: ``python jobs/procgroup.py PARENT_PID GRACE -- CMD...``.

A worker starts this in a new session, and it starts the job's command as
the leader of a process group of its own (the job's group). It exists so that no job process outlives its worker:

- it asks the kernel for SIGTERM when its parent (the worker) dies;
- on SIGTERM, from that or from an abort, it passes SIGTERM to the whole
  group, waits GRACE seconds, then SIGKILLs whatever is left;
- on SIGUSR1 (Kill and restart of a job that stopped responding) it
  SIGKILLs the group at once: the job's processes are in a group of their
  own, so a SIGKILL of this supervisor would leave them running, holding
  their memory and device;
- when the command ends, it kills any process the command left behind;
- it exits as the command did, and when a signal it did not send killed the
  command (the out-of-memory killer, say), it dies of that same signal, so
  the worker can tell that from an abort (exit code 128 + N) and from a
  failure the command reported (its own exit code).

It imports nothing of the app, so it starts in milliseconds.
"""

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time

PR_SET_PDEATHSIG = 1


def _die_with_parent(parent_pid: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os.kill(os.getpid(), signal.SIGTERM)


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # the group is already empty
        os.killpg(pgid, signum)


def main(argv: list[str]) -> int:
    parent_pid, grace, separator, *command = argv
    if separator != "--" or not command:
        print("usage: procgroup.py PARENT_PID GRACE -- CMD...", file=sys.stderr)
        return 2
    # The handler only notes the time; the loop below acts on it, since a
    # handler must not wait on the child while the main thread polls it.
    stop_requested: list[float] = []
    kill_requested: list[float] = []
    signal.signal(signal.SIGTERM, lambda signum, frame: stop_requested.append(time.monotonic()))
    signal.signal(signal.SIGUSR1, lambda signum, frame: kill_requested.append(time.monotonic()))
    _die_with_parent(int(parent_pid))
    child = subprocess.Popen(command, process_group=0)
    term_sent = kill_sent = False
    while (code := child.poll()) is None:
        if kill_requested and not kill_sent:
            _signal_group(child.pid, signal.SIGKILL)
            kill_sent = True
        elif stop_requested and not term_sent:
            _signal_group(child.pid, signal.SIGTERM)
            term_sent = True
        elif term_sent and not kill_sent and time.monotonic() - stop_requested[0] >= float(grace):
            _signal_group(child.pid, signal.SIGKILL)
            kill_sent = True
        time.sleep(0.05)
    # The command is done; anything it left in its group goes with it.
    _signal_group(child.pid, signal.SIGKILL)
    if code < 0 and not stop_requested:
        _die_of(-code)
    return code if code >= 0 else 128 - code


def _die_of(signum: int) -> None:
    """End this process with ``signum``; returns only for a signal whose
    default action is not to end a process."""
    if signum not in (signal.SIGKILL, signal.SIGSTOP):
        signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
