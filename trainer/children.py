"""Pools of forked processes for a job's process (decoding a split, building
a dataset), whose children start with the default handling of SIGTERM and
report their own death.

A job's process handles SIGTERM itself: the trainer records an abort and
stops at its next step, a build or an evaluation removes its unfinished
folder and exits. A forked child inherits that handler. ``multiprocessing.Pool``
ends its workers with SIGTERM, so it then waited forever on a worker that only
recorded the signal (every training whose split took the pool hung), and a
child that ran the evaluation's handler removed the folder its parent was
still writing. So each child resets SIGTERM to the default (and ignores
SIGINT, which reaches the whole process group: the parent decides) before
anything else; the two signals are blocked in the parent around the forks,
so that one sent before a child has reset its handlers waits in the child
until it has, instead of running the parent's handler there.

The pool is ``concurrent.futures.ProcessPoolExecutor``: it ends its workers
by message when the work is done, and when one dies (the out-of-memory
killer, an abort's SIGTERM to the process group) the parent gets
``ChildDied`` instead of waiting forever for the lost work, as
``multiprocessing.Pool`` would after quietly starting a replacement.
"""

from __future__ import annotations

import multiprocessing
import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import Any, TypeVar

JOB_SIGNALS = (signal.SIGTERM, signal.SIGINT)
AHEAD_PER_PROCESS = 4  # work items in flight per process in ``ordered``

Item = TypeVar("Item")
Result = TypeVar("Result")


class ChildDied(RuntimeError):
    """A pool's process ended before its work was done."""

    def __init__(self) -> None:
        super().__init__("A worker process ended unexpectedly (killed from outside, or out of memory).")


@contextmanager
def signals_held() -> Iterator[None]:
    """SIGTERM and SIGINT wait (pending, never lost) in this thread while the block runs."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, JOB_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def start_child() -> None:
    """The first thing a forked child does: default SIGTERM, SIGINT ignored,
    then both unblocked (a SIGTERM held since the fork ends the child now)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, JOB_SIGNALS)


def _start(initializer: Callable[..., None] | None, initargs: tuple[Any, ...]) -> None:
    start_child()
    if initializer is not None:
        initializer(*initargs)


class ForkPool:
    """Forked processes doing a job's work items (see ``fork_pool``)."""

    def __init__(self, executor: ProcessPoolExecutor, processes: int) -> None:
        self.executor, self.processes = executor, processes

    def map(self, work: Callable[[Item], Result], items: Iterable[Item]) -> Iterator[Result]:
        """``work(item)`` of each item, in the items' order, with a bounded
        number in flight (``items`` may be a long generator)."""
        pending: deque[Future[Result]] = deque()
        for item in items:
            pending.append(self.executor.submit(work, item))
            if len(pending) >= AHEAD_PER_PROCESS * self.processes:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


@contextmanager
def fork_pool(processes: int, initializer: Callable[..., None] | None = None,
              initargs: tuple[Any, ...] = ()) -> Iterator[ForkPool]:
    """``processes`` forked processes that run ``initializer(*initargs)``
    after ``start_child``, all forked here with the signals held; the
    block's ``BrokenProcessPool`` comes out as ``ChildDied``."""
    executor = ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("fork"),
                                   initializer=_start, initargs=(initializer, initargs))
    try:
        with signals_held():
            executor.submit(int).result()  # a fork pool forks all its processes at its first item
        yield ForkPool(executor, processes)
    except BrokenProcessPool:
        raise ChildDied() from None
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
