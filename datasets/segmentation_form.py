"""Semantic segmentation's New dataset form: images and their label images,
from a server folder or an uploaded archive, in the folders layout or
Pascal VOC's or COCO JSON's (masks drawn from its annotations), with how the label images give classes (values or colours),
the class names, the ignore value and what 255 means in a 0/255 mask.

Its params (the build's ``trainer.tasks.segmentation_plan`` reads them):
``task`` "segmentation"; ``source`` as detection's; ``layout``,
``image_folder``, ``label_folder``; ``label_type``; ``colour_map`` and
``class_names`` (text, checked here as the build reads them); ``ignore_value``
(0 to 255, or None); ``binary``; ``placing`` ``{"pad_width", "pad_height"}``;
and ``BuildForm``'s options."""

from __future__ import annotations

from typing import Any

from django import forms

from jobs.forms import TextField
from trainer.segmentation.labels import MAX_CLASSES, parse_class_names, parse_colour_map
from trainer.segmentation.pairs import LABEL_FOLDERS
from trainer.tasks import segmentation

from .forms import FolderOrArchiveForm, padding_field

LAYOUTS = {
    "auto": ("Auto-detect", "Pascal VOC's when a SegmentationClass folder holds label images, COCO's when a JSON file "
                            "is there and no folder of label images, the folders layout otherwise."),
    "folders": ("Folders", "A folder of images and a folder of label images with the same names (any extension): "
                           "images/ beside labels/, masks/ or annotations/, unless named below. Subfolders train/, "
                           "val/, test/ keep their split."),
    "voc": ("Pascal VOC", "JPEGImages/ with the images, SegmentationClass/ with palette PNGs, and the splits in "
                          "ImageSets/Segmentation/train.txt, val.txt."),
    "coco": ("COCO JSON", "The images with annotations/*.json (or a .json at the top; instances_val… keeps its "
                          "split): each annotation's polygons or RLE drawn as its category's class over the "
                          "background, crowd regions ignored. The label image options below do not apply."),
}
LABEL_TYPES = [("auto", "Auto-detect (colours need a colour map)"),
               ("values", "Values: palette indices or gray levels are the classes"),
               ("colours", "Colours: RGB, named by the colour map")]
BINARY = [("auto", "Guess from the label images (0/255 only: foreground)"),
          ("foreground", "255 is the foreground (class 1)"),
          ("ignore", "255 is the ignore value")]


class SegmentationDatasetForm(FolderOrArchiveForm):
    """Semantic segmentation (see the module for its params)."""

    title = "New semantic segmentation dataset"
    source_template = "datasets/source_segmentation.html"
    folder_missing = "Give the folder of images and label images."

    folder = forms.CharField(required=False, label="Images and label images",
                             help_text="The folder holding both, laid out as the layout says.")
    archive = forms.FileField(required=False, help_text="The images and their label images inside, laid out as the "
                                                        "layout says.")
    layout = forms.ChoiceField(choices=[(name, label) for name, (label, _) in LAYOUTS.items()], initial="auto",
                               error_messages={"invalid_choice": f"“%(value)s” is not a layout: the layouts are "
                                                                 f"{', '.join(LAYOUTS)}."})
    image_folder = forms.CharField(required=False, label="Images folder", help_text="Folders layout: blank is “images”.")
    label_folder = forms.CharField(required=False, label="Label images folder",
                                   help_text=f"Folders layout: blank is the first of {', '.join(LABEL_FOLDERS)}.")
    label_type = forms.ChoiceField(choices=LABEL_TYPES, initial="auto", label="Label images hold", error_messages={
        "invalid_choice": "“%(value)s” is not a label type: the types are auto, values and colours."})
    colour_map = TextField(required=False, label="Colour map", widget=forms.Textarea(attrs={"rows": 4}),
                           help_text="One line a class, in class order: “red green blue name” (0 to 255); a line named "
                                     "ignore is the colour of ignored pixels. Needed for colours; for values it only "
                                     "colours the pages.")
    class_names = TextField(required=False, label="Class names", widget=forms.Textarea(attrs={"rows": 4}),
                            help_text="One a line, class 0 first. Blank: a classes.txt at the source's top, the colour "
                                      "map's names, VOC's 21 classes, or class 0, class 1… as found.")
    ignore_value = forms.IntegerField(required=False, min_value=0, max_value=255, initial=255, label="Ignore value",
                                      help_text="Pixels of this value count for nothing in loss and metrics (VOC's "
                                                "borders are 255). Blank: none.", error_messages={
                                          "min_value": "The ignore value is a pixel value from 0 to 255.",
                                          "max_value": "The ignore value is a pixel value from 0 to 255."})
    binary = forms.ChoiceField(choices=BINARY, initial="auto", label="Masks of 0 and 255", error_messages={
        "invalid_choice": "“%(value)s” is not a choice: auto, foreground or ignore."})
    pad_width = padding_field("Padding width")
    pad_height = padding_field("Padding height")

    field_order = ["name", "group", "notes", "source", "folder", "archive", "keep_upload", "layout", "image_folder",
                   "label_folder", "label_type", "colour_map", "class_names", "ignore_value", "binary", "pad_width",
                   "pad_height"]

    def layout_help(self) -> list[tuple[str, str, str]]:
        """Each layout's name, label and what it expects."""
        return [(name, label, help_text) for name, (label, help_text) in LAYOUTS.items()]

    def clean_colour_map(self) -> str:
        text = self.cleaned_data.get("colour_map") or ""
        try:
            lines = parse_colour_map(text)
        except ValueError as exc:
            raise forms.ValidationError(str(exc), code="colour_map") from None
        if len(lines) > MAX_CLASSES + 1:
            raise forms.ValidationError(f"The colour map has {len(lines)} lines; a dataset holds at most {MAX_CLASSES} "
                                        f"classes.", code="colour_map")
        return text

    def clean_class_names(self) -> str:
        text = self.cleaned_data.get("class_names") or ""
        try:
            names = parse_class_names(text)
        except ValueError as exc:
            raise forms.ValidationError(str(exc), code="class_names") from None
        if len(names) > MAX_CLASSES:
            raise forms.ValidationError(f"{len(names)} classes are named; a dataset holds at most {MAX_CLASSES}.",
                                        code="class_names")
        return text

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("label_type") == "colours" and "colour_map" not in self.errors and \
                not parse_colour_map(data.get("colour_map") or ""):
            self.add_error("colour_map", "Label images in colour need a colour map: a line a class, “red green blue "
                                         "name”.")
        return data

    def source_params(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {"task": segmentation.TASK.name, **self.folder_or_archive_params(),
                **{key: data[key] for key in ("layout", "label_type", "colour_map", "class_names", "ignore_value",
                                              "binary")},
                "image_folder": data["image_folder"].strip(), "label_folder": data["label_folder"].strip(),
                "placing": {"pad_width": data["pad_width"], "pad_height": data["pad_height"]}}
