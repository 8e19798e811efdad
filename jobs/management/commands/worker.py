"""``manage.py worker``: start a Celery worker sized for this machine.

It consumes the ``gpu`` queue only where there are GPUs, and runs one
thread per device slot plus a little slack (threads only supervise job
processes; the work itself runs in those processes).
"""

from django.conf import settings
from django.core.management.base import BaseCommand

from digitslike.celery import app
from jobs import worker
from jobs.devices import gpus

SLACK_THREADS = 2


class Command(BaseCommand):
    help = "Start a Celery worker for this machine's GPUs and CPU slots."

    def add_arguments(self, parser):
        parser.add_argument("--loglevel", default="INFO")

    def handle(self, *args, loglevel: str, **options):
        gpu_count = len(gpus())
        queues = ["gpu", "cpu"] if gpu_count else ["cpu"]
        threads = gpu_count + settings.CPU_SLOTS + SLACK_THREADS
        worker.connect()
        app.worker_main([
            "worker", "--pool", "threads", "--concurrency", str(threads), "--queues", ",".join(queues),
            "--loglevel", loglevel, "--without-gossip", "--without-mingle",
        ])
