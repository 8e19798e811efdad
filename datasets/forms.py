"""The "New dataset" forms, shared by the page and the API: what every
task's form has (``BuildForm``: the job's fields, an uploaded archive, the
image, split and storage options with DIGITS' defaults) and image
classification's form (``DatasetForm``). ``taskpages`` finds a task's form
by the task's name."""

from __future__ import annotations

import tarfile
from pathlib import Path
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.uploadedfile import UploadedFile

from jobs import services, uploadfiles
from jobs.forms import JobFieldsForm
from jobs.models import Job
from trainer.archives import ArchiveError, refuse_unless_archive_start
from trainer.imageio import RESIZE_MODES
from web.numberfield import NumberField
from web.serverfolders import OutsideRoots, allowed, roots

SOURCES = [("folder", "Folder on the server"), ("archive", "Upload an archive (zip, tar, tar.gz)"),
           ("lists", "Text lists (path label)")]
RESIZE_MODE_LABELS = ("Squash", "Crop", "Fill (with noise)", "Half crop, half fill")
LIST_FIELDS = ("train_list", "val_list", "test_list", "labels_file")
# The sources of a task whose labels are files beside the images.
FOLDER_OR_ARCHIVE = SOURCES[:2]
PAD_MAX = 8192


def _optional_int(label: str, minimum: int = 0, **kwargs: Any) -> forms.IntegerField:
    return forms.IntegerField(label=label, required=False, min_value=minimum, **kwargs)


def padding_field(label: str) -> forms.IntegerField:
    """A side of DIGITS' padding (``trainer.buildplan.pad_to``), in pixels; blank for none."""
    return forms.IntegerField(label=label, required=False, min_value=1, max_value=PAD_MAX, error_messages={
        "min_value": "A padded size is at least 1 pixel.",
        "max_value": f"A padded size is at most {PAD_MAX} pixels."})


