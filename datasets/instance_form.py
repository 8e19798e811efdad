"""Instance segmentation's New dataset form: images with each object's
mask, from a server folder or an uploaded archive, as COCO JSON annotations
or in Pascal VOC's layout, with DIGITS' padding.

Its params (the build's ``trainer.tasks.instance_plan`` reads them):
``task`` "instance_segmentation"; ``source`` as detection's; ``layout``;
``placing`` ``{"pad_width", "pad_height"}``; and ``BuildForm``'s options."""

from __future__ import annotations

from typing import Any

from django import forms

from trainer.tasks import instance_segmentation

from .forms import FolderOrArchiveForm, padding_field

LAYOUTS = {
    "auto": ("Auto-detect", "Pascal VOC's when a SegmentationObject folder holds label images, COCO's when a JSON "
                            "file is there."),
    "coco": ("COCO JSON", "The images with annotations/*.json (or a .json at the top; instances_val… keeps its "
                          "split): each annotation's polygons or RLE one object of its category; crowd regions count "
                          "neither for nor against a model."),
    "voc": ("Pascal VOC", "JPEGImages/ with the images, SegmentationObject/ with each object's number and "
                          "SegmentationClass/ with its class (palette PNGs), the splits in "
                          "ImageSets/Segmentation/train.txt, val.txt; VOC's 20 classes."),
}


class InstanceDatasetForm(FolderOrArchiveForm):
    """Instance segmentation (see the module for its params)."""

    title = "New instance segmentation dataset"
    source_template = "datasets/source_instances.html"
    folder_missing = "Give the folder of images and their annotations."

    folder = forms.CharField(required=False, label="Images and annotations",
                             help_text="The folder holding both, laid out as the layout says.")
    archive = forms.FileField(required=False, help_text="The images and their annotations inside, laid out as the "
                                                        "layout says.")
    layout = forms.ChoiceField(choices=[(name, label) for name, (label, _) in LAYOUTS.items()], initial="auto",
                               error_messages={"invalid_choice": f"“%(value)s” is not a layout: the layouts are "
                                                                 f"{', '.join(LAYOUTS)}."})
    pad_width = padding_field("Padding width")
    pad_height = padding_field("Padding height")

    field_order = ["name", "group", "notes", "source", "folder", "archive", "keep_upload", "layout", "pad_width",
                   "pad_height"]

    def layout_help(self) -> list[tuple[str, str, str]]:
        """Each layout's name, label and what it expects."""
        return [(name, label, help_text) for name, (label, help_text) in LAYOUTS.items()]

    def source_params(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {"task": instance_segmentation.TASK.name, **self.folder_or_archive_params(), "layout": data["layout"],
                "placing": {"pad_width": data["pad_width"], "pad_height": data["pad_height"]}}
