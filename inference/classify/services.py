"""Classify one: a model's answer for one image, from the warm model server
(``trainer.modelserver``, reached through the torch-free
``trainer.modelclient``): the top five classes, the input as the network
saw it and the time it took; with ``visualize`` every layer and a saliency
map; with a ``class`` or a ``layer`` the saliency map of that class, computed
at that convolution.

Refusals are ``Refused`` with the HTTP status they mean: 400 with field
messages for bad input and for a model whose task does not offer Classify
(``training.modeljobs.unavailable``), 403 for a network of code the user
may not run (``jobs.permissions.network_refusal``), 404 for a model or
snapshot that is gone, 429 for a user with ``CLASSIFY_IN_FLIGHT_PER_USER``
requests in flight already, Classify one's and Detect one's together
(``inference.oneimage``), 503 when no model server answers."""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User

from jobs import bus
from jobs.models import Job
from jobs.permissions import network_refusal
from trainer import modelclient
from trainer.tasks.uses import CLASSIFY

from .. import oneimage
from ..oneimage import asked, image_field, slot

CLASSIFY_SECONDS = 30
VISUALIZE_SECONDS = 120  # every layer's pictures of a large network, on a busy CPU
PNG_URL = "data:image/png;base64,"
LAYER_MESSAGE = "The network has no convolution named"  # ``trainer.inference.gradcam.grad_cam``


def _field(message: str, source: str) -> str:
    """The field a bad-input message of the model server is about."""
    return image_field(message, source) or ("layer" if message.startswith(LAYER_MESSAGE) else "model")


def _ask(model: Job, image: bytes, operation: str, snapshot: str | None, class_index: int | None,
         layer: str | None, source: str) -> dict[str, Any]:
    timeout = VISUALIZE_SECONDS if operation != "classify" else CLASSIFY_SECONDS
    return asked(lambda: modelclient.classify(bus.client(), settings.REDIS_PREFIX, model.pk, image, operation=operation,
                                              snapshot=snapshot, class_index=class_index, layer=layer, timeout=timeout),
                 lambda message: _field(message, source))


def problem(model: Job) -> str:
    """Why the model cannot classify now, for the user; "" when it can."""
    return oneimage.problem(model, CLASSIFY, "classify")


def refusal(user: User, model: Job) -> str:
    """Why ``user`` may not classify with the model (its network is code the
    model server would run for them), or ''."""
    return network_refusal(user, model, "classify with it")


def _picture(encoded: str | None) -> str | None:
    return PNG_URL + encoded if encoded else None


def _layer(layer: dict[str, Any]) -> dict[str, Any]:
    weights = layer["weights"]
    if weights is not None:
        weights = {**weights, "filters": _picture(weights.get("filters"))}
    return {**layer, "activations": _picture(layer["activations"]), "weights": weights}


def _saliency(found: dict[str, Any]) -> dict[str, Any]:
    saliency = found["saliency"]
    return {"index": saliency["index"], "class": saliency["class"], "peak": saliency["peak"],
            "image": _picture(saliency["png"]), "layer": saliency["layer"], "size": saliency["size"],
            "layers": saliency["layers"]}


def classify(user: User, model: Job, image: bytes, *, source: str = "image", snapshot: str = "",
             visualize: bool = False, class_index: int | None = None, layer: str = "") -> dict[str, Any]:
    """The answer for ``user`` about ``image`` (the file's bytes; ``source``
    names the field it came from, for messages). See the module's docstring."""
    oneimage.check(model, snapshot, problem(model), refusal(user, model))
    with slot(user, "classified"):
        return _answer(model, image, source, snapshot, visualize, class_index, layer)


def _answer(model: Job, image: bytes, source: str, snapshot: str, visualize: bool,
            class_index: int | None, layer: str) -> dict[str, Any]:
    started = time.perf_counter()
    operation = "inspect" if visualize else "saliency" if class_index is not None or layer else "classify"
    found = _ask(model, image, operation, snapshot or None, class_index, layer or None, source)
    answer = {"model": model.pk, "snapshot": found["snapshot"], "note": found["note"] or "",
              "top": found["top"], "seen": _picture(found["seen"]), "loaded_now": found["loaded_now"],
              "seconds": found["seconds"]}
    if visualize:
        inside = found["inspect"]
        answer.update(layers=[_layer(layer) for layer in inside["layers"]], params=inside["params"],
                      trainable=inside["trainable"])
        found = _ask(model, image, "saliency", snapshot or None, class_index, layer or None, source)
        answer["seconds"] += found["seconds"]
    if "saliency" in found:
        answer["saliency"] = _saliency(found)
    answer["total_seconds"] = time.perf_counter() - started
    return answer
