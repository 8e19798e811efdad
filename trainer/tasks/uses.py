"""What the web can do with a trained model, by name: the words a task's
``model_uses`` is written in (``base.Task``) and the web features ask with
(``training.modeljobs.offers``).

The names are defined here, once, and imported by both sides, rather than
next to each feature: a task is registered in ``trainer/``, which imports
neither Django nor the web apps (job processes read the registration too),
so it cannot import a constant from ``inference/`` or ``pretrained/``; and
uses written as loose strings would let a misspelt one silently offer
nothing. A task that names a use not listed here is refused when it is
made, so at import (``Task.__post_init__``), and asking about one raises
(``check``)."""

CLASSIFY = "classify"  # Classify one: a model's answer for one image (inference/classify/)
DETECT = "detect"  # Detect one: a detector's boxes on one image (inference/detect/)
SEGMENT = "segment"  # Segment one: a segmenter's class for each pixel of one image (inference/segment/)
EVALUATE = "evaluate"  # the evaluation job: Evaluate, Classify many, Compare (inference/evaluate/)
EXPORT = "export"  # a model archive that runs without this app (inference/export/)
PRETRAINED = "pretrained"  # a new model started from its weights: Make pretrained model, Previous network

# As users read them: "<label> is not available for <task label> models."
LABELS: dict[str, str] = {
    CLASSIFY: "Classify",
    DETECT: "Detect",
    SEGMENT: "Segment",
    EVALUATE: "Evaluate",
    EXPORT: "Export",
    PRETRAINED: "Starting a new model from its weights",
}
USES = frozenset(LABELS)


def check(use: str) -> str:
    """``use`` when it is one of the uses; ValueError naming them otherwise,
    so that a misspelt question fails rather than answers no."""
    if use not in USES:
        raise ValueError(f"There is no use “{use}”: the uses are {', '.join(sorted(USES))}.")
    return use


def not_offered(use: str, task_label: str) -> str:
    """The sentence that refuses ``use`` for a model of the task labelled ``task_label``."""
    return f"{LABELS[check(use)]} is not available for {task_label} models."
