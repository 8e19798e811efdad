"""The training app's models: a proxy of ``jobs.Job`` with no table of its
own, there to own the permission to run network code (Django ties a
permission to a model's content type, and only the training app's networks
written in Python need this one; ``migrations/0001_initial`` moved it here
from ``jobs``, grants and all), and the adaptive searches with their trials."""

from django.contrib.auth.models import User
from django.db import models
from django.utils import timezone

from jobs.models import Job

# Shown wherever the permission is granted (the admin's user and group pages).
RUN_CODE_NAME = "May run custom Python network code, with all the rights of the server's account"


class TrainingJob(Job):
    class Meta:
        proxy = True
        default_permissions = ()
        permissions = [("run_code", RUN_CODE_NAME)]


class Search(models.Model):
    """An adaptive hyperparameter search: trials, each an ordinary model job
    in the search's group, whose settings a sampler draws from ``space``
    and whose weak ones a pruner stops at a rung (``training.searches``).
    The study itself is Optuna's, in its tables of the same database
    (``searchstudy``); ``study`` is its name there."""

    owner = models.ForeignKey(User, on_delete=models.CASCADE, related_name="searches")
    name = models.CharField(max_length=200)
    group = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)
    # The first trial's params as the New model form made them, and its devices:
    # every trial starts from them, with the drawn settings in place.
    base = models.JSONField()
    resources = models.JSONField()
    priority = models.CharField(max_length=6, default="normal")
    # {"lr": [low, high], "weight_decay": [low, high], "batch_size": [...], "solver": [...], "network": [...]}
    space = models.JSONField()
    sampler = models.CharField(max_length=20)
    pruner = models.CharField(max_length=20)
    metric = models.CharField(max_length=60)  # a validation series, e.g. val_top1 or val_loss
    trials = models.PositiveIntegerField()  # how many in all
    parallel = models.PositiveIntegerField()  # how many at once
    study = models.CharField(max_length=120, unique=True)
    # Until when one worker advances it (``searches.advance``): a claim, so two never do at once.
    advancing_until = models.DateTimeField(null=True, blank=True)

    @property
    def maximize(self) -> bool:
        return self.metric != "val_loss"


class Trial(models.Model):
    """One trial of a search and the model job that runs it."""

    class State(models.TextChoices):
        RUNNING = "running", "Running"
        COMPLETE = "complete", "Complete"
        PRUNED = "pruned", "Stopped early"
        FAILED = "failed", "Failed"

    search = models.ForeignKey(Search, on_delete=models.CASCADE, related_name="trial_set")
    number = models.PositiveIntegerField()  # Optuna's trial number
    job = models.ForeignKey(Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    params = models.JSONField()  # the drawn settings
    state = models.CharField(max_length=10, choices=State.choices, default=State.RUNNING)
    value = models.FloatField(null=True, blank=True)  # the trial's best of the search's metric
    reported = models.PositiveIntegerField(default=0)  # validations told to the study
    rung = models.FloatField(null=True, blank=True)  # the epoch it was stopped at
    message = models.TextField(blank=True)

    class Meta:
        ordering = ["number"]
        constraints = [models.UniqueConstraint(fields=["search", "number"], name="one_row_per_trial")]
