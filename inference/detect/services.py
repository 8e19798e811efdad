"""Detect one: the boxes a detection model finds in one image, from the
warm model server (``trainer.modelserver``, reached through the torch-free
``trainer.modelclient``), in the image's own pixels, with the image's size
and the time it took.

Refusals are ``inference.oneimage.Refused`` with the HTTP status they mean,
as Classify one's: 400 with field messages for bad input and for a model
whose task does not offer Detect (``training.modeljobs.unavailable``), 403
for a network of code the user may not run, 404 for a model or snapshot
that is gone, 429 for a user with ``CLASSIFY_IN_FLIGHT_PER_USER`` requests
in flight already (Classify one's and Detect one's together), 503 when no
model server answers."""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User

from jobs import bus
from jobs.models import Job
from jobs.permissions import network_refusal
from trainer import modelclient
from trainer.tasks.uses import DETECT

from .. import oneimage
from ..oneimage import asked, image_field, slot

DETECT_SECONDS = 60  # a detector on a busy CPU is slower than a classifier


def problem(model: Job) -> str:
    """Why the model cannot detect now, for the user; "" when it can."""
    return oneimage.problem(model, DETECT, "detect")


def refusal(user: User, model: Job) -> str:
    """Why ``user`` may not detect with the model (its network is code the
    model server would run for them), or ''."""
    return network_refusal(user, model, "detect with it")


def detect(user: User, model: Job, image: bytes, *, source: str = "image", snapshot: str = "") -> dict[str, Any]:
    """The boxes for ``user`` in ``image`` (the file's bytes; ``source``
    names the field it came from, for messages): ``model``, ``snapshot``,
    ``note``, the image's ``width`` and ``height``, ``boxes`` (best first:
    ``index``, ``class``, ``score``, ``x1``, ``y1``, ``x2``, ``y2``),
    ``loaded_now``, ``seconds`` and ``total_seconds``; an instance
    segmentation model's each box's ``pixels`` and ``instances`` (its
    objects' masks, ``trainer.inference.detect``)."""
    oneimage.check(model, snapshot, problem(model), refusal(user, model))
    with slot(user, "searched for objects"):
        started = time.perf_counter()
        found = asked(lambda: modelclient.detect(bus.client(), settings.REDIS_PREFIX, model.pk, image,
                                                 snapshot=snapshot or None, timeout=DETECT_SECONDS),
                      lambda message: image_field(message, source) or "model")
        return {"model": model.pk, "snapshot": found["snapshot"], "note": found["note"] or "",
                "width": found["width"], "height": found["height"], "boxes": found["boxes"],
                **({"instances": found["instances"]} if "instances" in found else {}),
                "loaded_now": found["loaded_now"], "seconds": found["seconds"],
                "total_seconds": time.perf_counter() - started}
