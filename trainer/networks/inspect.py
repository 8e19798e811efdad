"""Build a network and summarise it, as a command for the web app:

    python -m trainer.networks.inspect < request.json

reads ``{"network": spec, "task", "channels", "classes", "height", "width",
"max_params"}`` (``task`` a task's name, classification when absent: the
network is built as that task's runs build it) and
prints one line of JSON: ``{"ok": true, "summary": {...}}`` or
``{"ok": false, "error": "..."}``; the exit status is 0 either way. Anything
else written to stdout while the network is built (a user's ``print``, a
library's output) goes to stderr instead, so stdout holds only the answer.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from trainer.networks import NetworkError, summary
from trainer.tasks import task_of
from trainer.tasks.training import training_for


def answer(request: Any) -> dict[str, Any]:
    """The reply to one request."""
    if not isinstance(request, dict):
        return {"ok": False, "error": "The request must be a JSON object"}
    try:
        sizes = [request[key] for key in ("channels", "classes", "height", "width")]
        spec = request["network"]
    except KeyError as exc:
        return {"ok": False, "error": f"The request lacks {exc.args[0]!r}"}
    channels, classes, height, width = sizes
    try:
        task = task_of({"task": request.get("task")})
        model = training_for(task, classes, {}).build(spec, channels, classes, height, width)
        params = sum(p.numel() for p in model.parameters())
        limit = request.get("max_params")
        if isinstance(limit, int) and params > limit:
            return {"ok": False, "error": f"The network has {params:,} parameters, more than the {limit:,} "
                                          "that Visualize builds (INSPECT_MAX_PARAMS)."}
        return {"ok": True, "summary": summary(model, channels, height, width)}
    except (NetworkError, ValueError) as exc:
        return {"ok": False, "error": str(exc)}


def main() -> int:
    reply = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    try:
        request = json.loads(sys.stdin.read())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        result: dict[str, Any] = {"ok": False, "error": f"The request is not valid JSON: {exc}"}
    else:
        try:
            result = answer(request)
        except Exception as exc:  # the answer must come back whatever happened, as JSON
            result = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.flush()
    reply.write(json.dumps(result) + "\n")
    reply.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
