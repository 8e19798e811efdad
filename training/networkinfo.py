"""What the trainer offers to the New model form, and the two answers that
need a network built: its editor text (Customize) and its layer table
(Visualize).

The lists come from ``trainer.catalog``, which imports no torch. Building a
network does, and the web process never loads torch (it would cost every web
process seconds and hundreds of megabytes), so those two run in a short child
process with a time limit, a memory limit (INSPECT_MEMORY_BYTES of address
space: torch alone takes about 4 GiB of it), a bound on the parameters it
builds, and at most INSPECT_CONCURRENCY of them at once per web process.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import threading
from dataclasses import asdict
from functools import lru_cache
from typing import Any

from django.conf import settings

from trainer.catalog import NETWORKS, SOLVERS, uses_momentum
from trainer.tasks import TASKS

# How long a request waits for one of the INSPECT_CONCURRENCY places.
QUEUE_SECONDS = 10
_places = threading.BoundedSemaphore(settings.INSPECT_CONCURRENCY)

CUSTOMIZE_CODE = """
import json, sys
from trainer.networks import customize
print(json.dumps(customize(sys.argv[1])))
"""


class CatalogError(RuntimeError):
    """The trainer could not answer (a broken installation)."""


class Busy(RuntimeError):
    """Every place for building networks is taken."""


def _limit_memory() -> None:
    limit = settings.INSPECT_MEMORY_BYTES
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _run(args: list[str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    if not _places.acquire(timeout=QUEUE_SECONDS):
        raise Busy("Other networks are being built for their layer tables right now; try again in a moment.")
    try:
        return subprocess.run([sys.executable, *args], input=stdin, capture_output=True, text=True,
                              timeout=settings.INSPECT_TIMEOUT_SECONDS, cwd=settings.BASE_DIR, check=False,
                              preexec_fn=_limit_memory)
    finally:
        _places.release()


OUT_OF_MEMORY_SIGNS = ("bad_alloc", "MemoryError", "Cannot allocate memory", "can't allocate memory")


def _out_of_memory(done: subprocess.CompletedProcess[str]) -> bool:
    """The child ran out of its memory: it died of it, or torch refused an
    allocation and the builder passed the refusal on."""
    return any(sign in done.stderr or sign in done.stdout for sign in OUT_OF_MEMORY_SIGNS)


def networks() -> dict[str, dict[str, Any]]:
    """Every task's standard networks: {name: {name, label, paper_url,
    input_size, summary}}, task by task in the trainer's order."""
    return {name: {**asdict(info), "input_size": list(info.input_size)}
            for task in TASKS.values() for name, info in task.networks.items()}


def customizable() -> list[str]:
    """The standard networks Customize copies into an editor: those of the
    tasks whose models can be custom layers or Python code."""
    return [name for task in TASKS.values() if {"layers", "python"} & set(task.network_sources)
            for name in task.networks]


def solvers() -> dict[str, dict[str, Any]]:
    """{name: {name, label, momentum}} in the trainer's order."""
    return {name: {"name": name, "label": label, "momentum": uses_momentum(name)} for name, label in SOLVERS}


@lru_cache(maxsize=len(NETWORKS))
def customize(name: str) -> dict[str, str]:
    """{"source": "layers"|"python", "text"}: the editable text of standard network ``name``."""
    try:
        done = _run(["-c", CUSTOMIZE_CODE, name])
    except subprocess.TimeoutExpired:
        raise CatalogError(f"Reading the network's code took more than {settings.INSPECT_TIMEOUT_SECONDS} s.") from None
    if done.returncode != 0:
        raise CatalogError(f"Reading the network's code failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def inspect(network: dict[str, Any], task: str, channels: int, classes: int, height: int,
            width: int) -> dict[str, Any]:
    """Build ``network`` as a model of ``task`` (its name) for this input and
    summarise it: {"ok": true, "summary": {...}} or {"ok": false, "error": "..."}."""
    request = {"network": network, "task": task, "channels": channels, "classes": classes, "height": height,
               "width": width, "max_params": settings.INSPECT_MAX_PARAMS}
    try:
        done = _run(["-m", "trainer.networks.inspect"], json.dumps(request))
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"Building the network took more than {settings.INSPECT_TIMEOUT_SECONDS} s."}
    except Busy as exc:
        return {"ok": False, "error": str(exc), "busy": True}
    if _out_of_memory(done):
        return {"ok": False, "error": "The network needs more memory than Visualize may use (INSPECT_MEMORY_BYTES); "
                                      "its layers or activations are too large for this image size."}
    try:
        answer = json.loads(done.stdout)
    except ValueError:
        return {"ok": False, "error": f"The network could not be inspected:\n{(done.stderr or done.stdout)[-2000:]}"}
    if not isinstance(answer, dict) or "ok" not in answer:
        return {"ok": False, "error": "The network inspector gave an unexpected answer."}
    return answer
