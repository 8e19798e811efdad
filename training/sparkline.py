"""What a training job's row on the home page draws (``JobKind.sparkline``):
its train loss, which each progress event's loss extends live."""

from __future__ import annotations

from jobs.kinds import Sparkline
from jobs.models import Job

from . import series

SPARKLINE_POINTS = 60


def train_loss(job: Job) -> list[float]:
    """The train loss as at most 60 values (min and max per bucket, so
    spikes show); cached with the job's events."""
    return series.view(job.folder, lambda run: run.sparkline(SPARKLINE_POINTS))


SPARKLINE = Sparkline("train loss", train_loss, live_field="loss")
