"""Many training runs side by side: a selection of models (ids, a group, a
filter of the home list) read into what the Compare page and its API show:
each run's settings (flattened, the ones that differ first), its final and
best metrics, and its curves downsampled on the server (min and max per
bucket, so spikes stay).

Each run's summary comes from ``runsummary``: read from its events once,
kept in its folder and in memory, so a page of a thousand runs answers in
well under a second.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.urls import reverse

from jobs import kinds, services
from jobs.api import MAX_JOB_ID
from jobs.models import Job

from . import modeljobs
from .runsummary import KEPT_POINTS, LOSS_METRICS, SUMMARIES, task

MAX_RUNS = 2000
# Points of all the curves of one metric together: each run gets its share,
# at least MIN_POINTS and at most MAX_POINTS.
POINTS_BUDGET = 40_000
MIN_POINTS, MAX_POINTS = 20, KEPT_POINTS
# A numeric setting whose values span this ratio or more is drawn on a log axis.
LOG_SPAN = 100.0
# Settings that describe the run but are not compared: the network's own code
# or layer list (its name is), and what the server keeps for itself.
LEFT_OUT = ("network.code", "network.layers", "network.text")


class SelectionError(ValueError):
    """A selection the page cannot show, said in the user's words."""


@dataclass(frozen=True)
class Selection:
    ids: tuple[int, ...] = ()
    group: str = ""  # "owner/group"
    q: str = ""
    status: str = ""

    @classmethod
    def from_query(cls, query: dict[str, str]) -> Selection:
        raw = query.get("ids", "").strip()
        try:
            ids = tuple(dict.fromkeys(int(part) for part in raw.split(",") if part.strip()))
        except ValueError:
            raise SelectionError("ids: give job numbers separated by commas, e.g. 12,15,31.") from None
        if any(not 1 <= job_id <= MAX_JOB_ID for job_id in ids):
            raise SelectionError("ids: a job number is a whole number from 1 on.")
        if len(ids) > MAX_RUNS:
            raise SelectionError(f"ids: at most {MAX_RUNS} models can be compared at once.")
        group = query.get("group", "").strip()
        if group and "/" not in group:
            raise SelectionError("group: give it as owner/group, e.g. alice/lr sweep.")
        selection = cls(ids, group, query.get("q", "").strip(), query.get("status", "").strip())
        if not (selection.ids or selection.group or selection.q or selection.status):
            raise SelectionError("Select models to compare: ids, a group (owner/group), or a filter (q, status).")
        return selection

    def query(self) -> str:
        fields = {"ids": ",".join(map(str, self.ids)), "group": self.group, "q": self.q, "status": self.status}
        return urlencode({key: value for key, value in fields.items() if value})

    def jobs(self) -> list[Job]:
        """The selected models, oldest first: the ids, the group and the filter together."""
        found: dict[int, Job] = {}
        models = modeljobs.models().select_related("owner")
        if self.ids:
            found.update((job.pk, job) for job in models.filter(pk__in=self.ids))
        if self.group:
            owner, group = self.group.split("/", 1)
            found.update((job.pk, job) for job in models.filter(owner__username=owner, group=group))
        if self.q or self.status:
            filtered = services.filtered_jobs({"q": self.q, "status": self.status}).filter(kind=modeljobs.MODEL_KIND)
            found.update((job.pk, job) for job in filtered[:MAX_RUNS + 1])
        if len(found) > MAX_RUNS:
            raise SelectionError(f"The selection holds {len(found)} models; at most {MAX_RUNS} can be compared at once.")
        return sorted(found.values(), key=lambda job: (job.created_at, job.pk))


def flat_settings(params: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """{"lr": 0.01, "network.name": "lenet", "lr_policy.name": "step", ...}:
    nested objects by dotted keys, lists as their JSON text."""
    flat: dict[str, Any] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if name in LEFT_OUT:
            continue
        if isinstance(value, dict):
            flat.update(flat_settings(value, f"{name}."))
        elif isinstance(value, list):
            flat[name] = json.dumps(value)
        else:
            flat[name] = value
    return flat


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def describe_settings(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every setting any run has, those that differ first (in the order they
    first appear), each saying whether it is numeric and best seen on a log axis."""
    keys = list(dict.fromkeys(key for run in runs for key in run["settings"]))
    described = []
    for key in keys:
        values = [run["settings"].get(key) for run in runs]
        differs = len({json.dumps(value, sort_keys=True) for value in values}) > 1
        numbers = [value for value in values if value is not None]
        numeric = bool(numbers) and all(_number(value) for value in numbers)
        positive = [value for value in numbers if numeric and value > 0]
        log = numeric and len(positive) == len(numbers) and max(positive) / min(positive) >= LOG_SPAN
        described.append({"key": key, "differs": differs, "numeric": numeric, "log": log})
    return sorted(described, key=lambda setting: not setting["differs"])


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if value is None:
        return "—"
    return str(value)


def legend(settings: dict[str, Any], differing: list[str]) -> str:
    """"lr 0.01, batch_size 128": what sets the run apart, by the last part of each key."""
    return ", ".join(f"{key.rsplit('.', 1)[-1]} {_short(settings.get(key))}" for key in differing[:4])


def points_per_run(count: int) -> int:
    return max(MIN_POINTS, min(MAX_POINTS, POINTS_BUDGET // max(count, 1)))




def _metrics(jobs: Iterable[Job]) -> list[dict[str, Any]]:
    """The metrics the runs' tasks name (each once, first task first), then the losses."""
    seen: dict[str, dict[str, Any]] = {}
    for job in jobs:
        for metric in task(job).metrics:
            seen.setdefault(metric.series, {"key": metric.series, "label": f"validation {metric.label}",
                                            "higher": True})
    return [*seen.values(), *({"key": key, "label": label, "higher": False} for key, label in LOSS_METRICS)]


def compare_data(selection: Selection, points: int | None = None, curves: Iterable[str] | None = None,
                 first_curves_only: bool = False) -> dict[str, Any]:
    """The comparison of the selected models. ``curves``: the metrics whose
    curves to give (None: all); ``first_curves_only``: the first metric's
    alone, as the page embeds them (the others it asks for when shown: on a
    page of a thousand runs the curves are most of its bytes)."""
    jobs = selection.jobs()
    each = points or points_per_run(len(jobs))
    metrics = _metrics(jobs)
    included = [metrics[0]["key"]] if first_curves_only else (None if curves is None else list(curves))
    runs = []
    for job in jobs:
        summary = SUMMARIES.get(job)
        runs.append({
            "id": job.pk, "name": job.name, "owner": job.owner.username, "group": job.group,
            "status": job.status, "url": reverse("job", args=[job.pk]),
            "settings": flat_settings(kinds.public_params(job)), "final": summary.final, "best": summary.best,
            "curves": {name: summary.curve(name, each) for name in summary.curves
                       if included is None or name in included},
        })
    settings = describe_settings(runs)
    differing = [setting["key"] for setting in settings if setting["differs"]]
    for run in runs:
        run["label"] = legend(run["settings"], differing) or run["name"]
    return {
        "count": len(runs), "selection": {"ids": list(selection.ids), "group": selection.group,
                                          "q": selection.q, "status": selection.status},
        "url": f"{reverse('compare')}?{selection.query()}", "api": f"{reverse('api-compare')}?{selection.query()}",
        "points": each, "curves": included, "settings": settings, "metrics": metrics, "runs": runs,
    }
