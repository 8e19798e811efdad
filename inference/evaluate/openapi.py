"""The evaluations' part of the API description: evaluate a model,
classify many, reports and their rows, and Compare."""

from typing import Any

from datasets.detection_form import LABEL_FORMATS
from trainer.tasks.base import EVALUATION_OPTIONS
from web.apischema import GROUP, GROUP_OWNER, JOB_ID, MODEL_ID, body, json_answer, operation, ref

SCORE_THRESHOLD = {"type": "number", "minimum": 0, "maximum": 1, "default": EVALUATION_OPTIONS["score_threshold"],
                   "description": "for a model whose task takes one (a detector): the score a detection needs to "
                                  "count in the precision, the recall, the false positives and the missed boxes"}
EVAL_SPLIT = {"type": "object", "properties": {
    "split": {"enum": ["val", "test"], "default": "val"},
    "snapshot": {"type": "string", "description": "a snapshot file of the model, e.g. epoch-3.pt; empty: the best"},
    "score_threshold": SCORE_THRESHOLD}}
EVAL_CREATED = json_answer({"allOf": [ref("Job"), {"type": "object", "properties": {"note": {
    "type": "string", "description": "what to know, e.g. that the model is still training and its newest "
                                     "snapshot is used"}}}]}, "Created and queued")
NEW_EVALUATION = {"type": "object", "required": ["model", "source"], "properties": {
    "model": {"type": "integer", "description": "a training job"}, "snapshot": EVAL_SPLIT["properties"]["snapshot"],
    "source": {"enum": ["split", "list", "folder", "archive"], "description": "those the model's task takes: a "
               "detector's are split, folder and archive"}, "split": EVAL_SPLIT["properties"]["split"],
    "list_text": {"type": "string", "description": "`path [label]` a line; the label a class name or number"},
    "prefix": {"type": "string", "description": "a server folder for the list's relative paths"},
    "folder": {"type": "string", "description": "a server folder below DATASET_ROOTS; subfolders named after "
                                                "classes give the labels (a detector's: images with their boxes in "
                                                "KITTI, Pascal VOC, COCO or YOLO layout)"},
    "label_format": {"enum": list(LABEL_FORMATS), "default": EVALUATION_OPTIONS["label_format"],
                     "description": "a detector's folder or archive: its labels' format, or auto"},
    "score_threshold": SCORE_THRESHOLD,
    "top_n": {"type": "integer", "minimum": 1, "maximum": 100, "default": 5},
    "name": {"type": "string"}, "group": {"type": "string"}, "notes": {"type": "string"},
    "device": {"enum": ["cpu", "gpu"]},
    "priority": {"enum": ["high", "normal", "low"], "description": "high is given by staff"}}}
EVAL_REPORT = {"type": "object", "properties": {
    "id": {"type": "integer"}, "status": {"type": "string"}, "model": {"type": ["integer", "null"]},
    "note": {"type": "string"},
    "report": {"type": ["object", "null"], "description": "null until done: classes, count, classified, unreadable, "
               "labelled, top1, top5, per_class [{class, count, predicted, precision, recall, accuracy}], confusion "
               "(rows: true class, columns: predicted), mistakes (row numbers, most confident first), top_n "
               "{n, classes: [{most, least}]}, snapshot, warnings. A model whose task has its own report (layout "
               "\"boxes\": detection) gives instead layout, classes, count, boxes, detections, image_size, iou, "
               "score_threshold, loss, map50, map, per_class {class: {boxes, detections, ap50, ap}}, pr_curves "
               "{recall (101 points), precision {class: [101 values] or null}}, false_positives and missed "
               "[{index, name, class, box (, score)}] with their totals, worst [{index, name, misses, false_positives, "
               "truth, detections}] with worst_total, skipped [{file, line, reason}] (new images' files and lines left out), "
               "snapshot, warnings. Layout \"masks\" (semantic segmentation): classes, count, miou, "
               "pixel_accuracy, dice, loss, ignore (the ignore value), pixels (labelled), ignored, confusion (pixels; "
               "rows: true class, columns: predicted), per_class [{class, pixels, predicted, iou, dice, precision, "
               "recall}] (null where a class is in neither), worst [{index, name, miou, pixel_accuracy, labelled, "
               "wrong, ignored, truth, predicted}] lowest mIoU first (truth and predicted: base64 PNGs of class "
               "indices at image_size, the ignore value where the truth ignores a pixel) with worst_total (the images "
               "with a labelled pixel), skipped [{file, line, reason}] (new images' bad pairs left out), image_size, "
               "snapshot, warnings"}}}
EVAL_ROWS_QUERY = [{"name": name, "in": "query", "schema": schema, "description": text} for name, schema, text in (
    ("label", {"type": "integer"}, "true class index"), ("predicted", {"type": "integer"}, "top-1 class index"),
    ("outcome", {"enum": ["correct", "wrong", "unlabelled", "unreadable"]}, ""),
    ("rows", {"type": "string"}, "row numbers separated by commas (at most 500), in their order"),
    ("list", {"enum": ["mistakes"]}, "the report's mistakes, most confident first, a page at a time"),
    ("page", {"type": "integer", "default": 1}, ""), ("size", {"type": "integer", "default": 50, "maximum": 500}, ""))]

PATHS: dict[str, Any] = {
    "/api/models/{model_id}/evaluate": {
        "parameters": [MODEL_ID],
        "post": operation("Evaluate a model on its dataset's validation or test split", {"201": EVAL_CREATED},
                          ("400", "401", "404"), requestBody=body(EVAL_SPLIT))},
    "/api/evaluations": {"post": operation(
        "Classify many: a model on a text list, a server folder or an uploaded archive (multipart), or a split",
        {"201": EVAL_CREATED}, ("400", "401", "413"), requestBody={"required": True, "content": {
            "application/json": {"schema": NEW_EVALUATION},
            "multipart/form-data": {"schema": {"type": "object", "required": ["model"], "properties": {
                "model": {"type": "integer"}, "archive": {"type": "string", "format": "binary"},
                "list_file": {"type": "string", "format": "binary"}}}}}})},
    "/api/evaluations/{job_id}/report": {"parameters": [JOB_ID], "get": operation(
        "An evaluation's report", {"200": json_answer(EVAL_REPORT)}, ("401", "404"))},
    "/api/evaluations/{job_id}/rows": {"parameters": [JOB_ID], "get": operation(
        "An evaluation's images with their top 5, filtered and paged (400 for a report of boxes: its rows are "
        "detections, in the downloads)",
        {"200": json_answer({"type": "object", "properties": {"total": {"type": "integer"}, "rows": {"type": "array"}}})},
        ("400", "401", "404"), parameters=EVAL_ROWS_QUERY)},
    "/api/compare/{owner}/{group}": {
        "parameters": [GROUP_OWNER, GROUP],
        "get": operation("The evaluations Compare queued for a group, with their accuracies",
                         {"200": json_answer({"type": "object"})}),
        "post": operation("Evaluate every model of the group on the same split",
                          {"201": json_answer({"type": "object", "properties": {"jobs": {"type": "array"},
                                                                          "skipped": {"type": "array"}}})},
                          ("400", "401"), requestBody=body(EVAL_SPLIT))},
}
