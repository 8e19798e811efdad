"""The device checks' part of the API description: what ``POST /api/jobs``
takes to start one."""

from typing import Any

SCHEMAS: dict[str, Any] = {
    "NewDeviceCheck": {"type": "object", "required": ["kind", "name", "seconds", "size"], "properties": {
        "kind": {"const": "devicecheck"}, "name": {"type": "string"}, "group": {"type": "string"},
        "notes": {"type": "string"}, "seconds": {"type": "number", "minimum": 0.5, "maximum": 3600},
        "size": {"type": "integer", "minimum": 16, "maximum": 16384},
        "device": {"enum": ["cpu", "gpu"]}, "gpu_count": {"type": "integer", "minimum": 1},
        "gpu_ids": {"type": "string", "description": "comma-separated GPU indices"},
        "priority": {"enum": ["high", "normal", "low"], "description": "high is given by staff"}}},
}
# Bodies of ``POST /api/jobs``: the job kinds started through it.
SUBMITTED = ["NewDeviceCheck"]
