"""Which network trains: a standard one, a list of layers, Python code, or
the network and weights of an earlier model or of a pretrained model. The
checks turn the choice into ``network`` and ``pretrained`` as params store
them."""

from __future__ import annotations

from typing import Any

from django import forms

from jobs.models import Job
from trainer.networks.layerspec import NetworkError, validate_layers

from .. import networkinfo
from ..services import dataset_classes, pretrained_models, previous_jobs
from .network_code import code_problem

NETWORK_SOURCES = [("standard", "Standard network"), ("layers", "Custom layers"), ("python", "Python code"),
                   ("previous", "Previous network"), ("pretrained", "Pretrained model")]
PRETRAINED_MODES = [("finetune", "Fine-tune: keep the weights that fit, re-initialise the rest "
                                 "(the classifier when the classes differ)"),
                    ("continue", "Continue: the same network and classes, every weight kept")]


class NetworkFields(forms.Form):
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
    backbone_model = forms.IntegerField(required=False, widget=forms.Select, label="Backbone weights",
                                        help_text="A pretrained classifier of the backbone's network whose weights "
                                                  "start the detector's or segmenter's backbone; the rest starts "
                                                  "untrained.")
    pretrained_model = forms.IntegerField(required=False, widget=forms.Select, label="Pretrained model",
                                          help_text="Fine-tuned: the classifier is re-made for this dataset's classes, "
                                                    "and any layer whose shape differs is re-initialised.")

    # Whether the user may train Python code (set by the form that knows the user).
    may_run_code: bool
    # The chosen dataset's manifest (``ScheduleForm.clean_dataset``).
    dataset_info: dict[str, Any] | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["standard_network"].choices = [(n["name"], n["label"]) for n in networkinfo.networks().values()]
        self.previous = previous_jobs()
        self.fields["previous_job"].widget.choices = [("", "Choose a model")] + [(p["id"], p["label"]) for p in self.previous]
        # The page's script narrows these to the chosen model's snapshots.
        files = sorted({file for p in self.previous for file in p["snapshots"]})
        self.fields["previous_snapshot"].widget.choices = [(file, file) for file in files]
        self.pretrained_models = pretrained_models()
        self.fields["pretrained_model"].widget.choices = [(p["id"], p["label"]) for p in self.pretrained_models]
        backbones = {info["backbone"] for info in networkinfo.networks().values() if info["backbone"]}
        self.fields["backbone_model"].widget.choices = [("", "None: the whole network starts untrained")] + [
            (p["id"], p["label"]) for p in self.pretrained_models
            if p["network"].get("source") == "standard" and p["network"].get("name") in backbones]
        self.network: dict[str, Any] | None = None
        self.pretrained: dict[str, Any] | None = None

    def check_network(self, data: dict[str, Any]) -> None:
        source = data.get("network_source")
        if source == "standard":
            self.network = {"source": "standard", "name": data.get("standard_network") or "lenet"}
            if data.get("backbone_model") is not None:
                self._check_backbone(data["backbone_model"], self.network["name"])
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
            if self._refuse_code("python_text"):
                return
            if problem := code_problem(text):
                self.add_error("python_text", problem)
                return
            self.network = {"source": "python", "text": text}
        elif source == "previous":
            self._check_previous(data)
        elif source == "pretrained":
            self._check_pretrained_model(data)

    def check_whitening(self, data: dict[str, Any]) -> None:
        """Only FastNet has a whitening layer; code written by the user may too (the trainer checks it)."""
        network = self.network or {}
        other_standard = network.get("source") == "standard" and network.get("name") != "fastnet"
        if data.get("whiten_bias_epochs") and (other_standard or network.get("source") == "layers"):
            self.add_error("whiten_bias_epochs", "Only the fast small-image network (airbench) has a whitening layer; "
                                                 "leave this blank for other networks.")

    def _refuse_code(self, field: str) -> bool:
        if self.may_run_code:
            return False
        self.add_error(field, "Only users allowed to run code may train a network written in Python; "
                              "ask an administrator for the permission “May run custom Python network code, "
                              "with all the rights of the server's account”.")
        return True

    def _check_previous(self, data: dict[str, Any]) -> None:
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

    def _check_backbone(self, chosen_id: int, name: str) -> None:
        """A pretrained classifier whose weights start the backbone of the
        standard network ``name`` (a detector's or a segmenter's: ``NetworkInfo.backbone``)."""
        known = networkinfo.networks()
        info = known.get(name)
        if info is None:
            return  # the standard network's own error says so
        if not info["backbone"]:
            self.add_error("backbone_model", f"{info['label']} has no backbone that starts from a pretrained model; "
                                             "leave Backbone weights blank.")
            return
        chosen = next((p for p in self.pretrained_models if p["id"] == chosen_id), None)
        wanted = known[info["backbone"]]["label"]
        if chosen is None:
            self.add_error("backbone_model", "Choose one of the pretrained models.")
        elif (chosen["network"].get("source"), chosen["network"].get("name")) != ("standard", info["backbone"]):
            self.add_error("backbone_model", f"{info['label']}'s backbone starts from a {wanted} classifier, and "
                                             f"this pretrained model is not one.")
        else:
            self.pretrained = {"job": chosen["id"], "path": chosen["path"], "mode": "backbone"}

    def _check_pretrained_model(self, data: dict[str, Any]) -> None:
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