class BuildForm(JobFieldsForm):
    """What every task's New dataset form has: an uploaded archive, and the
    options of the images stored, their split and their storage. A task's
    form adds its source (``source_params``), its own options (``params``),
    names the page's title and the template of its source's fields, and lists
    the fields that carry uploads (``UPLOADS``)."""

    # The page's heading, the template of its source's fieldsets, and the
    # folder field whose first image the resize preview can show ("": none).
    title = ""
    source_template = ""
    preview_folder = ""
    # The file fields kept in the job when uploaded: the archive as the
    # source's "path", a list as the source key its name gives.
    UPLOADS: tuple[str, ...] = ("archive",)

    archive = forms.FileField(required=False)
    keep_upload = forms.BooleanField(required=False, initial=False, label="Keep the uploaded archive",
                                     help_text="Otherwise it is deleted once the dataset is built; a failed or aborted "
                                               "build keeps it, to be retried.")
    image_type = forms.ChoiceField(choices=[("color", "Colour"), ("grayscale", "Grayscale")], initial="color")
    width = forms.IntegerField(min_value=1, max_value=4096, initial=256)
    height = forms.IntegerField(min_value=1, max_value=4096, initial=256)
    resize_mode = forms.ChoiceField(choices=list(zip(RESIZE_MODES, RESIZE_MODE_LABELS, strict=True)), initial="squash")
    val_percent = NumberField(min_value=0, max_value=100, initial=25, label="% for validation")
    test_percent = NumberField(min_value=0, max_value=100, initial=0, label="% for testing")
    encoding = forms.ChoiceField(choices=[("png", "PNG (lossless)"), ("jpeg", "JPEG (lossy)"), ("none", "None (raw pixels)")],
                                 initial="png", label="Image encoding")
    quality = forms.IntegerField(min_value=1, max_value=100, initial=90, label="JPEG quality",
                                 help_text="Used only with JPEG encoding.")
    seed = forms.IntegerField(initial=1, label="Random seed", help_text="For the split and the fill noise.")
    mean = forms.BooleanField(required=False, initial=True, label="Compute the mean image")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if (data.get("val_percent") or 0) + (data.get("test_percent") or 0) >= 100:
            self.add_error("val_percent", "Validation and test together must leave some images for training.")
        if data.get("source") == "archive":
            if not data.get("archive"):
                self.add_error("archive", "Choose an archive to upload.")
            else:
                self._clean_archive(data["archive"])
        return data

    def _clean_archive(self, upload: UploadedFile) -> None:
        """Refuse at once a file that does not start as an archive: the build
        would refuse it only after reading it whole."""
        head = upload.read(tarfile.BLOCKSIZE)
        upload.seek(0)
        try:
            refuse_unless_archive_start(head, upload.name)
        except ArchiveError as exc:
            self.add_error("archive", str(exc))

    def _clean_padding(self, data: dict[str, Any]) -> None:
        """Both sides of the padding (``padding_field``s ``pad_width`` and ``pad_height``) or neither."""
        given = [data.get(side) is not None for side in ("pad_width", "pad_height")]
        if any(given) and not all(given) and not any(f in self.errors for f in ("pad_width", "pad_height")):
            self.add_error("pad_width" if not given[0] else "pad_height",
                           "Give both padding sides, width and height, or neither.")

    def _server_path(self, data: dict[str, Any], field: str, folder: bool) -> None:
        """The field's server path made absolute when it is allowed and is a
        folder (or a file); otherwise an error on the field."""
        value = (data.get(field) or "").strip()
        if not value:
            return
        try:
            path = allowed(value)
        except OutsideRoots as exc:
            self.add_error(field, str(exc))
            return
        if folder and not path.is_dir():
            self.add_error(field, f"{value} is not a folder.")
        elif not folder and not path.is_file():
            self.add_error(field, f"{value} is not a file.")
        else:
            data[field] = str(path)

    def source_params(self) -> dict[str, Any]:
        """The params of the form's source: at least ``source``."""
        raise NotImplementedError

    def params(self) -> dict[str, Any]:
        data = self.cleaned_data
        params = {k: data[k] for k in self.option_fields()}
        params["channels"] = 1 if data["image_type"] == "grayscale" else 3
        params["roots"] = [str(root) for root in roots()]
        params["archive_limits"] = {"max_total_bytes": settings.ARCHIVE_MAX_BYTES, "max_ratio": settings.ARCHIVE_MAX_RATIO}
        return {**params, **self.source_params()}

    def option_fields(self) -> tuple[str, ...]:
        """The fields whose values are params as they are."""
        return ("width", "height", "resize_mode", "val_percent", "test_percent", "encoding", "quality", "seed", "mean")

    def archive_params(self) -> dict[str, Any]:
        """The params of an uploaded archive (its kept path is added once the job exists)."""
        return {"source": {"type": "archive", "name": self.cleaned_data["archive"].name},
                "keep_upload": self.cleaned_data["keep_upload"]}

    def submit(self, owner: User) -> Job:
        data = self.cleaned_data
        uploads = {f: data[f] for f in self.UPLOADS if isinstance(data.get(f), UploadedFile)}

        def store_uploads(job: Job) -> None:
            kept = {}
            for field, upload in uploads.items():
                key = "path" if field == "archive" else field.removesuffix("_list").removesuffix("_file")
                kept[key] = (f"upload/{field}{''.join(Path(upload.name).suffixes)[-16:]}", upload)
            uploadfiles.keep_in_job(job, kept)

        return services.submit(owner, "dataset", data["name"], self.params(), {"device": "cpu", "count": 1},
                               group=data["group"], notes=data["notes"], prepare=store_uploads if uploads else None)


class FolderOrArchiveForm(BuildForm):
    """A task's form whose labels are files beside the images: the source is
    a server folder holding both or an uploaded archive of both. A form
    gives the fields' labels and help, and the sentence asking for the folder."""

    folder_missing = ""
    preview_folder = "folder"

    source = forms.ChoiceField(choices=FOLDER_OR_ARCHIVE, initial="folder")
    folder = forms.CharField(required=False)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("source") == "folder":
            if not (data.get("folder") or "").strip():
                self.add_error("folder", self.folder_missing)
            self._server_path(data, "folder", folder=True)
        self._clean_padding(data)
        return data

    def folder_or_archive_params(self) -> dict[str, Any]:
        """The params of the source: the archive's, or ``{"type": "folder", "path"}``."""
        data = self.cleaned_data
        return self.archive_params() if data["source"] == "archive" else \
            {"source": {"type": "folder", "path": data["folder"]}}


