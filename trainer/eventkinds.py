"""The event vocabulary of a job: the kinds of event the trainer, the
worker and the web app write to ``events.jsonl`` and their fields, defined
once for the trainer, the web app, the page scripts and the tests. The
chart series a run's events carry are each task's (``trainer.tasks``).

Every event's ``data`` is an object; the metric events carry ``step`` (the
batches done since the start) and ``epoch`` (a float: epochs done so far).
This module imports neither torch nor Django.
"""

from __future__ import annotations

from typing import Any

# Written by the trainer.
NETWORK = "network"    # {summary, input, classes}: once, at the start
TRAIN = "train"        # {step, epoch, loss, lr, batch_size, images_per_s, data_wait[, components]}
PROGRESS = "progress"  # {progress (0..1), epoch, loss}
PERF = "perf"          # see perf(); the warm-up's batches are left out of it
HARDWARE = "hardware"  # {gpus, cpu_percent, rss_bytes, threads}
PROFILE = "profile"    # {file, steps, top}
VAL = "val"            # {step, epoch, loss, <the task's metrics>}: e.g. top1, top5
LAYERS = "layers"      # {step, epoch, filters, filters_together, layers}: images of the first layer, scaled each or together
BEST = "best"          # {epoch, step, metric, value, file}
SNAPSHOT = "snapshot"  # {step, epoch, file, best, metrics, removed}
RESUME = "resume"      # {step, epoch}: the run restarted from a checkpoint taken at this step
RESULT = "result"      # see result()
ERROR = "error"        # {message}
# Written by the dataset build.
WARNING = "warning"    # {message}: a part of the source it could not use
# Written by the worker and the web app about any job.
STATUS = "status"      # {status, message, progress, transition}: the job moved to a new status
LOG = "log"            # {lines}: the process's new output lines
SILENCE = "silence"    # {since, limit_seconds}: the process stopped responding (since: None when it speaks again)
ABORT = "abort"        # {by}: a user asked for the job to stop
RESTART = "restart"    # {by}: a user had the silent job killed and queued again
QUEUE = "queue"        # {by, priority, message}: a user changed the job's priority or place in the queue
DEPENDENCY_DELETED = "dependency_deleted"  # {id, label, name, by, message}: a job this one used was deleted

# Kinds of which only the newest event matters.
LATEST = (NETWORK, LAYERS, PERF, PROFILE)


# The field of a ``train`` event holding the loss's parts.
COMPONENTS = "components"


def train(step: int, epoch: float, loss: float, lr: float, batch_size: int, images_per_s: float,
          data_wait: float, components: dict[str, float] | None = None) -> dict[str, Any]:
    """``components``: the parts of the loss by name (a task whose loss has
    them, e.g. a detector's), their means over the same steps; the field is
    absent otherwise, as in the events of runs from before it."""
    event = {"step": step, "epoch": epoch, "loss": loss, "lr": lr, "batch_size": batch_size,
             "images_per_s": images_per_s, "data_wait": data_wait}
    if components:
        event[COMPONENTS] = components
    return event


def val(step: int, epoch: float, metrics: dict[str, float]) -> dict[str, Any]:
    """``metrics``: the loss and the task's metrics (``trainer.tasks``), by field."""
    return {"step": step, "epoch": epoch, **metrics}


def snapshot(step: int, epoch: float, file: str, best: bool, metrics: dict[str, Any],
             removed: list[str] | None = None) -> dict[str, Any]:
    """``removed``: the older snapshot files deleted to keep only the last few."""
    return {"step": step, "epoch": epoch, "file": file, "best": best, "metrics": metrics, "removed": removed or []}


def resume(step: int, epoch: float) -> dict[str, Any]:
    return {"step": step, "epoch": epoch}


def perf(images_per_s: float, data_wait: float, step_ms: float, flops_per_image: float, mfu: float | None,
         device: str, warmup_seconds: float) -> dict[str, Any]:
    """Throughput after the warm-up (``warmup_seconds``: the time its batches took)."""
    return {"images_per_s": images_per_s, "data_wait": data_wait, "step_ms": step_ms,
            "flops_per_image": flops_per_image, "mfu": mfu, "device": device, "warmup_seconds": warmup_seconds}


def result(best: dict[str, Any] | None, final: dict[str, float], epochs: float, train_seconds: float,
           warmup_seconds: float, images_per_s: float, stopped_early: bool,
           per_class: dict[str, list[dict[str, Any]]] | None = None) -> dict[str, Any]:
    """The run's outcome; ``train_seconds`` and ``images_per_s`` leave the
    warm-up out; ``per_class``, for a task that names ``class_metrics``, each
    split's rows of its classes' scores ({split: [{"class", <field>…}]})."""
    return {"best": best, "final": final, "epochs": epochs, "train_seconds": train_seconds,
            "warmup_seconds": warmup_seconds, "images_per_s": images_per_s, "stopped_early": stopped_early,
            "per_class": per_class or {}}
