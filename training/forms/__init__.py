"""The New model form (DIGITS' options and defaults, and more), shared by the
page and the API, and the smaller form of the learning rate preview.

Everything here is torch-free: the learning rate policies and layer lists
are checked with pure-Python modules, and the trainer's catalogue (standard
networks, solvers) comes from ``networkinfo``.
"""

from __future__ import annotations

import ast
from typing import Any

from django import forms
from django.contrib.auth.models import User
from django.db import transaction

from datasets import store
from jobs import services as job_services
from jobs.forms import JobFieldsForm
from jobs.models import Job
from trainer.networks.layerspec import NetworkError, validate_layers

from .. import networkinfo, sweeps
from ..modeljobs import MODEL_KIND
from ..services import RUN_CODE, dataset_choices, dataset_classes, pretrained_models, previous_jobs
from .augmentation import AugmentationFields
from .precision import PrecisionFields
from .run import RunFields
from .schedule import ScheduleForm
from .solver import SolverFields
from .stopping import StoppingFields

NETWORK_SOURCES = [("standard", "Standard network"), ("layers", "Custom layers"), ("python", "Python code"),
                   ("previous", "Previous network"), ("pretrained", "Pretrained model")]
PRETRAINED_MODES = [("finetune", "Fine-tune: keep the weights that fit, re-initialise the rest "
                                 "(the classifier when the classes differ)"),
                    ("continue", "Continue: the same network and classes, every weight kept")]