class DatasetForm(BuildForm):
    """Image classification: a class a folder, or text lists of images and classes."""

    title = "New image classification dataset"
    source_template = "datasets/source_classification.html"
    preview_folder = "train_folder"
    UPLOADS = ("archive", *LIST_FIELDS)

    source = forms.ChoiceField(choices=SOURCES, initial="folder")
    train_folder = forms.CharField(required=False, label="Training images",
                                   help_text="A folder with one subfolder per class.")
    val_folder = forms.CharField(required=False, label="Separate validation images (optional)")
    test_folder = forms.CharField(required=False, label="Separate test images (optional)")
    val_min_per_class = _optional_int("Validation: minimum per class")
    val_max_per_class = _optional_int("Validation: maximum per class", minimum=1)
    test_min_per_class = _optional_int("Test: minimum per class")
    test_max_per_class = _optional_int("Test: maximum per class", minimum=1)
    archive = forms.FileField(required=False, help_text="Class folders inside; or train/, val/, test/ folders of them.")
    train_list = forms.FileField(required=False, label="Training list")
    val_list = forms.FileField(required=False, label="Validation list (optional)")
    test_list = forms.FileField(required=False, label="Test list (optional)")
    labels_file = forms.FileField(required=False, label="Labels file", help_text="One class name a line.")
    train_list_path = forms.CharField(required=False, label="…or training list on the server")
    val_list_path = forms.CharField(required=False, label="…or validation list on the server")
    test_list_path = forms.CharField(required=False, label="…or test list on the server")
    labels_file_path = forms.CharField(required=False, label="…or labels file on the server")
    prefix = forms.CharField(required=False, label="Image folder", help_text="Prefix for relative paths in the lists.")
    shuffle = forms.BooleanField(required=False, initial=True, label="Shuffle the lines")
    min_per_class = forms.IntegerField(min_value=1, initial=2, label="Minimum samples per class")
    max_per_class = _optional_int("Maximum samples per class", minimum=1)

    field_order = ["name", "group", "notes", "source", "train_folder", "val_folder", "test_folder", "val_min_per_class",
                   "val_max_per_class", "test_min_per_class", "test_max_per_class", "archive", "keep_upload",
                   "train_list", "val_list", "test_list", "labels_file", "train_list_path", "val_list_path",
                   "test_list_path", "labels_file_path", "prefix", "shuffle", "image_type", "width", "height",
                   "resize_mode", "val_percent", "test_percent", "min_per_class", "max_per_class"]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        source = data.get("source")
        if source == "folder":
            self._clean_folders(data)
        elif source == "lists":
            self._clean_lists(data)
        return data

    def _clean_folders(self, data: dict[str, Any]) -> None:
        if not (data.get("train_folder") or "").strip():
            self.add_error("train_folder", "Give the folder of training images.")
        for field in ("train_folder", "val_folder", "test_folder"):
            self._server_path(data, field, folder=True)

    def _clean_lists(self, data: dict[str, Any]) -> None:
        for field in LIST_FIELDS:
            self._server_path(data, f"{field}_path", folder=False)
        for field in ("train_list", "labels_file"):
            if not data.get(field) and not data.get(f"{field}_path"):
                self.add_error(field, "Upload this file or give its path on the server.")
        if data.get("prefix"):
            self._server_path(data, "prefix", folder=True)

    def option_fields(self) -> tuple[str, ...]:
        fields = super().option_fields()
        return (*fields[:5], "min_per_class", "max_per_class", *fields[5:])

    def source_params(self) -> dict[str, Any]:
        data = self.cleaned_data
        source = data["source"]
        if source == "archive":
            return self.archive_params()
        params: dict[str, Any] = {}
        if source == "folder":
            params["source"] = {"type": "folder", **{s: data[f"{s}_folder"] for s in ("train", "val", "test")}}
            for split in ("val", "test"):
                for bound in ("min", "max"):
                    params[f"{split}_{bound}_per_class"] = data[f"{split}_{bound}_per_class"]
        else:
            params["source"] = {"type": "lists", "prefix": data.get("prefix") or "", "shuffle": data["shuffle"],
                                **{f.removesuffix("_list").removesuffix("_file"): data.get(f"{f}_path") or ""
                                   for f in LIST_FIELDS}}
        return params


def defaults(form_class: type[BuildForm] = DatasetForm) -> dict[str, Any]:
    """A form's initial values, which the API gives the fields a request leaves out."""
    return {name: field.initial for name, field in form_class.base_fields.items() if field.initial is not None}
