"""A training run's summary: its curves (epoch, value) at most
``KEPT_POINTS`` each, min and max per bucket so spikes stay, and the final
and best value of its task's metrics and of the losses, for the pages that
show many runs at once (Compare, the home list's sparklines).

Reading every event of a run takes 8 to 18 ms on the 2-core machines, a
second or more a page of a hundred runs, so a run's events are read once:
its summary is kept in its folder (``SUMMARY_FILE``, with the size and
modification time of the ``events.jsonl`` it was made from) once the run
has ended, by its worker as the job ends (the model kind's ``ended``) or by
the first page that reads it; a process that starts reads those files, and
downsamples them further where a page asks for fewer points. Each process
also keeps the summaries it gave in memory (``SUMMARIES``), by the same
stamp: a finished run is read once, a running one again when it wrote.
``series.view``'s own cache holds few runs (the whole run, every point);
this one holds many, each a few kilobytes.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from jobs.models import TERMINAL, Job
from trainer import eventlog
from trainer.tasks import DEFAULT, Task, UnknownTask, task_of

from . import series

log = logging.getLogger(__name__)

# An ended run's summary in its folder.
SUMMARY_FILE = "run-summary.json"
# The points a kept curve holds at most; a page asks for as many or fewer.
KEPT_POINTS = 500
CACHED_SUMMARIES = 4096
# Significant digits of a curve's values: what a chart can show, and a third
# of the bytes of a float's full text on a page of a thousand runs.
CURVE_DIGITS = 5
LOSS_METRICS = (("val_loss", "validation loss"), ("train_loss", "train loss"))


@dataclass
class Summary:
    """A run's summary: its curves at ``KEPT_POINTS`` as (epochs, values)
    arrays, each made [epoch, value] pairs at a number of points when
    first asked (a page of many runs asks for one metric's curves)."""

    curves: dict[str, tuple[np.ndarray, np.ndarray]]
    final: dict[str, float]
    best: dict[str, dict[str, float]]
    _pairs: dict[tuple[str, int], list[list[float]]] = field(default_factory=dict)

    def curve(self, name: str, points: int) -> list[list[float]]:
        """[[epoch, value], ...] of a curve, at most ``points`` of them (min and max per bucket)."""
        key = (name, points)
        if key not in self._pairs:
            epochs, values = self.curves[name]
            if len(values) > points:
                chosen = series.downsample(values, points)
                epochs, values = epochs[chosen], values[chosen]
            self._pairs[key] = np.column_stack((epochs, values)).tolist()
        return self._pairs[key]


class _Summaries:
    """Each run's summary, kept while its events file is unchanged (size and modification time)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.entries: OrderedDict[str, tuple[tuple[int, int] | None, Summary]] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, job: Job) -> Summary:
        key = str(job.folder)
        stamp = _stamp(job)
        with self.lock:
            kept = self.entries.get(key)
            if kept and kept[0] == stamp:
                self.entries.move_to_end(key)
                return kept[1]
        summary = _full_summary(job, stamp)
        with self.lock:
            self.entries[key] = (stamp, summary)
            self.entries.move_to_end(key)
            while len(self.entries) > self.size:
                self.entries.popitem(last=False)
        return summary


def _stamp(job: Job) -> tuple[int, int] | None:
    """The size and modification time of the run's events (None: none yet)."""
    try:
        stat = (job.folder / eventlog.FILENAME).stat()
    except FileNotFoundError:
        return None
    return stat.st_size, stat.st_mtime_ns


def _full_summary(job: Job, stamp: tuple[int, int] | None) -> Summary:
    """The run's summary: its folder's, when made from the events as they
    are now; read from the events otherwise, and kept in the folder when the
    run has ended."""
    if stamp is not None:
        try:
            kept = json.loads((job.folder / SUMMARY_FILE).read_bytes())
            if kept["events"] == list(stamp):
                return Summary({name: (_floats(curve["epochs"]), _floats(curve["values"]))
                                for name, curve in kept["curves"].items()}, kept["final"], kept["best"])
        except (OSError, ValueError, KeyError, TypeError):
            pass  # none yet, or one a crash left half written: made again below
    summary = series.view(job.folder, lambda run: _summary(run, task(job)))
    if stamp is not None and job.status in TERMINAL:
        _keep(job, stamp, summary)
    return summary


def _floats(text: str) -> np.ndarray:
    """Doubles written by ``_text``: a thousand runs' curves decode in
    milliseconds where as JSON numbers they took half a second."""
    return np.frombuffer(base64.b64decode(text), dtype="<f8")


def _text(values: np.ndarray) -> str:
    return base64.b64encode(values.astype("<f8").tobytes()).decode("ascii")


def _keep(job: Job, stamp: tuple[int, int], summary: Summary) -> None:
    """Write the summary beside the events it was made from, whole or not at all."""
    path = job.folder / SUMMARY_FILE
    part = path.with_name(f".{SUMMARY_FILE}.{os.getpid()}.{threading.get_ident()}")
    kept = {"events": list(stamp), "final": summary.final, "best": summary.best,
            "curves": {name: {"epochs": _text(epochs), "values": _text(values)}
                       for name, (epochs, values) in summary.curves.items()}}
    try:
        part.write_text(json.dumps(kept, separators=(",", ":")))
        os.replace(part, path)
    except OSError as exc:  # a full disk or a folder deleted meanwhile: read from the events next time
        part.unlink(missing_ok=True)
        log.warning("job %s: its comparison summary was not kept: %s", job.pk, exc)


def keep_summary(job: Job) -> None:
    """Keep an ended run's summary in its folder, so that no page reads its
    events for it (the model kind's ``ended``, run by its worker)."""
    if (stamp := _stamp(job)) is not None:
        _full_summary(job, stamp)


def task(job: Job) -> Task:
    """The run's task (classification's, for a run of a task no longer known)."""
    try:
        return task_of(job.params)
    except UnknownTask:
        return task_of({"task": DEFAULT})


def _summary(run: series.Run, run_task: Task) -> Summary:
    """A run's curves at ``KEPT_POINTS`` (epochs to 4 decimals, values to
    ``CURVE_DIGITS`` significant digits), final and best values, for its
    task's metrics and the losses."""
    curves, final, best = {}, {}, {}
    for name, higher in [*((metric.series, True) for metric in run_task.metrics),
                         *((name, False) for name, _label in LOSS_METRICS)]:
        found = run.series.get(name)
        if found is None or not len(found):
            continue
        points = found.points(KEPT_POINTS)
        curves[name] = (np.array([round(epoch, 4) for _step, epoch, _value in points], dtype=np.float64),
                        np.array([float(f"{value:.{CURVE_DIGITS}g}") for _step, _epoch, value in points],
                                 dtype=np.float64))
        final[name] = found.values[-1]
        extreme = found.extreme(highest=higher)
        if extreme:
            best[name] = {"value": extreme[2], "epoch": round(extreme[1], 4)}
    return Summary(curves, final, best)


SUMMARIES = _Summaries(CACHED_SUMMARIES)
