"""The datasets app's part of the API description: importing a dataset of
any task, reading one, and browsing the server folders datasets may come
from."""

from typing import Any

from trainer.tasks import DEFAULT, TASKS
from web.apischema import JOB_ID, json_answer, operation, ref

from .detection_form import LABEL_FORMATS
from .instance_form import LAYOUTS as INSTANCE_LAYOUTS
from .segmentation_form import BINARY, LABEL_TYPES, LAYOUTS

# The fields of every task's form; then classification's, detection's and segmentation's own.
_SHARED = {
    "name": {"type": "string"},
    "task": {"enum": list(TASKS), "default": DEFAULT,
             "description": "The dataset's task, which picks the fields below; another name is a 400 naming the tasks"},
    "image_type": {"enum": ["color", "grayscale"]},
    "width": {"type": "integer", "default": 256}, "height": {"type": "integer", "default": 256},
    "resize_mode": {"enum": ["squash", "crop", "fill", "half_crop"]},
    "val_percent": {"type": "number", "default": 25}, "test_percent": {"type": "number", "default": 0},
    "encoding": {"enum": ["png", "jpeg", "none"]}, "quality": {"type": "integer", "default": 90},
    "seed": {"type": "integer", "default": 1}, "mean": {"type": "boolean", "default": True},
}
_CLASSIFICATION = {
    "source": {"enum": ["folder", "archive", "lists"], "description": "classification: folder, archive or lists; "
                                                                       "the other tasks: folder or archive"},
    "train_folder": {"type": "string", "description": "classification: a folder a class"},
    "min_per_class": {"type": "integer", "default": 2}, "max_per_class": {"type": "integer"},
}
_DETECTION = {
    "folder": {"type": "string", "description": "the tasks but classification: the server folder of images and "
                                                 "labels"},
    "label_format": {"enum": list(LABEL_FORMATS), "default": "auto",
                     "description": "detection: " + "; ".join(f"{name}: {layout}"
                                                              for name, (_, layout) in LABEL_FORMATS.items())},
    "class_map": {"type": "string", "description": "detection: one line per class kept, “name” or “name: new "
                                                   "name”; blank keeps every class"},
    "pad_width": {"type": "integer", "minimum": 1, "description": "the tasks but classification: padded width "
                                                                  "(with pad_height, or neither)"},
    "pad_height": {"type": "integer", "minimum": 1},
    "min_box_size": {"type": "number", "minimum": 0, "default": 1,
                     "description": "detection: boxes smaller in pixels of the stored image are left out"},
}
_SEGMENTATION = {
    "layout": {"enum": list(LAYOUTS), "default": "auto",
               "description": "segmentation: " + "; ".join(f"{name}: {text}" for name, (_, text) in LAYOUTS.items())
               + ". Instance segmentation: " + "; ".join(f"{name}: {text}"
                                                         for name, (_, text) in INSTANCE_LAYOUTS.items())},
    "image_folder": {"type": "string", "description": "segmentation, folders layout: the images' folder (images)"},
    "label_folder": {"type": "string", "description": "segmentation, folders layout: the label images' folder "
                                                      "(labels, masks or annotations)"},
    "label_type": {"enum": [name for name, _ in LABEL_TYPES], "default": "auto",
                   "description": "segmentation: the label images' values are the classes, or their colours by the "
                                  "colour map"},
    "colour_map": {"type": "string", "description": "segmentation: a line a class, “red green blue name”; a line "
                                                    "named ignore is the colour of ignored pixels"},
    "class_names": {"type": "string", "description": "segmentation: a class name a line, class 0 first"},
    "ignore_value": {"type": ["integer", "null"], "minimum": 0, "maximum": 255, "default": 255,
                     "description": "segmentation: the pixel value excluded from loss and metrics; null for none"},
    "binary": {"enum": [name for name, _ in BINARY], "default": "auto",
               "description": "segmentation: in masks of 0 and 255, 255 is the foreground or the ignore value "
                              "(auto: foreground when the label images hold only those)"},
}
_FIELDS = {**_SHARED, **_CLASSIFICATION, **_DETECTION, **_SEGMENTATION}

PATHS: dict[str, Any] = {
    "/api/datasets": {"post": operation(
        "Import a dataset of a task (classification by default, \"task\": \"detection\", \"segmentation\" or "
        "\"instance_segmentation\"): the New dataset "
        "form's fields as JSON (server folder or lists), or as "
        "multipart/form-data with the archive or list files (the fields sent before the file are checked before it "
        "is read: send them first and a mistake costs no upload)", {"201": json_answer(ref("Job"), "Created and queued")},
        ("400", "401", "413"), requestBody={"required": True, "content": {
            "application/json": {"schema": {"type": "object", "required": ["name", "source"], "properties": _FIELDS}},
            "multipart/form-data": {"schema": {"type": "object", "required": ["name"], "properties": {
                **_FIELDS, "archive": {"type": "string", "format": "binary"}}}}}})},
    "/api/datasets/{job_id}": {"parameters": [JOB_ID], "get": operation(
        "A dataset job with its manifest (task, classes, counts per split and class, skipped files, checksums; "
        "a detection dataset's target_counts, a segmentation dataset's labelling)",
        {"200": json_answer({"type": "object"})}, ("401", "404"))},
    "/api/folders": {"get": operation(
        "Browse the server folders datasets may be read from", {"200": json_answer({"type": "object"})},
        ("401", "403"), parameters=[{"name": "path", "in": "query", "schema": {"type": "string"}}])},
}