# Django lists the fields of the farthest base first, so the bases are in the
# reverse of the order the fields are shown in (and the API describes them).
class NewModelForm(StoppingFields, PrecisionFields, AugmentationFields, SolverFields, RunFields, JobFieldsForm,
                   ScheduleForm):
    """Every option of a training job; several learning rates or batch sizes
    make a sweep (``sweeps``)."""

    network_source = forms.ChoiceField(choices=NETWORK_SOURCES, initial="standard", widget=forms.RadioSelect,
                                       label="Network")
    standard_network = forms.ChoiceField(choices=[], initial="lenet", required=False, label="Standard network")
    layers_text = forms.CharField(required=False, strip=False, label="Layers (YAML or JSON)",
                                  widget=forms.Textarea(attrs={"rows": 14, "spellcheck": "false"}))
    python_text = forms.CharField(required=False, strip=False, label="Python code",
                                  widget=forms.Textarea(attrs={"rows": 18, "spellcheck": "false"}))
    previous_job = forms.IntegerField(required=False, widget=forms.Select, label="Previous model")
    previous_snapshot = forms.CharField(required=False, widget=forms.Select, label="Snapshot")
    # Not required: the page shows these fields only when there is an earlier model.
    pretrained_mode = forms.ChoiceField(choices=PRETRAINED_MODES, initial="finetune", label="Mode", required=False)
    pretrained_model = forms.IntegerField(required=False, widget=forms.Select, label="Pretrained model",
                                          help_text="Fine-tuned: the classifier is re-made for this dataset's classes, "
                                                    "and any layer whose shape differs is re-initialised.")

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.user = user
        self.may_run_code = user.has_perm(RUN_CODE)
        self.fields["dataset"].required = True
        self.fields["dataset"].widget.choices = dataset_choices()
        self.fields["standard_network"].choices = [(n["name"], n["label"]) for n in networkinfo.networks().values()]
        self.previous = previous_jobs()
        self.fields["previous_job"].widget.choices = [("", "Choose a model")] + [(p["id"], p["label"]) for p in self.previous]
        # The page's script narrows these to the chosen model's snapshots.
        files = sorted({file for p in self.previous for file in p["snapshots"]})
        self.fields["previous_snapshot"].widget.choices = [(file, file) for file in files]
        self.pretrained_models = pretrained_models()
        self.fields["pretrained_model"].widget.choices = [(p["id"], p["label"]) for p in self.pretrained_models]
        self.network: dict[str, Any] | None = None
        self.pretrained: dict[str, Any] | None = None

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        self.check_crop(data)
        if data.get("lr") and data.get("batch_size"):
            combinations = sweeps.count(data["lr"], data["batch_size"])
            if combinations > sweeps.MAX_COMBINATIONS:
                self.add_error("lr", f"{len(data['lr'])} learning rates × {len(data['batch_size'])} batch sizes make "
                                     f"{combinations} jobs; a sweep has at most {sweeps.MAX_COMBINATIONS}.")
        self._clean_network(data)
        self._clean_whitening(data)
        return data

    def _clean_whitening(self, data: dict[str, Any]) -> None:
        """Only FastNet has a whitening layer; code written by the user may too (the trainer checks it)."""
        network = self.network or {}
        other_standard = network.get("source") == "standard" and network.get("name") != "fastnet"
        if data.get("whiten_bias_epochs") and (other_standard or network.get("source") == "layers"):
            self.add_error("whiten_bias_epochs", "Only the fast small-image network (airbench) has a whitening layer; "
                                                 "leave this blank for other networks.")

    def _clean_network(self, data: dict[str, Any]) -> None:
        source = data.get("network_source")
        if source == "standard":
            self.network = {"source": "standard", "name": data.get("standard_network") or "lenet"}
        elif source == "layers":
            text = data.get("layers_text") or ""
            try:
                validate_layers(text)
            except NetworkError as exc:
                self.add_error("layers_text", str(exc))
                return
            self.network = {"source": "layers", "text": text}
        elif source == "python":
            text = data.get("python_text") or ""
            if self._refuse_code("python_text") or self._syntax_error(text):
                return
            self.network = {"source": "python", "text": text}
        elif source == "previous":
            self._clean_previous(data)
        elif source == "pretrained":
            self._clean_pretrained_model(data)

    def _refuse_code(self, field: str) -> bool:
        if self.may_run_code:
            return False
        self.add_error(field, "Only users allowed to run code may train a network written in Python; "
                              "ask an administrator for the permission “May run custom Python network code, "
                              "with all the rights of the server's account”.")
        return True

    def _syntax_error(self, text: str) -> bool:
        """Parsed here (never run) so that a typo is a field error, not a failed job."""
        try:
            tree = ast.parse(text, "<network code>")
        except SyntaxError as exc:
            self.add_error("python_text", f"Line {exc.lineno}: {exc.msg}")
            return True
        defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        defined |= {target.id for node in tree.body if isinstance(node, ast.Assign)
                    for target in node.targets if isinstance(target, ast.Name)}
        if "build" not in defined:
            self.add_error("python_text", "The code must define build(channels, classes, height, width) "
                                          "returning an nn.Module.")
            return True
        return False

    def _clean_previous(self, data: dict[str, Any]) -> None:
        if not self.previous:
            self.add_error("network_source", "No finished or aborted model has saved a snapshot yet; choose another network.")
            return
        job_id = data.get("previous_job")
        mode = data.get("pretrained_mode") or "finetune"
        chosen = next((p for p in self.previous if p["id"] == job_id), None)
        if chosen is None:
            self.add_error("previous_job", "Choose a finished or aborted model that saved snapshots.")
            return
        if data.get("previous_snapshot") not in chosen["snapshots"]:
            self.add_error("previous_snapshot", f"Choose one of its snapshots: {', '.join(chosen['snapshots'])}.")
            return
        if chosen["network"].get("source") == "python" and self._refuse_code("previous_job"):
            return
        earlier = Job.objects.get(pk=job_id)
        if mode == "continue" and self.dataset_info:
            here, there = len(self.dataset_info["classes"]), dataset_classes(earlier.params.get("dataset"))
            if there is not None and here != there:
                self.add_error("pretrained_mode", f"Continuing needs the same classes: this dataset has {here}, "
                                                  f"the earlier model's {there}. Choose fine-tune.")
                return
        self.network = dict(chosen["network"])
        self.pretrained = {"job": earlier.pk, "path": str(earlier.folder / data["previous_snapshot"]),
                           "mode": mode}

    def _clean_pretrained_model(self, data: dict[str, Any]) -> None:
        if not self.pretrained_models:
            self.add_error("network_source", "No pretrained model is made yet: upload one, or make one from a "
                                             "model's snapshot; or choose another network.")
            return
        chosen = next((p for p in self.pretrained_models if p["id"] == data.get("pretrained_model")), None)
        if chosen is None:
            self.add_error("pretrained_model", "Choose one of the pretrained models.")
            return
        if chosen["network"].get("source") == "python" and self._refuse_code("pretrained_model"):
            return
        self.network = dict(chosen["network"])
        self.pretrained = {"job": chosen["id"], "path": chosen["path"], "mode": "finetune"}

    def params(self) -> dict[str, Any]:
        """The params of the first job of the submission (see the contract in
        docs); a sweep varies ``lr`` and ``batch_size``."""
        data = self.cleaned_data
        return {
            "dataset": self.dataset_job.pk,
            "dataset_dir": str(store.folder(self.dataset_job)),
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
        }

    def submit(self, owner: User) -> list[Job]:
        """Create every job of the submission in one transaction: all or none."""
        data = self.cleaned_data
        runs = sweeps.expand(data["name"], self.params(), data["lr"], data["batch_size"])
        group = sweeps.group_name(data["name"], data["group"], len(runs))
        with transaction.atomic():
            return [job_services.submit(owner, MODEL_KIND, run.name, run.params, self.resources(), group=group,
                                    notes=data["notes"]) for run in runs]
