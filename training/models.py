"""The training app's one model, a proxy of ``jobs.Job`` with no table of
its own, there to own the permission to run network code: Django ties a
permission to a model's content type, and only the training app's networks
written in Python need this one (``migrations/0001_initial`` moved it here
from ``jobs``, grants and all)."""

from jobs.models import Job

# Shown wherever the permission is granted (the admin's user and group pages).
RUN_CODE_NAME = "May run custom Python network code, with all the rights of the server's account"


class TrainingJob(Job):
    class Meta:
        proxy = True
        default_permissions = ()
        permissions = [("run_code", RUN_CODE_NAME)]
