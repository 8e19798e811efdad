"""The inference app's part of the API description: evaluations and their
reports, classify many and Compare (``evaluate``), classify one through the
model server (``classify``), and model archives (``export``)."""

from typing import Any

from training.openapi import SNAPSHOT_BODY
from web.apischema import GROUP, GROUP_OWNER, JOB_ID, MODEL_ID, body, json_answer, operation, ref

# Evaluations (the inference app): evaluate a model, classify many, reports, Compare.
EVAL_SPLIT = {"type": "object", "properties": {
    "split": {"enum": ["val", "test"], "default": "val"},
    "snapshot": {"type": "string", "description": "a snapshot file of the model, e.g. epoch-3.pt; empty: the best"}}}
EVAL_CREATED = json_answer({"allOf": [ref("Job"), {"type": "object", "properties": {"note": {
    "type": "string", "description": "what to know, e.g. that the model is still training and its newest "
                                     "snapshot is used"}}}]}, "Created and queued")
NEW_EVALUATION = {"type": "object", "required": ["model", "source"], "properties": {
    "model": {"type": "integer", "description": "a training job"}, "snapshot": EVAL_SPLIT["properties"]["snapshot"],
    "source": {"enum": ["split", "list", "folder", "archive"]}, "split": EVAL_SPLIT["properties"]["split"],
    "list_text": {"type": "string", "description": "`path [label]` a line; the label a class name or number"},
    "prefix": {"type": "string", "description": "a server folder for the list's relative paths"},
    "folder": {"type": "string", "description": "a server folder below DATASET_ROOTS; subfolders named after "
                                                "classes give the labels"},
    "top_n": {"type": "integer", "minimum": 1, "maximum": 100, "default": 5},
    "name": {"type": "string"}, "group": {"type": "string"}, "notes": {"type": "string"},
    "device": {"enum": ["cpu", "gpu"]}}}
EVAL_REPORT = {"type": "object", "properties": {
    "id": {"type": "integer"}, "status": {"type": "string"}, "model": {"type": ["integer", "null"]},
    "note": {"type": "string"},
    "report": {"type": ["object", "null"], "description": "null until done: classes, count, classified, unreadable, "
               "labelled, top1, top5, per_class [{class, count, predicted, precision, recall, accuracy}], confusion "
               "(rows: true class, columns: predicted), mistakes (row numbers, most confident first), top_n "
               "{n, classes: [{most, least}]}, snapshot, warnings"}}}
EVAL_ROWS_QUERY = [{"name": name, "in": "query", "schema": schema, "description": text} for name, schema, text in (
    ("label", {"type": "integer"}, "true class index"), ("predicted", {"type": "integer"}, "top-1 class index"),
    ("outcome", {"enum": ["correct", "wrong", "unlabelled", "unreadable"]}, ""),
    ("rows", {"type": "string"}, "row numbers separated by commas (at most 500), in their order"),
    ("list", {"enum": ["mistakes"]}, "the report's mistakes, most confident first, a page at a time"),
    ("page", {"type": "integer", "default": 1}, ""), ("size", {"type": "integer", "default": 50, "maximum": 500}, ""))]

