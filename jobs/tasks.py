"""The one Celery task: run a job in this worker. Its work is
``runner.run_job``, a plain function safe to call twice."""

from celery import shared_task

from . import runner, workerinfo
from .queue import RUN_TASK


@shared_task(name=RUN_TASK)
def run(job_id: int) -> None:
    runner.run_job(job_id, workerinfo.current())
