"""What a training job's row on the home page draws (``JobKind.sparkline``):
its train loss, which each progress event's loss extends live."""

from __future__ import annotations

from jobs.kinds import Sparkline
from jobs.models import Job

from .runsummary import SUMMARIES

SPARKLINE_POINTS = 60


def train_loss(job: Job) -> list[float]:
    """The train loss as at most 60 values (min and max per bucket, so
    spikes show), from the run's summary: a home page of a thousand models
    reads no run's events."""
    summary = SUMMARIES.get(job)
    if "train_loss" not in summary.curves:
        return []
    return [value for _epoch, value in summary.curve("train_loss", SPARKLINE_POINTS)]


SPARKLINE = Sparkline("train loss", train_loss, live_field="loss")
