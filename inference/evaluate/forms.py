"""The New evaluation form (the page and ``POST /api/evaluations``) and the
Evaluate and Compare choices: they check everything the job will need, so a
request that cannot work is refused before anything is created."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django import forms
from django.contrib.auth.models import User
from django.core.files.uploadedfile import UploadedFile

from jobs import uploadfiles
from jobs.forms import DevicesField, JobFieldsForm
from jobs.models import Job
from trainer.archives import ArchiveError, archive_kind
from trainer.imagelists import ListError, parse_list
from web.serverfolders import OutsideRoots, allowed, roots

from .. import trained
from . import services

SOURCES = [("split", "A split of the model's dataset"), ("list", "A text list (path [label] a line)"),
           ("folder", "A folder on the server"), ("archive", "Upload an archive (zip, tar, tar.gz)")]
SPLIT_CHOICES = list(services.SPLITS.items())
MAX_LIST_BYTES = 64 * 2**20
LIST_FILE = "upload/list.txt"


class SplitForm(forms.Form):
    """Evaluate (a model's page) and Compare (a group page)."""

    split = forms.ChoiceField(choices=SPLIT_CHOICES, initial="val")
    snapshot = forms.CharField(required=False, max_length=200, help_text="Empty: the best one.")


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
    folder = forms.CharField(required=False, label="Folder on the server",
                             help_text="Subfolders named after classes give the images their labels.")
    archive = forms.FileField(required=False, help_text="Subfolders named after classes give the labels.")
    top_n = forms.IntegerField(min_value=1, max_value=100, initial=services.TOP_N, label="Top-N",
                               help_text="Images per class in the Top-N lists.")

    # What to classify comes first and the device last (the base forms'
    # fields would come first, the device before all on a machine without GPUs).
    field_order = ["model", "snapshot", "source", "split", "list_text", "list_file", "prefix", "folder", "archive",
                   "top_n", "name", "group", "notes"]

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
        if data["source"] == "folder":
            return {"type": "folder", "path": data["folder"]}
        if data["source"] == "list":
            return {"type": "list", "path": "", "prefix": data["prefix"]}
        return {"type": "archive", "path": ""}

    def submit(self, owner: User) -> Job:
        data = self.cleaned_data
        source = self.job_source()

        def store_input(job: Job) -> None:
            uploadfiles.keep_in_job(job, {"path": (LIST_FILE, data["list_text"]) if source["type"] == "list" else
                                          ("upload/archive", data["archive"])})

        return services.submit(owner, data["model_job"], source, name=data["name"], snapshot=data["snapshot"],
                               top_n=data["top_n"], resources=self.resources(), group=data["group"],
                               notes=data["notes"], prepare=None if source["type"] in ("split", "folder") else store_input)
