"""The New evaluation form (the page and ``POST /api/evaluations``) and the
Evaluate and Compare choices: they check everything the job will need, so a
request that cannot work is refused before anything is created."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django import forms
from django.contrib.auth.models import User
from django.core.files.uploadedfile import UploadedFile

from datasets.detection_form import LABEL_FORMATS
from jobs import uploadfiles
from jobs.forms import DevicesField, JobFieldsForm
from jobs.models import Job
from trainer.archives import ArchiveError, archive_kind
from trainer.imagelists import ListError, parse_list
from trainer.tasks import TASKS, task_of
from trainer.tasks.base import EVALUATION_OPTIONS
from web.numberfield import NumberField
from web.serverfolders import OutsideRoots, allowed, roots

from .. import trained
from . import services

# What the folder and archive fields say of labels, each task's words
# (``Task.labelled_files``); the page's script keeps the chosen model's.
FILES_HELP = " ".join(f"{task.label}: {task.labelled_files}." for task in TASKS.values()
                      if task.evaluates_from("folder") or task.evaluates_from("archive"))

SOURCES = [("split", "A split of the model's dataset"), ("list", "A text list (path [label] a line)"),
           ("folder", "A folder on the server"), ("archive", "Upload an archive (zip, tar, tar.gz)")]
SPLIT_CHOICES = list(services.SPLITS.items())
MAX_LIST_BYTES = 64 * 2**20
LIST_FILE = "upload/list.txt"
THRESHOLD_WRONG = "The score threshold is a number from 0 to 1."


def score_threshold_field() -> NumberField:
    """The score threshold of a task that takes one (``Task.evaluation_options``);
    left out, its default."""
    return NumberField(required=False, min_value=0, max_value=1,
                            initial=EVALUATION_OPTIONS["score_threshold"], label="Score threshold",
                            help_text="Detections scoring at least this count in the precision, the recall, the "
                                      "false positives and the missed boxes (mAP takes every score).",
                            error_messages={"invalid": THRESHOLD_WRONG, "min_value": THRESHOLD_WRONG,
                                            "max_value": THRESHOLD_WRONG})


class SplitForm(forms.Form):
    """Evaluate (a model's page) and Compare (a group page)."""

    split = forms.ChoiceField(choices=SPLIT_CHOICES, initial="val")
    snapshot = forms.CharField(required=False, max_length=200, help_text="Empty: the best one.")
    score_threshold = score_threshold_field()


class EvaluationForm(JobFieldsForm, DevicesField):
    name = forms.CharField(max_length=200, required=False, help_text="Empty: named after the model.")
    model = forms.IntegerField(min_value=1, help_text="The model's job number.")
    snapshot = forms.CharField(required=False, max_length=200, help_text="A snapshot file; empty: the best one.")
    source = forms.ChoiceField(choices=SOURCES, initial="list")
    split = forms.ChoiceField(choices=SPLIT_CHOICES, initial="val", required=False)
    list_text = forms.CharField(required=False, label="List", widget=forms.Textarea(attrs={"rows": 6}),
                                help_text="One image a line: its path, then optionally its class (name or number).")
    list_file = forms.FileField(required=False, label="…or upload the list")
    prefix = forms.CharField(required=False, label="Image folder", help_text="For relative paths in the list.")
    folder = forms.CharField(required=False, label="Folder on the server", help_text=FILES_HELP)
    archive = forms.FileField(required=False, help_text=FILES_HELP)
    label_format = forms.ChoiceField(
        choices=[(name, label) for name, (label, _) in LABEL_FORMATS.items()], required=False,
        initial=EVALUATION_OPTIONS["label_format"], help_text="How a detector's folder or archive gives its boxes.",
        error_messages={"invalid_choice": f"“%(value)s” is not a label format: the formats are "
                                          f"{', '.join(LABEL_FORMATS)}."})
    top_n = forms.IntegerField(min_value=1, max_value=100, initial=services.TOP_N, label="Top-N",
                               help_text="Images per class in the Top-N lists.")
    score_threshold = score_threshold_field()

    # What to classify comes first and the device last (the base forms'
    # fields would come first, the device before all on a machine without GPUs).
    field_order = ["model", "snapshot", "source", "split", "list_text", "list_file", "prefix", "folder", "archive",
                   "label_format", "top_n", "score_threshold", "name", "group", "notes"]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        try:
            model = data["model_job"] = trained.find(data.get("model"))
            services.check(model, data.get("snapshot") or "")
            if data.get("source"):
                services.check_source(model, data["source"])
            classes = trained.classes(model)
        except trained.Unusable as exc:
            if "model" not in self.errors:
                self.add_error(exc.field, str(exc))
            return data
        cleaner = {"split": self._clean_split, "list": self._clean_list, "folder": self._clean_folder,
                   "archive": self._clean_archive}.get(data.get("source") or "")
        if cleaner:
            cleaner(data, model, classes)
        return data

    def _clean_split(self, data: dict[str, Any], model: Job, classes: list[str]) -> None:
        if not data.get("split"):
            self.add_error("split", "Choose the validation or the test split.")
            return
        try:
            services.check_split(model, data["split"])
        except trained.Unusable as exc:
            self.add_error(exc.field, str(exc))

    def _server_folder(self, data: dict[str, Any], field: str) -> Path | None:
        value = (data.get(field) or "").strip()
        try:
            path = allowed(value)
        except OutsideRoots as exc:
            self.add_error(field, str(exc))
            return None
        if not path.is_dir():
            self.add_error(field, f"{value} is not a folder.")
            return None
        return path

    def _clean_list(self, data: dict[str, Any], model: Job, classes: list[str]) -> None:
        upload = data.get("list_file")
        if upload is not None:
            if upload.size > MAX_LIST_BYTES:
                self.add_error("list_file", f"The list is larger than {MAX_LIST_BYTES // 2**20} MiB.")
                return
            data["list_text"] = b"".join(upload.chunks()).decode("utf-8", errors="surrogateescape")
        if not (data.get("list_text") or "").strip():
            self.add_error("list_text", "Write the list, or upload it.")
            return
        prefix = self._server_folder(data, "prefix") if (data.get("prefix") or "").strip() else None
        data["prefix"] = str(prefix) if prefix else ""
        try:
            parse_list(data["list_text"], prefix, classes, roots())
        except ListError as exc:
            self.add_error("list_text", str(exc))

    def _clean_folder(self, data: dict[str, Any], model: Job, classes: list[str]) -> None:
        if not (data.get("folder") or "").strip():
            self.add_error("folder", "Give the folder of images.")
        elif path := self._server_folder(data, "folder"):
            data["folder"] = str(path)

    def _clean_archive(self, data: dict[str, Any], model: Job, classes: list[str]) -> None:
        upload = data.get("archive")
        if not isinstance(upload, UploadedFile):
            self.add_error("archive", "Choose an archive to upload.")
            return
        if not hasattr(upload, "temporary_file_path"):
            return  # small uploads stay in memory; the job checks them
        try:
            archive_kind(Path(upload.temporary_file_path()))
        except ArchiveError as exc:
            self.add_error("archive", str(exc))

    def job_source(self) -> dict[str, Any]:
        data = self.cleaned_data
        if data["source"] == "split":
            return {"type": "split", "split": data["split"]}
        if data["source"] == "list":
            return {"type": "list", "path": "", "prefix": data["prefix"]}
        source = {"type": "folder", "path": data["folder"]} if data["source"] == "folder" else \
            {"type": "archive", "path": ""}
        if task_of(data["model_job"].params).takes_evaluation_option("label_format"):
            source["label_format"] = data["label_format"] or EVALUATION_OPTIONS["label_format"]
        return source

    def submit(self, owner: User) -> Job:
        data = self.cleaned_data
        source = self.job_source()

        def store_input(job: Job) -> None:
            uploadfiles.keep_in_job(job, {"path": (LIST_FILE, data["list_text"]) if source["type"] == "list" else
                                          ("upload/archive", data["archive"])})

        return services.submit(owner, data["model_job"], source, name=data["name"], snapshot=data["snapshot"],
                               top_n=data["top_n"], resources=self.resources(), priority=self.chosen_priority(),
                               group=data["group"],
                               notes=data["notes"], prepare=None if source["type"] in ("split", "folder") else store_input,
                               report_options=services.report_options(data["model_job"], data["score_threshold"]))