EVALUATION_PATHS: dict[str, Any] = {
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
        "An evaluation's images with their top 5, filtered and paged",
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


# Classify one (the inference app): one image through the warm model server.
CLASSIFY_OPTIONS = {
    "snapshot": EVAL_SPLIT["properties"]["snapshot"],
    "visualize": {"type": "boolean", "default": False,
                  "description": "add every layer (`layers`, `params`, `trainable`) and a saliency map"},
    "class": {"type": "integer", "minimum": 0, "description": "the class of the saliency map; empty: the top class"},
    "layer": {"type": "string", "description": "the convolution the saliency map is computed at (a name from "
              "`saliency.layers`); empty: the deepest whose output is at least 7×7, else the largest"}}
CLASSIFY_JSON = {"type": "object", "description": "one image: `split` and `index` of the model's dataset, or `path`",
                 "properties": {"split": {"enum": ["train", "val", "test"], "default": "val"},
                                "index": {"type": "integer", "minimum": 0},
                                "path": {"type": "string", "description": "an image file below DATASET_ROOTS"},
                                **CLASSIFY_OPTIONS}}
CLASSIFY_TOP = {"type": "array", "items": {"type": "object", "properties": {
    "index": {"type": "integer"}, "class": {"type": "string"}, "probability": {"type": "number"}}}}
CLASSIFY_ANSWER = {"type": "object", "properties": {
    "model": {"type": "integer"}, "snapshot": {"type": "string"},
    "note": {"type": "string", "description": "e.g. that the model is still training and its newest snapshot "
                                              "is used; empty when there is nothing to say"},
    "top": CLASSIFY_TOP, "seen": {"type": "string", "description": "the input as the network saw it, a PNG data URL"},
    "seconds": {"type": "number", "description": "time in the model server"},
    "total_seconds": {"type": "number", "description": "time of the whole request in the web server"},
    "loaded_now": {"type": "boolean", "description": "the model was loaded for this request"},
    "layers": {"type": "array", "description": "with visualize: every layer in order: name, type, output_shape, "
               "params, activations (PNG data URL), activation_stats {mean, std, histogram {edges, counts}}, "
               "weights (null, or shape, mean, std, histogram and for a convolution filters as a PNG data URL)"},
    "params": {"type": "integer"}, "trainable": {"type": "integer"},
    "saliency": {"type": "object", "description": "with visualize, class or layer: the Grad-CAM map over the input",
                 "properties": {"index": {"type": "integer"}, "class": {"type": "string"},
                                "peak": {"type": "array", "items": {"type": "integer"}},
                                "image": {"type": "string", "description": "a PNG data URL"},
                                "layer": {"type": "string", "description": "the convolution it was computed at"},
                                "size": {"type": "array", "items": {"type": "integer"},
                                         "description": "that layer's output, height and width: the map's resolution"},
                                "layers": {"type": "array", "description": "every convolution in the order it runs, "
                                           "{name, size}: the layers that may be chosen"}}}}}

CLASSIFY_PATHS: dict[str, Any] = {
    "/api/models/{model_id}/classify": {
        "parameters": [MODEL_ID],
        "post": operation("Classify one image with a model: the top 5, and with visualize every layer and a saliency map",
                          {"200": json_answer(CLASSIFY_ANSWER),
                           "404": json_answer(ref("Error"), "No such model, or its snapshot is gone"),
                           "413": json_answer(ref("Error"), "The request is larger than REQUEST_MAX_BYTES"),
                           "503": json_answer(ref("Error"), "No model server answers")},
                          ("400", "401"), requestBody={"required": True, "content": {
                              "application/json": {"schema": CLASSIFY_JSON},
                              "multipart/form-data": {"schema": {"type": "object", "properties": {
                                  "image": {"type": "string", "format": "binary"}, **CLASSIFY_JSON["properties"]}}}}})},
}

# Model archives.
EXPORT_JOB = {"allOf": [ref("Job"), {"type": "object", "properties": {
    "archive_url": {"type": "string"}, "archive_api": {"type": "string"},
    "ready": {"type": "boolean", "description": "the archive is made and may be downloaded"}}}]}
EXPORT_PATHS: dict[str, Any] = {
    "/api/models/{model_id}/export": {
        "parameters": [MODEL_ID],
        "post": operation("Export a snapshot as a model archive (safetensors, torch.export program, ONNX, labels, mean, "
                          "preprocessing): the export job, reused while one for the same unchanged snapshot is made or "
                          "under way",
                          {"201": json_answer(EXPORT_JOB, "Created and queued"), "200": json_answer(EXPORT_JOB, "Reused")},
                          ("400", "401", "404"), requestBody=body(SNAPSHOT_BODY))},
    "/api/exports/{job_id}/archive": {"parameters": [JOB_ID], "get": operation(
        "The export job's archive, once made", {"200": {"description": "the archive, named <model>-<snapshot>.zip",
                                                        "content": {"application/zip": {"schema": {
                                                            "type": "string", "format": "binary"}}}}},
        ("401", "404"))},
}

PATHS: dict[str, Any] = {**EVALUATION_PATHS, **CLASSIFY_PATHS, **EXPORT_PATHS}
