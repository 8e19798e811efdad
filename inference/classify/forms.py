"""What Classify one takes (the page and ``POST /api/models/<id>/classify``):
one image and the snapshot (``inference.oneimage.OneImageForm``); whether
to look inside the network; the class to show a saliency map for and the
convolution to compute it at."""

from __future__ import annotations

from typing import Any

from django import forms

from jobs.models import Job

from .. import trained
from ..oneimage import OneImageForm

BOOLEAN_TEXT = {"true": True, "on": True, "1": True, "false": False, "off": False, "0": False, "": False}


class ClassifyForm(OneImageForm):
    text_fields = (*OneImageForm.text_fields, "layer")

    visualize = forms.Field(required=False, help_text="Every layer and a saliency map.")
    layer = forms.CharField(required=False, max_length=200,
                            help_text="The convolution to compute the saliency map at; empty: one with a useful resolution.")

    def __init__(self, model: Job, *args: Any, **kwargs: Any) -> None:
        super().__init__(model, *args, **kwargs)
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
        if not self.errors and data.get("class") is not None:
            self._check_class(data["class"])
        return data

    def _check_class(self, index: int) -> None:
        try:
            classes = trained.classes(self.model)
        except trained.Unusable:
            return  # the model server says what is wrong with the model
        if index >= len(classes):
            self.add_error("class", f"The model has {len(classes)} classes (0 to {len(classes) - 1}).")
