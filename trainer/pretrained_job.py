"""Make a pretrained model: ``python -m trainer.pretrained_job config.json``.

Config ``source``: ``{"type": "snapshot", "model_dir", "snapshot"}`` (a
trained model's snapshot, its network and classes as they are) or
``{"type": "upload", "network"}`` (``upload/weights`` in the job folder: a
model archive, which names its own network, or a state dict for the
standard network ``network``), and
``may_run_code``: whether the owner may run a network written in Python
(an archive may name one, and building it runs its code).

Uploads are read with ``weights_only=True`` and loaded exactly into their
network by ``trainer.pretrained``: a mismatch is an ``error`` event with
the message. The result goes to ``pretrained/`` in the job folder
(``weights.pt``, the checkpoint a training job's ``pretrained`` option
reads, and ``info.json``), built as ``pretrained.partial/`` and renamed
into place.
"""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path
from typing import Any

from trainer import eventkinds, eventlog
from trainer.buildfolder import building
from trainer.inference.errors import InferenceError
from trainer.inference.model import load_model
from trainer.jobfiles import PRETRAINED, PRETRAINED_INFO, PRETRAINED_WEIGHTS
from trainer.jobmain import failed, finished, job_config
from trainer.pretrained import Pretrained, import_pretrained


def from_snapshot(source: dict[str, Any]) -> Pretrained:
    loaded = load_model(source["model_dir"], source.get("snapshot") or None, "cpu")
    weights = {key: value.detach().cpu().clone() for key, value in loaded.model.state_dict().items()}
    return Pretrained(loaded.network, weights, loaded.classes, loaded.channels, loaded.input_size)


def archive_network(path: Path) -> dict[str, Any] | None:
    """The network a model archive's ``info.json`` names, or None for any other file."""
    try:
        with zipfile.ZipFile(path) as archive:
            return json.loads(archive.read("info.json")).get("network")
    except (KeyError, ValueError, AttributeError, zipfile.BadZipFile, OSError):
        return None


def from_upload(path: Path, source: dict[str, Any], may_run_code: bool) -> Pretrained:
    if not path.is_file():
        raise InferenceError("The uploaded file is gone.")
    network = archive_network(path)
    if isinstance(network, dict) and network.get("source") == "python" and not may_run_code:
        raise InferenceError("The archive's network is written in Python, and building it runs its code: only "
                             "users allowed to run code may use it.")
    return import_pretrained(path, source.get("network") or None)


def info(pretrained: Pretrained, source: dict[str, Any]) -> dict[str, Any]:
    parameters = sum(tensor.numel() for key, tensor in pretrained.weights.items() if tensor.is_floating_point())
    return {"network": pretrained.network, "classes": pretrained.classes, "channels": pretrained.channels,
            "input_size": list(pretrained.input_size), "parameters": parameters, "source": source["type"]}


def make(config: dict[str, Any], job_dir: Path, work: Path) -> dict[str, Any]:
    source = config["source"]
    print("reading the weights…", flush=True)
    eventlog.append(job_dir, eventkinds.PROGRESS, {"progress": 0.1, "stage": "Reading the weights"})
    if source["type"] == "snapshot":
        pretrained = from_snapshot(source)
    else:
        pretrained = from_upload(Path(source["path"]), source, bool(config.get("may_run_code")))
    described = info(pretrained, source)
    pretrained.save(work / Path(PRETRAINED_WEIGHTS).name)
    (work / Path(PRETRAINED_INFO).name).write_text(json.dumps(described, indent=1, ensure_ascii=False))
    return described


def main(config_path: str) -> int:
    job_dir, config = job_config(config_path)
    try:
        with building(job_dir / PRETRAINED) as work:
            described = make(config, job_dir, work)
    except InferenceError as exc:
        return failed(job_dir, str(exc))
    network = described["network"]
    summary = {"network": network.get("name") or network.get("source"), "classes": len(described["classes"]),
               "channels": described["channels"], "input_size": described["input_size"],
               "parameters": described["parameters"]}
    return finished(job_dir, summary, str(summary))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
