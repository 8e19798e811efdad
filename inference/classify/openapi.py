"""Classify one's part of the API description: one image through the warm
model server."""

from typing import Any

from web.apischema import MODEL_ID, json_answer, operation, ref

from ..evaluate.openapi import EVAL_SPLIT

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

PATHS: dict[str, Any] = {
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
