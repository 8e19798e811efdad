"""Asking the model server (``trainer.modelserver``) to classify, look
inside, detect objects in or segment an image, from the web process: no torch here,
only Redis.

A request goes on the list ``<prefix>:modelserver:requests`` as JSON with
its own reply key; the server pushes the answer there. Images travel as
base64 (``image`` in a request; every PNG in an answer). The server keeps
``<prefix>:modelserver:alive`` set while it runs, so a missing server is
reported at once rather than after the timeout.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from typing import Any

import redis

REPLY_SECONDS = 60  # how long an answer waits for a client that gave up
OPERATIONS = ("classify", "inspect", "saliency", "detect", "segment")
CLASSIFYING = ("classify", "inspect", "saliency")  # the operations ``classify`` asks for


class ModelServerUnavailable(Exception):
    """No model server answered; ``str(exc)`` says so for the user."""


class ModelServerError(Exception):
    """The server answered with an error. ``code`` is ``not_found`` (the
    model, snapshot or job is gone: HTTP 404), ``bad_input`` (400), ``busy``
    (a job holds the server's GPU: 503) or ``failed`` (500); ``str(exc)`` is
    the message for the user."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


WAIT_SLICE_SECONDS = 1.0


def requests_key(prefix: str) -> str:
    return f"{prefix}:modelserver:requests"


def alive_key(prefix: str) -> str:
    return f"{prefix}:modelserver:alive"


def _wait(client: redis.Redis, key: str, timeout: float) -> Any:
    """The reply, or None after ``timeout`` seconds. Waited for in slices of
    WAIT_SLICE_SECONDS: one blocking read longer than the client's socket
    timeout would end in a socket error instead of a reply."""
    deadline = time.monotonic() + timeout
    while (remaining := deadline - time.monotonic()) > 0:
        popped = client.brpop([key], timeout=min(WAIT_SLICE_SECONDS, max(remaining, 0.01)))
        if popped is not None:
            return popped
    return None


# The request goes on the list only while the alive key is there, checked and
# pushed in one trip to Redis: a script, so that no request is left on the
# list of a server that is not running. Without one, the script answers the
# request itself (``ABSENT`` on its reply key), so that the wait for the
# answer can go in the same trip: it returns at once either way.
_SEND_IF_ALIVE = """
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('LPUSH', KEYS[3], ARGV[2])
  redis.call('EXPIRE', KEYS[3], ARGV[3])
  return 0
end
redis.call('LPUSH', KEYS[2], ARGV[1])
return 1
"""
ABSENT = "absent"


def _sent_and_first_wait(client: redis.Redis, prefix: str, request: dict[str, Any], timeout: float) -> tuple[bool, Any]:
    """Whether ``request`` went on the list (False: no model server runs) and
    the reply, if it came within the first of ``_wait``'s slices: one trip to
    Redis for a warm model's answer, not one to send and one to wait."""
    with client.pipeline(transaction=False) as pipe:
        pipe.eval(_SEND_IF_ALIVE, 3, alive_key(prefix), requests_key(prefix), request["reply"], json.dumps(request),
                  ABSENT, REPLY_SECONDS)
        pipe.brpop([request["reply"]], timeout=min(WAIT_SLICE_SECONDS, max(timeout, 0.01)))
        sent, popped = pipe.execute()
    return bool(sent), popped


def ask(client: redis.Redis, prefix: str, request: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Send ``request`` and wait up to ``timeout`` seconds for its answer."""
    try:
        started = time.monotonic()
        reply_key = f"{prefix}:modelserver:reply:{uuid.uuid4().hex}"
        sent, popped = _sent_and_first_wait(client, prefix, {**request, "reply": reply_key,
                                                             "deadline": time.time() + timeout}, timeout)
        if not sent:
            raise ModelServerUnavailable("The model server is not running: start it with `python -m trainer.modelserver`.")
        if popped is None:
            popped = _wait(client, reply_key, timeout - (time.monotonic() - started))
    except redis.RedisError as exc:
        raise ModelServerUnavailable(f"The model server cannot be reached: Redis is unavailable ({exc}).") from None
    if popped is None:
        raise ModelServerUnavailable(f"The model server did not answer within {timeout:g} s.")
    reply = json.loads(popped[1])
    if not reply["ok"]:
        raise ModelServerError(reply["error"], reply["code"])
    return reply["result"]


def classify(client: redis.Redis, prefix: str, job_id: int, image: bytes, *, operation: str = "classify",
             snapshot: str | None = None, class_index: int | None = None, layer: str | None = None,
             timeout: float = 30) -> dict[str, Any]:
    """Classify ``image`` (the file's bytes) with the model of job ``job_id``
    (its ``snapshot``, default the best). ``operation`` ``inspect`` adds
    every layer, ``saliency`` the Grad-CAM of ``class_index`` (default the top
    class) at the convolution named ``layer`` (default: one with a useful resolution). PNGs in the answer are base64 strings."""
    if operation not in CLASSIFYING:
        raise ValueError(f"operation must be one of {', '.join(CLASSIFYING)}, not {operation!r}")
    request = {"op": operation, "job": int(job_id), "snapshot": snapshot, "class": class_index, "layer": layer,
               "image": base64.b64encode(image).decode("ascii")}
    return ask(client, prefix, request, timeout)


def detect(client: redis.Redis, prefix: str, job_id: int, image: bytes, *, snapshot: str | None = None,
           timeout: float = 30) -> dict[str, Any]:
    """The boxes the detector of job ``job_id`` (its ``snapshot``, default
    the best) finds in ``image`` (the file's bytes), in the image's pixels
    (``trainer.inference.detect``)."""
    return _image_request(client, prefix, "detect", job_id, image, snapshot, timeout)


def segment(client: redis.Redis, prefix: str, job_id: int, image: bytes, *, snapshot: str | None = None,
            timeout: float = 30) -> dict[str, Any]:
    """The class the segmenter of job ``job_id`` (its ``snapshot``, default
    the best) gives each pixel of ``image`` (the file's bytes), as a mask of
    the image's size (``trainer.inference.segment``)."""
    return _image_request(client, prefix, "segment", job_id, image, snapshot, timeout)


def _image_request(client: redis.Redis, prefix: str, operation: str, job_id: int, image: bytes, snapshot: str | None,
                   timeout: float) -> dict[str, Any]:
    request = {"op": operation, "job": int(job_id), "snapshot": snapshot,
               "image": base64.b64encode(image).decode("ascii")}
    return ask(client, prefix, request, timeout)
