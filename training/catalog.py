"""What the trainer offers to the New model form, and the two answers that
need a network built: its editor text (Customize) and its layer table
(Visualize).

The lists come from ``trainer.catalog``, which imports no torch. Building a
network does, and the web process never loads torch (it would cost every web
process seconds and hundreds of megabytes), so those two run in a short child
process with a time limit.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict
from functools import lru_cache
from typing import Any

from django.conf import settings

from trainer.catalog import NETWORKS, SOLVERS, uses_momentum

TIMEOUT_SECONDS = 60

CUSTOMIZE_CODE = """
import json, sys
from trainer.networks import customize
print(json.dumps(customize(sys.argv[1])))
"""


class CatalogError(RuntimeError):
    """The trainer could not answer (a broken installation)."""


def _run(args: list[str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], input=stdin, capture_output=True, text=True,
                          timeout=TIMEOUT_SECONDS, cwd=settings.BASE_DIR, check=False)


def networks() -> dict[str, dict[str, Any]]:
    """{name: {name, label, paper_url, input_size, summary}} in the trainer's order."""
    return {name: {**asdict(info), "input_size": list(info.input_size)} for name, info in NETWORKS.items()}


def solvers() -> dict[str, dict[str, Any]]:
    """{name: {name, label, momentum}} in the trainer's order."""
    return {name: {"name": name, "label": label, "momentum": uses_momentum(name)} for name, label in SOLVERS}


@lru_cache(maxsize=len(NETWORKS))
def customize(name: str) -> dict[str, str]:
    """{"source": "layers"|"python", "text"}: the editable text of standard network ``name``."""
    try:
        done = _run(["-c", CUSTOMIZE_CODE, name])
    except subprocess.TimeoutExpired:
        raise CatalogError(f"Reading the network's code took more than {TIMEOUT_SECONDS} s.") from None
    if done.returncode != 0:
        raise CatalogError(f"Reading the network's code failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def inspect(network: dict[str, Any], channels: int, classes: int, height: int, width: int) -> dict[str, Any]:
    """Build ``network`` for this input and summarise it: {"ok": true, "summary": {...}}
    or {"ok": false, "error": "..."}."""
    request = {"network": network, "channels": channels, "classes": classes, "height": height, "width": width}
    try:
        done = _run(["-m", "trainer.networks.inspect"], json.dumps(request))
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"Building the network took more than {TIMEOUT_SECONDS} s."}
    try:
        answer = json.loads(done.stdout)
    except ValueError:
        return {"ok": False, "error": f"The network could not be inspected:\n{(done.stderr or done.stdout)[-2000:]}"}
    if not isinstance(answer, dict) or "ok" not in answer:
        return {"ok": False, "error": "The network inspector gave an unexpected answer."}
    return answer
