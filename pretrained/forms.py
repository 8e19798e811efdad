"""The Upload pretrained model form (the page and ``POST /api/pretrained``)
and the snapshot choice of "Make pretrained model". The form checks what it
can without reading the weights (their size, that the file is a zip or a
pickle, that a state dict names its network); the job reads and checks
them."""

from __future__ import annotations

import zipfile
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.uploadedfile import UploadedFile
from django.template.defaultfilters import filesizeformat

from jobs.forms import JobFieldsForm
from jobs.models import Job
from trainer.catalog import NETWORKS

from . import services

ZIP_MAGIC = b"PK\x03\x04"  # torch.save's format since PyTorch 1.6, and a model archive
PICKLE_MAGIC = b"\x80"  # torch.save's legacy format: a pickle, protocol 2 or later


def _is_archive(upload: UploadedFile) -> bool:
    """A model archive: a zip with ``info.json`` (a ``torch.save`` zip has none)."""
    upload.seek(0)
    try:
        with zipfile.ZipFile(upload) as archive:
            return "info.json" in archive.namelist()
    except zipfile.BadZipFile:
        return False
    finally:
        upload.seek(0)


class UploadForm(JobFieldsForm):
    weights = forms.FileField(label="Weights file",
                              help_text="A model archive (.zip) downloaded from a model's page, or a PyTorch state dict "
                                        "(.pt, .pth) for a standard network, such as torchvision's published weights.")
    network = forms.ChoiceField(required=False, label="Network of a state dict",
                                choices=[("", "Named by the archive")] + [(name, n.label) for name, n in NETWORKS.items()],
                                help_text="The standard network a state dict is for; an archive names its own.")

    def clean_weights(self) -> UploadedFile:
        upload = self.cleaned_data["weights"]
        limit = settings.PRETRAINED_MAX_BYTES
        if upload.size > limit:
            raise forms.ValidationError(f"The file is larger than the limit of {filesizeformat(limit)} "
                                        "(PRETRAINED_MAX_BYTES).")
        upload.seek(0)
        head = upload.read(len(ZIP_MAGIC))
        upload.seek(0)
        if not (head.startswith(ZIP_MAGIC) or head.startswith(PICKLE_MAGIC)):
            raise forms.ValidationError("The file is neither a model archive nor a PyTorch weights file "
                                        "(torch.save writes a zip, or a pickle in its older format).")
        return upload

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        upload = data.get("weights")
        if upload is not None and not data.get("network") and not _is_archive(upload):
            self.add_error("network", "Say which standard network the state dict is for.")
        return data

    def submit(self, owner: User) -> Job:
        data = self.cleaned_data
        return services.from_upload(owner, data["name"], data["weights"], data["network"], group=data["group"],
                                    notes=data["notes"])
