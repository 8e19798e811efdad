"""The jobs app's part of the API description: any job, its actions, log and
events, the resources, and who is signed in."""

from typing import Any

from web.apischema import JOB_ID, SSE, body, json_answer, operation, ref

SCHEMAS: dict[str, Any] = {
    "JobSummary": {"type": "object", "properties": {
        "id": {"type": "integer"}, "kind": {"type": "string"}, "category": {"type": "string"},
        "name": {"type": "string"}, "group": {"type": "string"}, "owner": {"type": "string"},
        "status": {"enum": ["queued", "waiting", "running", "done", "failed", "aborted"]},
        "progress": {"type": "number"}, "created_at": {"type": "string", "format": "date-time"},
        "started_at": {"type": ["string", "null"]}, "finished_at": {"type": ["string", "null"]},
        "elapsed_seconds": {"type": ["number", "null"]}, "eta_seconds": {"type": ["number", "null"]},
        "priority": {"enum": ["high", "normal", "low"]},
        "queue_position": {"type": ["integer", "null"], "description": "a pending job's place in the order its "
                           "device class's jobs get devices (staff's moves, priority, fair share, age)"},
        "waiting_reason": {"type": "string", "description": "why a pending job has not started yet"},
        "url": {"type": "string"},
        "group_url": {"type": ["string", "null"],
                      "description": "the group page (the owner's group of that name), for a job in a group"},
        "sparkline": {"type": "array", "items": {"type": "number"},
                      "description": "for a kind whose row on the home list draws a small line (a model: its "
                                     "train loss), its values, at most 60 (min and max per bucket)"}}},
    "Job": {"allOf": [ref("JobSummary"), {"type": "object", "properties": {
        "notes": {"type": "string"}, "params": {"type": "object"}, "resources": {"type": "object"},
        "held": {"type": "object", "description": "the devices it holds: host, devices, and for a job over "
                 "several machines, nodes (count, rank, and the rendezvous address, port and timeout)"},
        "nodes": {"type": "array", "description": "a job over several machines: its other nodes in the "
                  "latest attempt", "items": {"type": "object", "properties": {
                      "rank": {"type": "integer"}, "status": {"type": "string"}, "host": {"type": "string"},
                      "devices": {"type": "array", "items": {"type": "string"}},
                      "message": {"type": "string"}}}},
        "worker": {"type": "string"}, "attempt": {"type": "integer"},
        "abort_requested": {"type": "boolean"}, "silent_since": {"type": ["string", "null"], "format": "date-time"},
        "restart_requested": {"type": "boolean"}, "error": {"type": "string"},
        "resumable": {"type": "boolean", "description": "an aborted or failed job that its kind can carry on, from the file "
                                 "(a model: the checkpoint) its last run left"},
        "history": {"type": "array", "items": {"type": "object", "properties": {
            "status": {"type": "string"}, "at": {"type": "string"}, "message": {"type": "string"}}}}}}]},
    "JobChanges": {"type": "object", "properties": {
        "name": {"type": "string"}, "group": {"type": "string"}, "notes": {"type": "string"}}},
}

