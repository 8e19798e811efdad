"""``manage.py sample_dataset USERNAME``: queue the offline sample dataset
(scikit-learn's handwritten digits) as USERNAME's job."""

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError

from datasets import sample


class Command(BaseCommand):
    help = "Write scikit-learn's handwritten digits as PNG class folders and queue their import."

    def add_arguments(self, parser):
        parser.add_argument("username", help="the owner of the dataset job")

    def handle(self, *args, username: str, **options):
        owner = User.objects.filter(username=username).first()
        if owner is None:
            raise CommandError(f"There is no user {username!r}; sign up first.")
        job = sample.submit(owner)
        self.stdout.write(f"Queued dataset job #{job.pk}: {sample.sample_folder()} (a worker builds it).")
