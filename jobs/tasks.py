"""The Celery tasks: run a job, or one of the other nodes of a job over
several machines, in this worker. Their work is ``runner.run_job`` and
``noderunner.run_node``, plain functions safe to call twice."""

from celery import shared_task

from . import noderunner, runner, workerinfo
from .queue import RUN_NODE_TASK, RUN_TASK


@shared_task(name=RUN_TASK)
def run(job_id: int) -> None:
    runner.run_job(job_id, workerinfo.current())


@shared_task(name=RUN_NODE_TASK)
def run_node(job_id: int, attempt: int, rank: int) -> None:
    noderunner.run_node(job_id, attempt, rank, workerinfo.current())
