"""Segment one: the class a segmentation model gives each pixel of one
image, from the warm model server (``trainer.modelserver``, reached through
the torch-free ``trainer.modelclient``), as a mask of the image's own size,
with the pixels of each class and the time it took.

Refusals are ``inference.oneimage.Refused`` with the HTTP status they mean,
as Detect one's (400, 403, 404, 429 with Classify one's and Detect one's
requests counted together, 503)."""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User

from datasets import services as dataset_services
from jobs import bus
from jobs.models import Job
from jobs.permissions import network_refusal
from trainer import modelclient
from trainer.tasks.uses import SEGMENT

from .. import oneimage, trained
from ..oneimage import asked, image_field, slot

SEGMENT_SECONDS = 60


def problem(model: Job) -> str:
    """Why the model cannot segment now, for the user; "" when it can."""
    return oneimage.problem(model, SEGMENT, "segment")


def refusal(user: User, model: Job) -> str:
    """Why ``user`` may not segment with the model (its network is code the
    model server would run for them), or ''."""
    return network_refusal(user, model, "segment with it")


def colours(model: Job) -> list[str]:
    """Each of the model's classes' colour as its dataset's pages draw it
    (``datasets.services.class_colours``)."""
    return dataset_services.class_colours(trained.manifest(model))


def segment(user: User, model: Job, image: bytes, *, source: str = "image", snapshot: str = "") -> dict[str, Any]:
    """The classes for ``user`` of the pixels of ``image`` (the file's
    bytes; ``source`` names the field it came from, for messages):
    ``model``, ``snapshot``, ``note``, the image's ``width`` and ``height``,
    ``mask`` (a base64 grayscale PNG of class indices, 255 where the network
    saw no pixel), ``classes`` (``index``, ``class``, ``pixels``, most first),
    ``loaded_now``, ``seconds`` and ``total_seconds``."""
    oneimage.check(model, snapshot, problem(model), refusal(user, model))
    with slot(user, "segmented"):
        started = time.perf_counter()
        found = asked(lambda: modelclient.segment(bus.client(), settings.REDIS_PREFIX, model.pk, image,
                                                  snapshot=snapshot or None, timeout=SEGMENT_SECONDS),
                      lambda message: image_field(message, source) or "model")
        return {"model": model.pk, "snapshot": found["snapshot"], "note": found["note"] or "",
                "width": found["width"], "height": found["height"], "mask": found["mask"],
                "classes": found["classes"], "loaded_now": found["loaded_now"], "seconds": found["seconds"],
                "total_seconds": time.perf_counter() - started}