PATHS: dict[str, Any] = {
    "/api/me": {"get": operation("The signed-in user", {"200": json_answer({"type": "object"})})},
    "/api/jobs": {
        "get": operation("List jobs", {"200": json_answer({"type": "object", "properties": {
            "jobs": {"type": "array", "items": ref("JobSummary")}}})}, parameters=[
            {"name": n, "in": "query", "schema": {"type": "string"}, "description": d} for n, d in (
                ("category", "datasets, models or checks"), ("status", "comma-separated statuses"),
                ("q", "text in name, group, owner or kind"))]),
        "post": operation("Submit a job", {"201": json_answer(ref("Job"), "Created and queued")}, ("400", "401"),
                    requestBody=body(ref("NewJob"))),
    },
    "/api/jobs/bulk": {"post": operation("Abort or delete several jobs", {"200": json_answer({"type": "object"})},
                                         ("400", "401"), requestBody=body({"type": "object", "properties": {
                                             "action": {"enum": ["abort", "delete"]},
                                             "ids": {"type": "array", "items": {"type": "integer"}}}}))},
    "/api/jobs/{job_id}": {
        "parameters": [JOB_ID],
        "get": operation("One job with its status history", {"200": json_answer(ref("Job"))}, ("401", "404")),
        "patch": operation("Rename, regroup or annotate", {"200": json_answer(ref("Job"))}, ("400", "401", "403", "404"),
                           requestBody=body(ref("JobChanges"))),
        "delete": operation("Delete a finished job and its folder", {"204": {"description": "Deleted"}},
                            ("401", "403", "404", "409")),
    },
    "/api/jobs/{job_id}/abort": {"parameters": [JOB_ID], "post": operation(
        "Abort a queued, waiting or running job", {"202": json_answer(ref("Job"), "Aborted, or abort requested")},
        ("401", "403", "404", "409"))},
    "/api/jobs/{job_id}/restart": {"parameters": [JOB_ID], "post": operation(
        "Kill the process of a running job that has stopped responding and queue it again, to resume",
        {"202": json_answer(ref("Job"), "Restart requested")}, ("401", "403", "404", "409"))},
    "/api/jobs/{job_id}/clone": {"parameters": [JOB_ID], "post": operation(
        "Submit a copy of the job as your own", {"201": json_answer(ref("Job"))}, ("401", "404"))},
    "/api/jobs/{job_id}/resume": {"parameters": [JOB_ID], "post": operation(
        "Queue an aborted or failed job again, to carry on from where its last run left off (a model: "
        "its last checkpoint)",
        {"202": json_answer(ref("Job"), "Queued again")}, ("401", "403", "404", "409"))},
    "/api/jobs/{job_id}/log": {"parameters": [JOB_ID], "get": operation(
        "The last lines of the job's log", {"200": json_answer({"type": "object", "properties": {
            "lines": {"type": "array", "items": {"type": "string"}}}})}, ("400", "401", "404"),
        parameters=[{"name": "lines", "in": "query", "schema": {"type": "integer", "maximum": 5000}}])},
    "/api/jobs/{job_id}/events": {"parameters": [JOB_ID], "get": operation(
        "The job's events: history, then live; resume with Last-Event-ID", {"200": SSE}, ("401", "404"))},
    "/api/events": {"get": operation("Status and progress of all jobs, live, and free devices", {"200": SSE})},
    "/api/jobs/{job_id}/queue": {"parameters": [JOB_ID], "post": operation(
        "Change a queued or waiting job's priority (the owner: normal or low; staff: any), or move it to the "
        "front of its queue (staff)", {"200": json_answer(ref("Job"))}, ("400", "401", "403", "404", "409"),
        requestBody=body({"type": "object", "properties": {
            "priority": {"enum": ["high", "normal", "low"]}, "front": {"type": "boolean"}}}))},
    "/api/users/{username}/device_limit": {
        "parameters": [{"name": "username", "in": "path", "required": True, "schema": {"type": "string"}}],
        "post": operation("Staff: how many devices of a class (GPUs, or CPU slots) the user may hold at once",
                          {"200": json_answer({"type": "object", "properties": {
                              "user": {"type": "string"}, "limit": {"type": "integer"}}})},
                          ("400", "401", "403", "404"), requestBody=body({"type": "object", "properties": {
                              "limit": {"type": ["integer", "null"], "minimum": 0, "maximum": 4096,
                                        "description": "0: no limit; null: the default for every user"}}}))},
    "/api/resources": {"get": operation("Workers, devices, who holds them, the queue in order with why each "
                                        "job waits, and what each user holds and may hold",
                                        {"200": json_answer({"type": "object"})})},
}
