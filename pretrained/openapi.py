"""The pretrained app's part of the API description: a pretrained model made
of a snapshot, or uploaded."""

from typing import Any

from trainer.catalog import NETWORKS
from training.openapi import SNAPSHOT_BODY
from web.apischema import MODEL_ID, body, json_answer, operation, ref

PATHS: dict[str, Any] = {
    "/api/models/{model_id}/pretrained": {
        "parameters": [MODEL_ID],
        "post": operation("Make a pretrained model of a snapshot", {"201": json_answer(ref("Job"), "Created and queued")},
                          ("400", "401", "404"), requestBody=body(SNAPSHOT_BODY))},
    "/api/pretrained": {"post": operation(
        "Upload a pretrained model: a model archive, or a PyTorch state dict for a standard network; a job reads "
        "it with weights_only and checks it against the network", {"201": json_answer(ref("Job"), "Created and queued")},
        ("400", "401", "413"), requestBody={"required": True, "content": {"multipart/form-data": {"schema": {
            "type": "object", "required": ["name", "weights"], "properties": {
                "name": {"type": "string"}, "weights": {"type": "string", "format": "binary"},
                "network": {"enum": ["", *NETWORKS], "description": "the standard network of a state dict; "
                                                                    "empty for an archive"},
                "group": {"type": "string"}, "notes": {"type": "string"}}}}}})},
}

