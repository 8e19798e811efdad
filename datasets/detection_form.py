"""Object detection's New dataset form: images and their label files, from
a server folder or an uploaded archive, in one of the label formats the
build reads (or found out), with the classes to keep or rename, DIGITS'
padding and the smallest box kept.

Its params (the build's ``trainer.tasks.detection_plan`` reads them):
``task`` "detection"; ``source`` ``{"type": "folder", "path"}`` or
``{"type": "archive", "name"}`` (``path`` added once the upload is kept);
``label_format``; ``class_map``, None (every class) or {source class: stored
class}; ``placing``, ``{"pad_width", "pad_height", "min_box_size"}``; and
``BuildForm``'s options."""

from __future__ import annotations

from typing import Any

from django import forms

from jobs.forms import TextField
from trainer.tasks import detection
from web.numberfield import NumberField

from .forms import FolderOrArchiveForm, padding_field

# Each format with the layout it expects, one line each.
LABEL_FORMATS = {
    "auto": ("Auto-detect", "Found from the files: VOC .xml files, a COCO .json, KITTI's image_2 and label_2, or "
                            "YOLO's classes file."),
    "kitti": ("KITTI", "image_2/ (or images/) with the images, label_2/ (or labels/) with a .txt of the same name "
                       "each, one object a line; DontCare lines are ignore regions."),
    "voc": ("Pascal VOC", "Annotations/ with an .xml per image, JPEGImages/ with the images; difficult objects are "
                          "kept, flagged."),
    "coco": ("COCO JSON", "The images and a COCO instances .json (annotations/*.json, or at the top) naming them by "
                          "file_name."),
    "yolo": ("YOLO", "images/ and labels/ with a .txt of the same name each, “class x_centre y_centre width "
                     "height” as fractions, and classes.txt (or obj.names, data.yaml) naming the classes."),
}


def parse_class_map(text: str) -> dict[str, str] | None:
    """The class map a textarea gives: one line per source class kept, its
    name alone or "name: new name" (several may share a new name). Blank
    lines are skipped; no line at all is None (every class kept as named).
    ValueError listing each wrong line."""
    mapped: dict[str, str] = {}
    first_line: dict[str, int] = {}
    problems = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        name, colon, new = (part.strip() for part in line.partition(":"))
        if not name:
            problems.append(f"Line {number} (“{line.strip()}”) names no class before its colon.")
        elif colon and not new:
            problems.append(f"Line {number} (“{line.strip()}”) gives no new name after its colon: "
                            f"write “{name}” alone to keep the name.")
        elif name in first_line:
            problems.append(f"Line {number} names the class “{name}” again (first on line {first_line[name]}).")
        else:
            first_line[name] = number
            mapped[name] = new or name
    if problems:
        raise ValueError(" ".join(problems))
    return mapped or None


class DetectionDatasetForm(FolderOrArchiveForm):
    """Object detection (see the module for its params)."""

    title = "New object detection dataset"
    source_template = "datasets/source_detection.html"
    folder_missing = "Give the folder of images and labels."

    folder = forms.CharField(required=False, label="Images and labels",
                             help_text="The folder holding the images and their labels, laid out as the label format "
                                       "says.")
    archive = forms.FileField(required=False, help_text="The images and their labels inside, laid out as the label "
                                                        "format says.")
    label_format = forms.ChoiceField(choices=[(name, label) for name, (label, _) in LABEL_FORMATS.items()],
                                     initial="auto", error_messages={
                                         "invalid_choice": f"“%(value)s” is not a label format: the formats are "
                                                           f"{', '.join(LABEL_FORMATS)}."})
    class_map = TextField(required=False, label="Classes", widget=forms.Textarea(attrs={"rows": 4}),
                          help_text="One line per class to keep: its name, or “name: new name” to rename it (several "
                                    "may share a new name). Classes not listed are left out; blank keeps every class.")
    pad_width = padding_field("Padding width")
    pad_height = padding_field("Padding height")
    min_box_size = NumberField(min_value=0, initial=1, label="Minimum box size", error_messages={
        "min_value": "The minimum box size is 0 (keep every box) or more pixels."},
        help_text="Boxes narrower or lower than this, in pixels of the stored image, are left out; 0 keeps all.")

    field_order = ["name", "group", "notes", "source", "folder", "archive", "keep_upload", "label_format", "class_map",
                   "pad_width", "pad_height", "min_box_size"]

    def format_help(self) -> list[tuple[str, str, str]]:
        """Each label format's name, label and the layout it expects."""
        return [(name, label, layout) for name, (label, layout) in LABEL_FORMATS.items()]

    def clean_class_map(self) -> dict[str, str] | None:
        try:
            return parse_class_map(self.cleaned_data.get("class_map") or "")
        except ValueError as exc:
            raise forms.ValidationError(str(exc), code="class_map") from None

    def source_params(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {"task": detection.TASK.name, **self.folder_or_archive_params(), "label_format": data["label_format"],
                "class_map": data["class_map"],
                "placing": {"pad_width": data["pad_width"], "pad_height": data["pad_height"],
                            "min_box_size": data["min_box_size"]}}
