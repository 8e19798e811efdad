"""What Classify one takes (the page and ``POST /api/models/<id>/classify``):
one image, uploaded, picked from the model's dataset (a split and a
position in it) or named by a path below ``DATASET_ROOTS``; the snapshot;
whether to look inside the network; the class to show a saliency map for
and the convolution to compute it at.

The form only reads the image's bytes: decoding is the model server's job
(with the decompression-bomb limit), so a file that is not an image comes
back from there as a message for the field that gave it. Messages never
name a server path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django import forms

from datasets import services as dataset_services
from jobs.models import Job
from trainer.datastore import png_bytes
from web.serverfolders import OutsideRoots, allowed

from .. import trained

MAX_IMAGE_BYTES = 10 * 2**20
SOURCES = ("image", "index", "path")  # the fields an image may come from
TEXT_FIELDS = ("snapshot", "split", "path", "layer")
BOOLEAN_TEXT = {"true": True, "on": True, "1": True, "false": False, "off": False, "0": False, "": False}


class ClassifyForm(forms.Form):
    image = forms.FileField(required=False, help_text="An image file to upload.")
    split = forms.ChoiceField(choices=[(s, s) for s in dataset_services.SPLITS], required=False,
                              help_text="With index: an image of the model's dataset.")
    index = forms.IntegerField(min_value=0, required=False, help_text="The image's position in the split.")
    path = forms.CharField(required=False, max_length=4096, help_text="An image file on the server.")
    snapshot = forms.CharField(required=False, max_length=200, help_text="Empty: the best one.")
    visualize = forms.Field(required=False, help_text="Every layer and a saliency map.")
    layer = forms.CharField(required=False, max_length=200,
                            help_text="The convolution to compute the saliency map at; empty: one with a useful resolution.")

    def __init__(self, model: Job, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.model = model
        # "class" is the API's name for it, and a Python keyword.
        self.fields["class"] = forms.IntegerField(min_value=0, required=False,
                                                  help_text="A class index for the saliency map; empty: the top class.")

    def clean_visualize(self) -> bool:
        value = self.cleaned_data.get("visualize")
        if isinstance(value, bool) or value is None:
            return bool(value)
        if isinstance(value, str) and value.lower() in BOOLEAN_TEXT:
            return BOOLEAN_TEXT[value.lower()]
        raise forms.ValidationError("Give true or false.")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        for name in TEXT_FIELDS:
            if self.data.get(name) is not None and not isinstance(self.data.get(name), str):
                self.add_error(name, "Give text.")
        if self.errors:
            return data
        given = [name for name in SOURCES if data.get(name) not in (None, "")]
        if len(given) != 1:
            self.add_error(None, "Give one image: upload one, pick one of the dataset's, or name a file on the server.")
            return data
        data["source"] = given[0]
        data["image_bytes"] = {"image": self._uploaded, "index": self._from_dataset, "path": self._from_server}[given[0]](data)
        if data.get("class") is not None:
            self._check_class(data["class"])
        return data

    def _uploaded(self, data: dict[str, Any]) -> bytes | None:
        upload = data["image"]
        if upload.size > MAX_IMAGE_BYTES:
            self.add_error("image", f"The image is larger than {MAX_IMAGE_BYTES // 2**20} MiB.")
            return None
        return b"".join(upload.chunks())

    def _from_dataset(self, data: dict[str, Any]) -> bytes | None:
        dataset = trained.dataset(self.model)
        manifest = dataset_services.manifest(dataset) if dataset else None
        if manifest is None:
            self.add_error("index", "The model's dataset is gone.")
            return None
        split = data.get("split") or "val"
        count = int(((manifest.get("splits") or {}).get(split) or {}).get("count") or 0)
        if data["index"] >= count:
            self.add_error("index", f"The dataset's {split} split has {count} image(s).")
            return None
        return png_bytes(dataset_services.reader(dataset, split, manifest).image(data["index"]))

    def _from_server(self, data: dict[str, Any]) -> bytes | None:
        try:
            path = allowed(data["path"].strip())
        except (OutsideRoots, OSError, ValueError):
            self.add_error("path", "The path is not below the folders this server may read images from.")
            return None
        if not path.is_file():
            self.add_error("path", "There is no file at this path.")
            return None
        if path.stat().st_size > MAX_IMAGE_BYTES:
            self.add_error("path", f"The image is larger than {MAX_IMAGE_BYTES // 2**20} MiB.")
            return None
        return Path(path).read_bytes()

    def _check_class(self, index: int) -> None:
        try:
            classes = trained.classes(self.model)
        except trained.Unusable:
            return  # the model server says what is wrong with the model
        if index >= len(classes):
            self.add_error("class", f"The model has {len(classes)} classes (0 to {len(classes) - 1}).")
