"""Segment one's part of the API description: one image through the warm
model server, its mask in the image's pixels."""

from typing import Any

from web.apischema import MODEL_ID

from ..detect.openapi import one_image_operation

SEGMENT_CLASS = {"type": "object", "properties": {
    "index": {"type": "integer", "description": "the class's position in the model's classes"},
    "class": {"type": "string"}, "pixels": {"type": "integer", "description": "the image's pixels of the class"}}}
SEGMENT_ANSWER = {"type": "object", "properties": {
    "model": {"type": "integer"}, "snapshot": {"type": "string"},
    "note": {"type": "string", "description": "e.g. that the model is still training and its newest snapshot "
                                              "is used; empty when there is nothing to say"},
    "width": {"type": "integer", "description": "the image's width in pixels (after its EXIF rotation)"},
    "height": {"type": "integer", "description": "the image's height in pixels"},
    "mask": {"type": "string", "format": "byte",
             "description": "a grayscale PNG of the image's size, base64: each pixel's class index, 255 where the "
                            "network saw no pixel (cropped away by the dataset's resize or the run's crop)"},
    "classes": {"type": "array", "items": SEGMENT_CLASS, "description": "the classes found, the most pixels first"},
    "seconds": {"type": "number", "description": "time in the model server"},
    "total_seconds": {"type": "number", "description": "time of the whole request in the web server"},
    "loaded_now": {"type": "boolean", "description": "the model was loaded for this request"}}}

PATHS: dict[str, Any] = {
    "/api/models/{model_id}/segment": {
        "parameters": [MODEL_ID],
        "post": one_image_operation("Segment one image with a segmentation model: the class of every pixel",
                                    SEGMENT_ANSWER)},
}
