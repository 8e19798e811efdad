"""The New model form: the schedule's fields and each group of settings
put together, the checks that span groups, the params of a job, and the
submission of one job or of a sweep's jobs."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.models import User
from django.db import transaction

from datasets import services as dataset_services
from jobs import services as job_services
from jobs.forms import JobFieldsForm
from jobs.models import Job
from trainer import jobfiles
from trainer.tasks import Task, task_of
from trainer.tasks.base import RUN_OPTIONS

from .. import searches, sweeps
from ..modeljobs import MODEL_KIND
from ..models import Search
from ..services import RUN_CODE, trainable_datasets
from .augmentation import AugmentationFields
from .network import NetworkFields
from .precision import PrecisionFields
from .run import RunFields
from .schedule import ScheduleForm
from .search import SearchFields
from .solver import SolverFields
from .stopping import StoppingFields
from .taskfit import problems
from .taskrun import TaskRunFields


# Django lists the fields of the farthest base first, so the bases are in the
# reverse of the order the fields are shown in (and the API describes them).
class NewModelForm(SearchFields, NetworkFields, StoppingFields, PrecisionFields, AugmentationFields, SolverFields,
                   TaskRunFields, RunFields, JobFieldsForm, ScheduleForm):
    """Every option of a training job; several learning rates or batch sizes
    make a sweep (``sweeps``), the search's fields an adaptive search."""

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.user = user
        self.may_run_code = user.has_perm(RUN_CODE)
        self.fields["dataset"].required = True
        datasets = trainable_datasets()
        self.fields["dataset"].widget.choices = [("", "Choose a dataset")] + [(pk, label) for pk, label, _ in datasets]
        # {dataset id: its task's name}: the page offers what that task takes.
        self.dataset_tasks = {pk: task for pk, _, task in datasets}

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        self.check_crop(data)
        self._check_sweep(data)
        if self.dataset_job is not None:
            for name, message in problems(self.task(), data).items():
                self.add_error(name, message)
        self.check_network(data)
        self.check_whitening(data)
        if self.dataset_job is not None:
            self.check_early_stopping(data, self.task())
            self.check_search(data, self.task())
        if data.get("search") and (len(data.get("lr") or []) > 1 or len(data.get("batch_size") or []) > 1):
            self.add_error("search", "A search draws its own learning rates and batch sizes: give one of each above, "
                                     "or sweep without searching.")
        return data

    def task(self) -> Task:
        """The task of the chosen dataset, which its models share."""
        return task_of(self.dataset_info or {})

    def run_option_fields(self) -> list[forms.BoundField]:
        """The fields of the run options only some tasks' models take, for the page."""
        return [self[name] for name in RUN_OPTIONS]

    def _check_sweep(self, data: dict[str, Any]) -> None:
        if data.get("lr") and data.get("batch_size"):
            combinations = sweeps.count(data["lr"], data["batch_size"])
            if combinations > sweeps.MAX_COMBINATIONS:
                self.add_error("lr", f"{len(data['lr'])} learning rates × {len(data['batch_size'])} batch sizes make "
                                     f"{combinations} jobs; a sweep has at most {sweeps.MAX_COMBINATIONS}.")

    def params(self) -> dict[str, Any]:
        """The params of the first job of the submission (see the contract in
        docs); a sweep varies ``lr`` and ``batch_size``."""
        data = self.cleaned_data
        return {
            "task": self.task().name,
            "dataset": self.dataset_job.pk,
            jobfiles.DATASET_DIR_PARAM: str(dataset_services.folder(self.dataset_job)),
            "network": self.network,
            "pretrained": self.pretrained,
            "epochs": data["epochs"], "val_interval": data["val_interval"], "snapshot_interval": data["snapshot_interval"],
            "keep_snapshots": data["keep_snapshots"] or 0,
            "seed": self.chosen_seed(),
            "batch_size": data["batch_size"][0], "batch_accumulation": data["batch_accumulation"],
            "solver": data["solver"], "lr": data["lr"][0], "momentum": data["momentum"],
            "weight_decay": data["weight_decay"],
            "lr_policy": self.policy(),
            "scale_lr": data["scale_lr"],
            "batch_schedule": data["batch_schedule"],
            "mean": data["mean"], "crop": data["crop"], "translate": data["translate"], "flip": data["flip"],
            "rotation": data["rotation"], "scale": data["scale"], "noise": data["noise"],
            "color_jitter": data["color_jitter"], "label_smoothing": data["label_smoothing"], "tta": data["tta"],
            "norm_bias_lr_scale": data["norm_bias_lr_scale"], "norm_bias_weight_decay": data["norm_bias_weight_decay"],
            "averaging": self.averaging_params(),
            "whiten_bias_epochs": data["whiten_bias_epochs"],
            "precision": data["precision"], "channels_last": data["channels_last"], "compile": data["compile"],
            "early_stopping": self.early_stopping_params(),
            **{name: self.task().run_option(data, name) for name in self.task().run_options},
        }

    def submit_search(self, owner: User) -> Search:
        """Start the adaptive search the form asks for (``searches.create``)."""
        data = self.cleaned_data
        return searches.create(owner, data["name"], data["group"] or data["name"], self.params(), self.resources(),
                               self.search_space, data["search_sampler"], data["search_pruner"], self.search_metric,
                               data["search_trials"], data["search_parallel"], self.chosen_priority())

    def submit(self, owner: User) -> list[Job]:
        """Create every job of the submission in one transaction: all or none."""
        data = self.cleaned_data
        runs = sweeps.expand(data["name"], self.params(), data["lr"], data["batch_size"])
        group = sweeps.group_name(data["name"], data["group"], len(runs))
        with transaction.atomic():
            return [job_services.submit(owner, MODEL_KIND, run.name, run.params, self.resources(), group=group,
                                        notes=data["notes"], priority=self.chosen_priority()) for run in runs]
