"""What Classify one, Detect one and Segment one share: the form of their
one image (an upload, one of the model's dataset's images by split and
position, or a path below ``DATASET_ROOTS``; the snapshot), their API view
(``answered``), the cap on a user's requests in flight to the one model
server they ask, and the model server's refusals as ``Refused`` with the
HTTP status each means.

The form only reads the image's bytes: decoding is the model server's job
(with the decompression-bomb limit), so a file that is not an image comes
back from there as a message for the field that gave it. Messages never
name a server path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth.models import User
from django.http import HttpRequest, JsonResponse

from datasets import services as dataset_services
from jobs.models import Job
from trainer import jobfiles, modelclient
from trainer.datastore import png_bytes
from training.modeljobs import unavailable
from web.api import BadRequest, error, json_body
from web.serverfolders import OutsideRoots, allowed
from web.userslots import Slot, Slots

from . import trained

MAX_IMAGE_BYTES = 10 * 2**20
SOURCES = ("image", "index", "path")  # the fields an image may come from
# How the model server's messages about the image itself begin
# (``trainer.inference.preprocess``); its other refusals are about the model.
IMAGE_MESSAGES = ("The image", "The file")
# When a user refused for having too many requests in flight may try again:
# about the time the model server takes to answer one.
RETRY_AFTER_SECONDS = 2

# Classify one's, Detect one's and Segment one's requests together: the model server answers
# one at a time, and one user's loop of either would keep everyone waiting.
_in_flight = Slots()


class Refused(Exception):
    """``errors`` maps fields to messages (a 400); otherwise ``str(exc)`` is
    the message; ``retry_after``: seconds after which to try again."""

    def __init__(self, message: str, status: int, errors: dict[str, list[str]] | None = None,
                 retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status, self.errors, self.retry_after = status, errors, retry_after

    def answer(self) -> JsonResponse:
        """The API's answer: ``BadRequest`` (raised) for field messages, else the error with its status."""
        if self.errors:
            raise BadRequest(self.errors) from None
        refused = error(str(self), self.status)
        if self.retry_after is not None:
            refused["Retry-After"] = str(self.retry_after)
        return refused


def problem(model: Job, use: str, verb: str) -> str:
    """Why the model cannot be used for ``use`` (``verb``, e.g. "classify") now, for the user; "" when it can."""
    if reason := unavailable(model, use):
        return reason
    if not (model.folder / jobfiles.CONFIG).is_file():
        return f"The model has not started training yet: it has no snapshot to {verb} with."
    if not trained.snapshots(model):
        return f"The model has no snapshot yet: {verb} with it once it has saved one."
    try:
        trained.classes(model)
    except trained.Unusable as exc:
        return str(exc)
    return ""


def check(model: Job, snapshot: str, problem: str, refusal: str) -> None:
    """The web's own look at the model (no torch) before asking the model
    server: ``Refused`` for its ``problem`` (400), the user's ``refusal``
    (403, see ``jobs.permissions.network_refusal``) or a snapshot it lacks (404)."""
    if problem:
        raise Refused(problem, 400, {"model": [problem]})
    if refusal:
        raise Refused(refusal, 403)
    if snapshot and snapshot not in (jobfiles.BEST, jobfiles.LAST) and snapshot not in (names := trained.snapshots(model)):
        raise Refused(f"The model has no snapshot {snapshot!r}; it has {', '.join(names)}.", 404)


def slot(user: User, doing: str) -> Slot:
    """One of ``user``'s ``CLASSIFY_IN_FLIGHT_PER_USER`` requests in flight,
    or ``Refused`` (429) saying that they have as many images ``doing``."""
    taken = _in_flight.take(user.pk, settings.CLASSIFY_IN_FLIGHT_PER_USER)
    if taken is None:
        raise Refused(f"{user.username} has {settings.CLASSIFY_IN_FLIGHT_PER_USER} images being {doing}, the most "
                      "a user may at once; try again when one is answered.", 429, retry_after=RETRY_AFTER_SECONDS)
    return taken


def image_field(message: str, source: str) -> str | None:
    """``source`` when a bad-input message of the model server is about the image, else None."""
    return source if message.startswith(IMAGE_MESSAGES) else None


