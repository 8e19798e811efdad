"""How many CPU threads a model's forward pass of one image uses, chosen per
model when it is loaded by timing both ways.

Spread over the machine's cores, a small network's forward of one image is
no faster (LeNet: 0.35 ms on one thread, 0.45 ms on two), and the OpenMP
threads that spin after each pass take the cores the web process needs: in
the model server the round trip's p95 fell from 22 ms to 7–11 ms on one
thread. A large network's pass gains from them (ResNet-18: 58 ms on one
thread, 34–42 ms on two).

How fast the threads make a tiny pass swings with the host: on a 2-core
Intel Xeon with AVX-512, LeNet's pass took 0.42–0.68 ms on one thread and
0.30–0.51 ms on two from one process to the next, so a rule of speed alone
chose two threads in some model servers and one in others. Where it chose
two, the spare thread spun after every pass (libgomp's default spin there
lasts longer than the 5 ms between requests: 113% of a core for passes 5 ms
apart, against 14% on one thread), 74% of a core in the server, and the
round trip's p95 was 16 ms against 9. So the threads must also save
``SAVED_SECONDS`` of a pass, more than such a pass can gain.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from statistics import median

import torch

from trainer.tasks.uses import CLASSIFY

from .classify import logits
from .model import Loaded

LARGE_SECONDS = 0.05  # a pass this slow on every thread keeps them all, untimed on one
FASTER_BY = 1.25  # every thread is kept only when that makes one image's pass this much faster
SAVED_SECONDS = 0.001  # ... and saves this much of it
REPEATS = 3  # passes at least in each of the timed turns
TURN_SECONDS = 0.02  # each turn at one count passes for at least this long
TURNS = 2  # turns at each count, alternated, so that a drift in the machine's speed hits both


@contextmanager
def using(threads: int) -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


Clock = Callable[[], float]


def _passes(loaded: Loaded, x: torch.Tensor, threads: int, least: int, seconds: float, clock: Clock) -> list[float]:
    """The seconds of each of at least ``least`` passes on ``threads`` that take ``seconds`` together."""
    times: list[float] = []
    with using(threads):
        while len(times) < least or sum(times) < seconds:
            start = clock()
            logits(loaded, x)
            times.append(clock() - start)
    return times


def threads_for_one(loaded: Loaded, clock: Clock = time.perf_counter) -> int:
    """The threads for one image's forward pass of a classifying network on
    the CPU: one, unless all of them make it ``FASTER_BY`` faster and save
    ``SAVED_SECONDS`` of it (medians of passes alternated in turns). A model
    on a GPU, or of a task that does not classify (whose network takes
    another input than one image tensor), keeps them all. ``clock`` times
    the passes."""
    available = torch.get_num_threads()
    if loaded.device.type != "cpu" or available == 1 or not loaded.task.offers(CLASSIFY):
        return available
    x = torch.zeros(1, loaded.channels, *loaded.input_size)
    if median(_passes(loaded, x, available, REPEATS, 0.0, clock)) > LARGE_SECONDS:  # also the warm-up
        return available
    one: list[float] = []
    every: list[float] = []
    for _ in range(TURNS):
        one += _passes(loaded, x, 1, REPEATS, TURN_SECONDS, clock)
        every += _passes(loaded, x, available, REPEATS, TURN_SECONDS, clock)
    faster = median(one) >= FASTER_BY * median(every)
    return available if faster and median(one) - median(every) >= SAVED_SECONDS else 1
