"""Detect one's part of the API description: one image through the warm
model server, its boxes in the image's pixels."""

from typing import Any

from web.apischema import MODEL_ID, json_answer, operation, ref

from ..classify.openapi import CLASSIFY_JSON

DETECT_JSON = {"type": "object", "description": "one image: `split` and `index` of the model's dataset, or `path`",
               "properties": {name: CLASSIFY_JSON["properties"][name] for name in ("split", "index", "path", "snapshot")}}
DETECT_BOX = {"type": "object", "properties": {
    "index": {"type": "integer", "description": "the class's position in the model's classes"},
    "class": {"type": "string"}, "score": {"type": "number"},
    "x1": {"type": "number"}, "y1": {"type": "number"}, "x2": {"type": "number"}, "y2": {"type": "number"},
    "pixels": {"type": "integer", "description": "an instance segmentation model's: the pixels of its object's mask "
                                                "in `instances`"}},
    "description": "a box in pixels of the image as given (after its EXIF rotation): left, top, right, bottom edges"}
DETECT_ANSWER = {"type": "object", "properties": {
    "model": {"type": "integer"}, "snapshot": {"type": "string"},
    "note": {"type": "string", "description": "e.g. that the model is still training and its newest snapshot "
                                              "is used; empty when there is nothing to say"},
    "width": {"type": "integer", "description": "the image's width in pixels"},
    "height": {"type": "integer", "description": "the image's height in pixels"},
    "boxes": {"type": "array", "items": DETECT_BOX,
              "description": "every detection scoring at least 0.05, the best first"},
    "instances": {"type": "string", "description": "an instance segmentation model's: a base64 grayscale PNG the "
                                                   "image's size, each pixel's object (its box's place in `boxes` "
                                                   "plus one; 0 none), the better-scored on top where two overlap"},
    "seconds": {"type": "number", "description": "time in the model server"},
    "total_seconds": {"type": "number", "description": "time of the whole request in the web server"},
    "loaded_now": {"type": "boolean", "description": "the model was loaded for this request"}}}


def one_image_operation(summary: str, answer: dict[str, Any]) -> dict[str, Any]:
    """The POST of Detect one and Segment one: one image in (uploaded, or
    ``DETECT_JSON``), ``answer`` out, and the refusals they share."""
    return operation(summary, {"200": json_answer(answer),
                               "404": json_answer(ref("Error"), "No such model, or its snapshot is gone"),
                               "413": json_answer(ref("Error"), "The request is larger than REQUEST_MAX_BYTES"),
                               "429": json_answer(ref("Error"), "The user has CLASSIFY_IN_FLIGHT_PER_USER "
                                                  "requests in flight already (Retry-After)"),
                               "503": json_answer(ref("Error"), "No model server answers")},
                     ("400", "401"), requestBody={"required": True, "content": {
                         "application/json": {"schema": DETECT_JSON},
                         "multipart/form-data": {"schema": {"type": "object", "properties": {
                             "image": {"type": "string", "format": "binary"}, **DETECT_JSON["properties"]}}}}})


PATHS: dict[str, Any] = {
    "/api/models/{model_id}/detect": {
        "parameters": [MODEL_ID],
        "post": one_image_operation("Detect objects in one image with a detection or instance segmentation "
                                    "model: every box scoring at least 0.05, with its object's mask for an "
                                    "instance segmentation model", DETECT_ANSWER)},
}
