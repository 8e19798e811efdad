"""``manage.py worker``: start a Celery worker sized for this machine.

It consumes the ``gpu`` queue only where there are GPUs, and runs one
thread per device slot plus a little slack (threads only supervise job
processes; the work itself runs in those processes; see ``jobs.pool``).
"""

import os
import warnings

from celery import current_app as app
from celery.exceptions import SecurityWarning
from django.conf import settings
from django.core.management.base import BaseCommand

from jobs import worker
from jobs.devices import gpus
from trainer import environment

SLACK_THREADS = 2
ROOT_NOTE = ("The worker runs as root, so jobs do too, with every right on this machine: run it as an "
             "unprivileged user that owns DATA_DIR (the Docker image runs it as uid 1000).")


class Command(BaseCommand):
    help = "Start a Celery worker for this machine's GPUs and CPU slots."

    def add_arguments(self, parser):
        parser.add_argument("--loglevel", default="INFO")

    def handle(self, *args, loglevel: str, **options):
        environment.keep_private()  # its jobs run as the same user: they may not read its secrets
        gpu_count = len(gpus())
        queues = ["gpu", "cpu"] if gpu_count else ["cpu"]
        threads = gpu_count + settings.CPU_SLOTS + SLACK_THREADS
        worker.connect()
        if os.geteuid() == 0:
            self.stderr.write(ROOT_NOTE)
            # Celery's own twelve-line warning says the same, less usefully.
            warnings.filterwarnings("ignore", category=SecurityWarning)
        # Celery's command line names only its own pools; one named in the
        # configuration is used when the command line names none.
        app.conf.worker_pool = "jobs.pool:TaskPool"
        app.worker_main([
            "worker", "--concurrency", str(threads), "--queues", ",".join(queues),
            "--loglevel", loglevel, "--without-gossip", "--without-mingle",
        ])
