from celery import shared_task

from . import runner, worker


@shared_task(name="jobs.run")
def run(job_id: int) -> None:
    runner.run_job(job_id, worker.current())