def asked(ask: Callable[[], dict[str, Any]], field: Callable[[str], str]) -> dict[str, Any]:
    """The model server's answer to ``ask()``, or ``Refused``: 503 when no
    server answers or a job holds its GPU, 404 for a model or snapshot that
    is gone, 400 for bad input with the message under ``field(message)``."""
    try:
        return ask()
    except modelclient.ModelServerUnavailable as exc:
        raise Refused(str(exc), 503) from None
    except modelclient.ModelServerError as exc:
        if exc.code == "not_found":
            raise Refused(str(exc), 404) from None
        if exc.code == "busy":
            raise Refused(str(exc), 503) from None
        if exc.code == "bad_input":
            raise Refused(str(exc), 400, {field(str(exc)): [str(exc)]}) from None
        raise Refused(str(exc), 500) from None


class OneImageForm(forms.Form):
    """The image and the snapshot; ``clean`` adds ``source`` (the field the
    image came from) and ``image_bytes``."""

    text_fields: tuple[str, ...] = ("snapshot", "split", "path")

    image = forms.FileField(required=False, help_text="An image file to upload.")
    split = forms.ChoiceField(choices=[(s, s) for s in dataset_services.SPLITS], required=False,
                              help_text="With index: an image of the model's dataset.")
    index = forms.IntegerField(min_value=0, required=False, help_text="The image's position in the split.")
    path = forms.CharField(required=False, max_length=4096, help_text="An image file on the server.")
    snapshot = forms.CharField(required=False, max_length=200, help_text="Empty: the best one.")

    def __init__(self, model: Job, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.model = model

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        for name in self.text_fields:
            if self.data.get(name) is not None and not isinstance(self.data.get(name), str):
                self.add_error(name, "Give text.")
        if self.errors:
            return data
        given = [name for name in SOURCES if data.get(name) not in (None, "")]
        if len(given) != 1:
            self.add_error(None, "Give one image: upload one, pick one of the dataset's, or name a file on the server.")
            return data
        data["source"] = given[0]
        data["image_bytes"] = {"image": self._uploaded, "index": self._from_dataset, "path": self._from_server}[given[0]](data)
        return data

    def _uploaded(self, data: dict[str, Any]) -> bytes | None:
        upload = data["image"]
        if upload.size > MAX_IMAGE_BYTES:
            self.add_error("image", f"The image is larger than {MAX_IMAGE_BYTES // 2**20} MiB.")
            return None
        return b"".join(upload.chunks())

    def _from_dataset(self, data: dict[str, Any]) -> bytes | None:
        dataset = trained.dataset(self.model)
        manifest = dataset_services.manifest(dataset) if dataset else None
        if manifest is None:
            self.add_error("index", "The model's dataset is gone.")
            return None
        split = data.get("split") or "val"
        count = int(((manifest.get("splits") or {}).get(split) or {}).get("count") or 0)
        if data["index"] >= count:
            self.add_error("index", f"The dataset's {split} split has {count} image(s).")
            return None
        return png_bytes(dataset_services.reader(dataset, split, manifest).image(data["index"]))

    def _from_server(self, data: dict[str, Any]) -> bytes | None:
        try:
            path = allowed(data["path"].strip())
        except (OutsideRoots, OSError, ValueError):
            self.add_error("path", "The path is not below the folders this server may read images from.")
            return None
        if not path.is_file():
            self.add_error("path", "There is no file at this path.")
            return None
        if path.stat().st_size > MAX_IMAGE_BYTES:
            self.add_error("path", f"The image is larger than {MAX_IMAGE_BYTES // 2**20} MiB.")
            return None
        return Path(path).read_bytes()


def answered(request: HttpRequest, model_id: int, use: str, form_class: type[OneImageForm],
             answer: Callable[[User, Job, dict[str, Any]], dict[str, Any]]) -> JsonResponse:
    """An API view's answer for one image: the model refused ``use`` before
    the form reads an image for nothing, the form's errors as a 400, else
    ``answer(user, model, cleaned_data)``, or the refusal it raised."""
    model = trained.model_or_404(model_id)
    if reason := unavailable(model, use):
        raise BadRequest({"model": [reason]})
    if request.content_type == "application/json":
        form = form_class(model, json_body(request))
    else:
        form = form_class(model, request.POST, request.FILES)
    if not form.is_valid():
        raise BadRequest(form.errors.get_json_data())
    try:
        return JsonResponse(answer(request.user, model, form.cleaned_data))
    except Refused as exc:
        return exc.answer()
