"""Model archives' part of the API description: export a snapshot, download
the archive."""

from typing import Any

from training.openapi import SNAPSHOT_BODY
from web.apischema import JOB_ID, MODEL_ID, body, json_answer, operation, ref

EXPORT_JOB = {"allOf": [ref("Job"), {"type": "object", "properties": {
    "archive_url": {"type": "string"}, "archive_api": {"type": "string"},
    "ready": {"type": "boolean", "description": "the archive is made and may be downloaded"}}}]}
PATHS: dict[str, Any] = {
    "/api/models/{model_id}/export": {
        "parameters": [MODEL_ID],
        "post": operation("Export a snapshot as a model archive (safetensors, ONNX, a torch.export program where "
                          "the network can be captured as one, labels, mean, preprocessing, README): the export job, "
                          "reused while one for the same unchanged snapshot is made or under way",
                          {"201": json_answer(EXPORT_JOB, "Created and queued"), "200": json_answer(EXPORT_JOB, "Reused")},
                          ("400", "401", "404"), requestBody=body(SNAPSHOT_BODY))},
    "/api/exports/{job_id}/archive": {"parameters": [JOB_ID], "get": operation(
        "The export job's archive, once made", {"200": {"description": "the archive, named <model>-<snapshot>.zip",
                                                        "content": {"application/zip": {"schema": {
                                                            "type": "string", "format": "binary"}}}}},
        ("401", "404"))},
}
