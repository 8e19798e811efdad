"""The datasets app's part of the API description: importing a dataset,
reading one, and browsing the server folders datasets may come from."""

from typing import Any

from web.apischema import JOB_ID, json_answer, operation, ref

PATHS: dict[str, Any] = {
    "/api/datasets": {"post": operation(
        "Import a dataset: the New dataset form's fields as JSON (server folder or lists), or as "
        "multipart/form-data with the archive or list files (the fields sent before the file are checked before it "
        "is read: send them first and a mistake costs no upload)", {"201": json_answer(ref("Job"), "Created and queued")},
        ("400", "401", "413"), requestBody={"required": True, "content": {
            "application/json": {"schema": {"type": "object", "required": ["name", "source"], "properties": {
                "name": {"type": "string"}, "source": {"enum": ["folder", "archive", "lists"]},
                "train_folder": {"type": "string"}, "image_type": {"enum": ["color", "grayscale"]},
                "width": {"type": "integer", "default": 256}, "height": {"type": "integer", "default": 256},
                "resize_mode": {"enum": ["squash", "crop", "fill", "half_crop"]},
                "val_percent": {"type": "number", "default": 25}, "test_percent": {"type": "number", "default": 0},
                "encoding": {"enum": ["png", "jpeg", "none"]}}}},
            "multipart/form-data": {"schema": {"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string"}, "archive": {"type": "string", "format": "binary"}}}}}})},
    "/api/datasets/{job_id}": {"parameters": [JOB_ID], "get": operation(
        "A dataset job with its manifest (classes, counts per split and class, skipped files, checksums)",
        {"200": json_answer({"type": "object"})}, ("401", "404"))},
    "/api/folders": {"get": operation(
        "Browse the server folders datasets may be read from", {"200": json_answer({"type": "object"})},
        ("401", "403"), parameters=[{"name": "path", "in": "query", "schema": {"type": "string"}}])},
}
