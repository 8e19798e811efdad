"""A training job's settings as its page shows them: grouped like the New
model form, in words, with no server path (``JobKind.settings`` and
``JobKind.public_params``)."""

from __future__ import annotations

import json
from typing import Any

from jobs.kinds import SettingsGroup, without
from jobs.models import Job
from trainer import catalog, jobfiles, lr_policy
from trainer.tasks.base import RUN_OPTIONS

# The dataset's folder is the server's business; an earlier snapshot is shown
# as its job and file.
public_params = without(jobfiles.DATASET_DIR_PARAM)


def _text(value: Any) -> str:
    if value is None or value == "" or value == []:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def _network(params: dict[str, Any]) -> str:
    network = params.get("network") or {}
    source = network.get("source")
    if source == "standard":
        entry = catalog.NETWORKS.get(str(network.get("name")))
        text = entry.label if entry else str(network.get("name"))
    else:
        text = {"layers": "a layer list", "python": "Python code"}.get(source, str(source))
    pretrained = params.get("pretrained") or {}
    if pretrained.get("job"):
        mode = "continued" if pretrained.get("mode") == "continue" else "fine-tuned"
        snapshot = str(pretrained.get("path", "")).rsplit("/", 1)[-1]  # the file name alone
        text += f", {mode} from job #{pretrained['job']} ({snapshot})"
    return text


def _learning_rate(params: dict[str, Any]) -> list[tuple[str, str]]:
    policy = params.get("lr_policy") or {}
    name = policy.get("name")
    found = next(((label, used) for known, label, used in lr_policy.POLICIES if known == name), None)
    rows = [("Learning rate", _text(params.get("lr"))), ("Policy", found[0] if found else _text(name))]
    rows += [(lr_policy.PARAM_LABELS.get(key, key), _text(policy.get(key))) for key in (found[1] if found else [])]
    rows.append(("Linear scaling rule", _text(params.get("scale_lr"))))
    return rows


def _dataset(dataset_id: Any) -> str:
    name = Job.objects.filter(pk=dataset_id).values_list("name", flat=True).first() if isinstance(dataset_id, int) else None
    return f"{name} (#{dataset_id})" if name else f"#{dataset_id} (deleted)"


def settings_table(job: Job) -> list[SettingsGroup]:
    p = job.params
    solver = p.get("solver")
    devices = f"{job.resources.get('count', 1)} {str(job.resources.get('device', 'cpu')).upper()}"
    return [
        ("Data", [("Dataset", _dataset(p.get("dataset"))), ("Epochs", _text(p.get("epochs"))),
                  ("Validation every (epochs)", _text(p.get("val_interval"))),
                  *[(option.label, _text(p[name])) for name, option in RUN_OPTIONS.items() if name in p],
                  ("Snapshot every (epochs)", _text(p.get("snapshot_interval"))),
                  ("Snapshots kept", f"the last {p['keep_snapshots']} and the best" if p.get("keep_snapshots") else "all"),
                  ("Seed", _text(p.get("seed"))),
                  ("Batch size", _text(p.get("batch_size"))), ("Batch accumulation", _text(p.get("batch_accumulation"))),
                  ("Batch-size schedule", _text(p.get("batch_schedule"))), ("Mean subtraction", _text(p.get("mean"))),
                  ("Crop", _text(p.get("crop")))]),
        ("Network", [("Network", _network(p))]),
        ("Solver", [("Solver", dict(catalog.SOLVERS).get(str(solver), _text(solver))),
                    ("Momentum", _text(p.get("momentum")) if catalog.uses_momentum(str(solver)) else "— (not used)"),
                    ("Weight decay", _text(p.get("weight_decay"))), ("Label smoothing", _text(p.get("label_smoothing"))),
                    ("BatchNorm biases: rate (× base)", _text(p.get("norm_bias_lr_scale"))),
                    ("BatchNorm biases: weight decay", _text(p.get("norm_bias_weight_decay"))),
                    ("Average of the weights", _text(p.get("averaging"))),
                    ("Whitening bias trained for (epochs)", _text(p.get("whiten_bias_epochs")))]),
        ("Learning rate", _learning_rate(p)),
        ("Augmentation", [(label, _text(p.get(key))) for key, label in (
            ("translate", "Translation (pixels)"), ("flip", "Flips"), ("rotation", "Rotation (degrees)"),
            ("scale", "Scale"), ("noise", "Noise"), ("color_jitter", "Colour jitter"),
            ("tta", "Test-time augmentation"))]),
        ("Precision & devices", [("Precision", _text(p.get("precision"))), ("Channels-last", _text(p.get("channels_last"))),
                                 ("torch.compile", _text(p.get("compile"))),
                                 ("Devices", devices)]),
        ("Stopping", [("Early stopping", _text(p.get("early_stopping")))]),
    ]
