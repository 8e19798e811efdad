"""A training run as the charts see it, read from the job's ``events.jsonl``.

``view(folder, build)`` parses the file once and keeps the result per path,
keyed by the file's size and modification time; a file that only grew (a running
job) is read on from where the last parse stopped, so a page load costs a
``stat`` and the new lines. Lines of kinds the charts do not plot (logs,
statuses) are skipped without decoding them; of the kinds whose latest value
is all that is shown (``layers``, ``perf``...) only the last line is decoded.

A ``resume`` event means the run restarted from a checkpoint taken at its
step: what the interrupted run recorded after that step is dropped (the
resumed run records it again), so a resumed run's curves have neither
duplicates nor gaps.

``downsample`` thins a series for a chart without losing its spikes: the
points are cut into buckets of consecutive steps and each bucket keeps its
lowest and its highest point, in step order. A spike is the extreme of its
bucket, so it stays, and so do the global minimum and maximum.
"""

from __future__ import annotations

import bisect
import json
import math
import re
import threading
from array import array
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from trainer import eventkinds as kinds
from trainer import eventlog
from trainer.linetail import LineTail
from trainer.tasks import EVERY_SERIES, Task

# A run's events are read for every task's series; a task's pages and API
# give its own (``Task.series``).
SERIES = EVERY_SERIES
_BY_KIND: dict[str, list[tuple[str, str]]] = {}
for _name, (_kind, _field) in SERIES.items():
    _BY_KIND.setdefault(_kind, []).append((_name, _field))
LATEST_KINDS = kinds.LATEST
HARDWARE_HISTORY = 120  # readings every ~5 s: the last ten minutes
DEFAULT_POINTS = 1000
MAX_POINTS = 10_000
CACHED_RUNS = 64

_KIND = re.compile(rb'"kind":"([a-z_]+)"')
_WANTED = {*_BY_KIND, kinds.SNAPSHOT, kinds.BEST, kinds.RESUME, kinds.RESULT, kinds.HARDWARE, *LATEST_KINDS}


class Series:
    """Points (step, epoch, value) in step order, kept in flat arrays of
    doubles: a long run has hundreds of thousands of them."""

    def __init__(self) -> None:
        self.steps = array("d")
        self.epochs = array("d")
        self.values = array("d")

    def __len__(self) -> int:
        return len(self.steps)

    def add(self, step: float, epoch: float, value: float) -> None:
        if self.steps and step < self.steps[-1]:
            # Out of order without a resume event: keep the array sorted.
            self.truncate_after(step - 1)
        self.steps.append(step)
        self.epochs.append(epoch)
        self.values.append(value)

    def truncate_after(self, step: float) -> None:
        """Drop the points recorded after ``step``."""
        keep = bisect.bisect_right(self.steps, step)
        del self.steps[keep:], self.epochs[keep:], self.values[keep:]

    def points(self, limit: int | None = None) -> list[list[float]]:
        """[[step, epoch, value], ...], at most ``limit`` of them (min/max per bucket)."""
        indices = range(len(self)) if limit is None else downsample(np.frombuffer(self.values), limit)
        return [[int(self.steps[i]), self.epochs[i], self.values[i]] for i in indices]

    def extreme(self, highest: bool) -> list[float] | None:
        """The [step, epoch, value] of the lowest (or highest) value."""
        if not self:
            return None
        values = np.frombuffer(self.values)
        i = int(values.argmax() if highest else values.argmin())
        return [int(self.steps[i]), self.epochs[i], self.values[i]]


