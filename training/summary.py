"""What a training job adds to its summary in the job lists
(``JobKind.summary_extra``): its train loss as a sparkline."""

from __future__ import annotations

from typing import Any

from jobs.models import Job

from . import series

SPARKLINE_POINTS = 60


def summary_extra(job: Job) -> dict[str, Any]:
    """The train loss as at most 60 values for the home page (min and max per
    bucket, so spikes show); cached with the job's events."""
    return {"sparkline": series.view(job.folder, lambda run: run.sparkline(SPARKLINE_POINTS))}
