"""``python -m trainer.torchrun``: torchrun, taking its arguments, with one
difference. When a process of the job dies of a signal (the out-of-memory
killer's SIGKILL, say), torchrun exits 1, which reads as a failure the job
reported; this launcher dies of the same signal instead, so the worker
reads the job as killed from outside and resumes it from its last
checkpoint, as it does a job of one process.
"""

from __future__ import annotations

import os
import signal
import sys

from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
from torch.distributed.run import main


def killed_by(failure: ChildFailedError) -> int | None:
    """The signal that killed one of the job's processes, or None when they
    exited. The others' errors (a peer gone mid all-reduce) and SIGTERM (which
    torchrun sends the rest once one has failed) follow from it."""
    signals = [-process.exitcode for process in failure.failures.values() if process.exitcode < 0]
    return next((number for number in signals if number != signal.SIGTERM), None)


def launch(argv: list[str]) -> None:
    try:
        main(argv)
    except ChildFailedError as failure:
        number = killed_by(failure)
        if number is None:
            raise
        print(f"a process of the job was killed by {signal.Signals(number).name}", file=sys.stderr, flush=True)
        sys.stdout.flush()
        if number not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(number, signal.SIG_DFL)  # torchrun's own handler would turn it into an exception
        os.kill(os.getpid(), number)


if __name__ == "__main__":
    launch(sys.argv[1:])
