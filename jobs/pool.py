"""The worker's pool: Celery's threads, which supervise job processes.

Celery's cold shutdown (SIGQUIT, as Compose and the launcher stop a worker)
cancels the tasks still running by asking the pool to terminate each one,
and the threads pool cannot: it raised NotImplementedError, the worker
stopped with an "Unrecoverable error" and waited on its running jobs until
it was killed. A task here ends by handing its job back (``runner``).
"""

from celery.concurrency.thread import TaskPool as ThreadsPool

from . import runner


class TaskPool(ThreadsPool):
    def terminate_job(self, pid: int, signal: int | None = None) -> None:
        runner.hand_back_jobs()