def downsample(values: np.ndarray, limit: int) -> list[int]:
    """Indices of at most ``limit`` points, in order: the values cut into
    ``limit // 2`` buckets of consecutive points, each keeping the index of
    its lowest and of its highest value."""
    count = len(values)
    if count <= limit:
        return list(range(count))
    buckets = max(1, limit // 2)
    bucket = (np.arange(count) * buckets) // count
    starts = np.searchsorted(bucket, np.arange(buckets))
    chosen = [_first_per_bucket(values == extreme.reduceat(values, starts)[bucket], bucket)
              for extreme in (np.minimum, np.maximum)]
    return np.union1d(*chosen).tolist()


def _first_per_bucket(mask: np.ndarray, bucket: np.ndarray) -> np.ndarray:
    """The first index where ``mask`` holds, in each bucket."""
    hits = np.flatnonzero(mask)
    owners = bucket[hits]
    return hits[np.concatenate(([True], owners[1:] != owners[:-1]))]


@dataclass
class Run:
    """Everything the training section shows that comes from past events."""

    series: dict[str, Series] = field(default_factory=lambda: {name: Series() for name in SERIES})
    snapshots: list[dict[str, Any]] = field(default_factory=list)
    bests: list[dict[str, Any]] = field(default_factory=list)
    result: dict[str, Any] | None = None
    latest_lines: dict[str, bytes] = field(default_factory=dict)
    hardware_lines: deque[bytes] = field(default_factory=lambda: deque(maxlen=HARDWARE_HISTORY))
    seq: int = 0  # the last event read
    # Derived values, computed on first use after each update.
    _memo: dict[Any, Any] = field(default_factory=dict)

    def read(self, line: bytes) -> None:
        head = _KIND.search(line, 0, 120)
        kind = head.group(1).decode() if head else ""
        if kind in LATEST_KINDS:
            self.latest_lines[kind] = line
            self.seq = max(self.seq, _seq(line))
            return
        if kind == kinds.HARDWARE:
            self.hardware_lines.append(line)
            self.seq = max(self.seq, _seq(line))
            return
        if kind not in _WANTED:
            if kind:
                self.seq = max(self.seq, _seq(line))
            return
        event = json.loads(line)
        self.seq = event["seq"]
        data = event["data"]
        if kind == kinds.RESUME:
            self.resume(data.get("step", 0))
        elif kind == kinds.SNAPSHOT:
            self.snapshots.append(data)
        elif kind == kinds.BEST:
            self.bests.append(data)
        elif kind == kinds.RESULT:
            self.result = data
        if kind in _BY_KIND and _number(step := data.get("step")) and _number(epoch := data.get("epoch")):
            for name, key in _BY_KIND[kind]:
                if _number(value := _read_field(data, key)):  # a NaN loss is the run's error, not a point
                    self.series[name].add(step, epoch, value)

    def resume(self, step: int) -> None:
        for points in self.series.values():
            points.truncate_after(step)
        self.snapshots = [s for s in self.snapshots if s.get("step", 0) <= step]
        self.bests = [b for b in self.bests if b.get("step", 0) <= step]
        self.result = None

    def touched(self) -> None:
        self._memo.clear()

    def _latest(self, kind: str) -> dict[str, Any] | None:
        if kind not in self._memo:
            line = self.latest_lines.get(kind)
            self._memo[kind] = json.loads(line)["data"] if line else None
        return self._memo[kind]

    @property
    def network(self) -> dict[str, Any] | None:
        return self._latest(kinds.NETWORK)

    @property
    def layers(self) -> dict[str, Any] | None:
        return self._latest(kinds.LAYERS)

    @property
    def perf(self) -> dict[str, Any] | None:
        return self._latest(kinds.PERF)

    @property
    def profile(self) -> dict[str, Any] | None:
        return self._latest(kinds.PROFILE)

    @property
    def hardware(self) -> list[dict[str, Any]]:
        """The last readings, oldest first, each with its time ``t``."""
        if "hardware" not in self._memo:
            readings = []
            for line in self.hardware_lines:
                event = json.loads(line)
                readings.append({"t": event["t"], **event["data"]})
            self._memo["hardware"] = readings
        return self._memo["hardware"]

    @property
    def best(self) -> dict[str, Any] | None:
        return self.bests[-1] if self.bests else None

    def snapshot_list(self) -> list[dict[str, Any]]:
        """The snapshots, each marked ``is_best`` where it is the run's best."""
        best = self.best
        best_step = best.get("step") if best else None
        if best_step is None:
            marked = [s.get("step") for s in self.snapshots if s.get("best")]
            best_step = marked[-1] if marked else None
        return [{**s, "is_best": s.get("step") == best_step} for s in self.snapshots]

    def points(self, name: str, limit: int) -> list[list[float]]:
        key = ("points", name, limit)
        if key not in self._memo:
            self._memo[key] = self.series[name].points(limit)
        return self._memo[key]

    def all_points(self, task: Task, limit: int) -> dict[str, list[list[float]]]:
        """The points of each of the task's series."""
        return {name: self.points(name, limit) for name in task.series}

    def metrics(self, task: Task, limit: int) -> dict[str, Any]:
        """The metrics API's body."""
        return {"series": self.all_points(task, limit), "snapshots": self.snapshot_list(), "best": self.best,
                "result": self.result}


def _read_field(data: dict[str, Any], key: str) -> Any:
    """The field ``key`` of an event's data; a dotted key names a field of a
    nested object (``components.loss_box_reg``: a part of the loss)."""
    for part in key.split("."):
        if not isinstance(data, dict):
            return None
        data = data.get(part)
    return data


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


def _seq(line: bytes) -> int:
    """The seq of a line not otherwise decoded (it leads every line)."""
    match = re.match(rb'\{"seq":(\d+)', line)
    return int(match.group(1)) if match else json.loads(line)["seq"]


@dataclass
class _Entry:
    run: Run
    tail: LineTail
    inode: int
    size: int = 0
    mtime_ns: int = 0


_cache: OrderedDict[str, _Entry] = OrderedDict()
_lock = threading.Lock()
T = TypeVar("T")


def view(folder: Path | str, build: Callable[[Run], T]) -> T:
    """``build(run)`` for the run recorded in ``folder/events.jsonl`` (an
    empty run if there is no file yet). The run is shared and updated in
    place by later calls, so ``build`` runs under the cache's lock and
    should return plain data."""
    with _lock:
        return build(_load(Path(folder) / eventlog.FILENAME))


def _load(path: Path) -> Run:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return Run()
    key = str(path)
    entry = _cache.get(key)
    if entry and (entry.size, entry.mtime_ns, entry.inode) == (stat.st_size, stat.st_mtime_ns, stat.st_ino):
        _cache.move_to_end(key)
        return entry.run
    if entry is None or entry.inode != stat.st_ino or stat.st_size < entry.tail.offset:
        entry = _Entry(Run(), LineTail(path), stat.st_ino)
    for line in entry.tail.lines():
        if line:
            entry.run.read(line)
    entry.run.touched()
    # A half-written last line: do not take this size as final, so the next
    # call reads the rest of the line.
    entry.size, entry.mtime_ns = (-1, -1) if entry.tail.partial else (stat.st_size, stat.st_mtime_ns)
    _cache[key] = entry
    _cache.move_to_end(key)
    while len(_cache) > CACHED_RUNS:
        _cache.popitem(last=False)
    return entry.run


def clamp_points(value: str | None) -> int:
    """``?points=`` of the metrics API: default 1000, at most 10000, at least 2."""
    try:
        points = int(value) if value not in (None, "") else DEFAULT_POINTS
    except ValueError:
        raise ValueError("Give a whole number of points.") from None
    return max(2, min(points, MAX_POINTS))
