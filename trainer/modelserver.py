"""The model server: a long-running torch process that answers classify,
inspect, saliency and detect requests (``trainer.modelclient``) with models kept
warm in memory, so that a web request neither starts Python nor reloads a
snapshot.

    python -m trainer.modelserver [--redis-url URL] [--prefix P] [--data-dir D] [--max-models N]
        [--device cpu|cuda|cuda:N] [--host H] [--idle-seconds S] [--lease-seconds S]

Each argument defaults to the environment (``REDIS_URL``, ``REDIS_PREFIX``,
``DATA_DIR``, ``MODEL_SERVER_MAX_MODELS``, ``MODEL_SERVER_DEVICE``,
``WORKER_HOST`` or the host name, ``MODEL_SERVER_IDLE_SECONDS``,
``WORKER_DEAD_AFTER_SECONDS``). A job's model is read from
``DATA_DIR/jobs/<id>``. At most ``max-models`` models are held, the least
recently used evicted first; a snapshot rewritten on disk (``best.pt`` after
a better validation) is loaded again. On a GPU the server holds the GPU's
device lease while it holds models, as a job would (``trainer.gpulease``),
and gives it back after ``idle-seconds`` without a request. No Django here.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import os
import signal
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import redis
import torch

from trainer import devicelease, jobfiles, modelclient
from trainer.gpulease import DeviceBusy, GpuLease, device_id
from trainer.inference import InferenceError, Loaded, ModelNotFound, load_model, preprocess
from trainer.inference.classify import logits, top_classes
from trainer.inference.detect import detect
from trainer.inference.gradcam import saliency
from trainer.inference.layers import inspect
from trainer.inference.pictures import png
from trainer.inference.segment import segment
from trainer.inference.threads import threads_for_one, using
from trainer.tasks.uses import CLASSIFY, not_offered

ALIVE_SECONDS = 5  # the alive key outlives the server by this much
POLL_SECONDS = 1


class Held(NamedTuple):
    loaded: Loaded
    loaded_now: bool  # loaded for this call
    threads: int  # the CPU threads its forward pass of one image uses (``threads_for_one``)


class Models:
    """Loaded models by (job folder, snapshot asked for), least recently used first."""

    def __init__(self, limit: int, device: str, load: Callable[..., Loaded] = load_model,
                 threads_for: Callable[[Loaded], int] = threads_for_one) -> None:
        self.limit, self.device, self.load, self.threads_for = max(limit, 1), device, load, threads_for
        self.held: OrderedDict[tuple[str, str | None], tuple[Loaded, float, int]] = OrderedDict()

    @staticmethod
    def _stamp(job_dir: Path, loaded: Loaded) -> float:
        path = job_dir / jobfiles.CHECKPOINTS / loaded.snapshot
        try:
            return path.stat().st_mtime
        except FileNotFoundError:
            raise ModelNotFound(f"The snapshot {loaded.snapshot} does not exist (any more).") from None

    def get(self, job_dir: Path, snapshot: str | None) -> Held:
        key = (str(job_dir), snapshot)
        held = self.held.get(key)
        if held is not None:
            loaded, stamp, threads = held
            fresh = loaded.note is None or snapshot is not None  # a training model's newest snapshot moves on
            if fresh and (job_dir / jobfiles.CONFIG).exists() and self._stamp(job_dir, loaded) == stamp:
                self.held.move_to_end(key)
                return Held(loaded, False, threads)
            del self.held[key]
        loaded = self.load(job_dir, snapshot, device=self.device)
        threads = self.threads_for(loaded)
        self.held[key] = (loaded, self._stamp(job_dir, loaded), threads)
        while len(self.held) > self.limit:
            self.held.popitem(last=False)
        return Held(loaded, True, threads)

    def clear(self) -> None:
        self.held.clear()


def _encoded(value: Any) -> Any:
    """``value`` with every bytes (PNG) as base64 text, for JSON."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {k: _encoded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_encoded(v) for v in value]
    return value


class Server:
    def __init__(self, client: redis.Redis, prefix: str, data_dir: Path, models: Models,
                 lease: GpuLease | None = None) -> None:
        self.client, self.prefix, self.data_dir, self.models = client, prefix, data_dir, models
        self.lease = lease  # None on the CPU, which takes no lease
        self.stopping = False
        self._busy = threading.Event()  # set while a request runs
        self._keeper: threading.Thread | None = None

    def job_dir(self, job: Any) -> Path:
        if not isinstance(job, int) or isinstance(job, bool) or job < 1:
            raise InferenceError(f"{job!r} is not a job id.")
        return self.data_dir / "jobs" / str(job)

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        started = time.perf_counter()
        operation = request.get("op")
        if operation not in modelclient.OPERATIONS:
            raise InferenceError(f"Unknown operation {operation!r}.")
        if self.lease is not None:
            self.lease.take()
        with self.kept_up():
            held = self.models.get(self.job_dir(request.get("job")), request.get("snapshot"))
            with using(held.threads):
                return self.work(request, operation, held, started)

    def work(self, request: dict[str, Any], operation: str, held: Held, started: float) -> dict[str, Any]:
        loaded, loaded_now = held.loaded, held.loaded_now
        try:
            image = base64.b64decode(request.get("image") or "", validate=True)
        except (binascii.Error, TypeError):
            raise InferenceError("The image is not base64 data.") from None
        if operation in ("detect", "segment"):
            found = detect(loaded, image) if operation == "detect" else segment(loaded, image)
            return {"snapshot": loaded.snapshot, "note": loaded.note, "loaded_now": loaded_now, **found,
                    "seconds": time.perf_counter() - started}
        if not loaded.task.offers(CLASSIFY):
            raise InferenceError(not_offered(CLASSIFY, loaded.task.label))
        prepared = preprocess(loaded, image)
        result: dict[str, Any] = {"snapshot": loaded.snapshot, "note": loaded.note, "loaded_now": loaded_now,
                                  "top": top_classes(loaded, logits(loaded, prepared.tensor[None]))[0],
                                  "seen": png(prepared.seen)}
        if operation == "inspect":
            result["inspect"] = inspect(loaded, prepared)
        if operation == "saliency":
            result["saliency"] = saliency(loaded, prepared, request.get("class"), request.get("layer"))
        result["seconds"] = time.perf_counter() - started
        return _encoded(result)

    def handle(self, raw: bytes) -> None:
        try:
            request = json.loads(raw)
            reply_key = request["reply"]
        except (ValueError, KeyError, TypeError):
            print("dropped a request that is not JSON with a reply key", file=sys.stderr, flush=True)
            return
        if time.time() > request.get("deadline", float("inf")):
            return  # its client has given up
        try:
            reply = {"ok": True, "result": self.answer(request)}
        except DeviceBusy as exc:
            reply = {"ok": False, "code": "busy", "error": str(exc)}
        except ModelNotFound as exc:
            reply = {"ok": False, "code": "not_found", "error": str(exc)}
        except InferenceError as exc:
            reply = {"ok": False, "code": "bad_input", "error": str(exc)}
        except Exception as exc:  # the server outlives any one request
            reply = {"ok": False, "code": "failed", "error": f"The model server failed: {type(exc).__name__}: {exc}"}
        with self.client.pipeline() as pipe:  # one trip to Redis
            pipe.lpush(reply_key, json.dumps(reply)).expire(reply_key, modelclient.REPLY_SECONDS).execute()

    def tend_lease(self) -> None:
        """Keep the GPU's lease alive while models are held; once idle (or
        lost to a job after a Redis restart), drop the models, free the GPU's
        memory and give the lease back."""
        lease = self.lease
        if lease is None or not (lease.held or self.models.held):
            return
        if not lease.held or lease.idle() or not lease.keep():  # not held: lost while a request ran
            self.models.clear()
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            lease.release()

    def say_alive(self) -> None:
        self.client.set(modelclient.alive_key(self.prefix), os.getpid(), ex=POLL_SECONDS + ALIVE_SECONDS)

    @contextmanager
    def kept_up(self) -> Iterator[None]:
        """While a request runs, a thread keeps what the loop keeps between
        requests: the alive key, or clients would hear that no server runs,
        and the GPU's lease, or a job could take the GPU from under a
        request that outlasts the lease's time to live. One thread, started
        with the first request and kept: starting and joining one per
        request put both on every answer's path."""
        if self._keeper is None:
            self._keeper = threading.Thread(target=self._keep_up, name="kept-up", daemon=True)
            self._keeper.start()
        self._busy.set()
        try:
            yield
        finally:
            self._busy.clear()

    def _keep_up(self) -> None:
        while True:
            self._busy.wait()
            time.sleep(POLL_SECONDS)
            if self._busy.is_set():
                self.say_alive()
                if self.lease is not None:
                    self.lease.keep()

    def serve(self) -> None:
        requests, alive = modelclient.requests_key(self.prefix), modelclient.alive_key(self.prefix)
        while not self.stopping:
            self.say_alive()
            self.tend_lease()
            popped = self.client.brpop([requests], timeout=POLL_SECONDS)
            if popped is not None:
                self.handle(popped[1])
        self.client.delete(alive)
        if self.lease is not None and self.lease.held:
            self.lease.release()


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m trainer.modelserver", description=__doc__.split("\n\n")[0])
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    parser.add_argument("--prefix", default=os.environ.get("REDIS_PREFIX", "dl"))
    parser.add_argument("--data-dir", type=Path, default=Path(os.environ.get("DATA_DIR", "var")))
    parser.add_argument("--max-models", type=int, default=int(os.environ.get("MODEL_SERVER_MAX_MODELS", "4")))
    parser.add_argument("--device", default=os.environ.get("MODEL_SERVER_DEVICE", "cpu"))
    parser.add_argument("--host", default=devicelease.host_name(), help="the machine's name in device leases")
    parser.add_argument("--idle-seconds", type=float,
                        default=float(os.environ.get("MODEL_SERVER_IDLE_SECONDS", "300")))
    parser.add_argument("--lease-seconds", type=float,
                        default=float(os.environ.get("WORKER_DEAD_AFTER_SECONDS", "15")))
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    options = arguments(argv)
    client = redis.Redis.from_url(options.redis_url)
    device = device_id(options.device)
    lease = None if device is None else GpuLease(client, options.prefix, options.host, device,
                                                 options.lease_seconds, options.idle_seconds)
    server = Server(client, options.prefix, options.data_dir.resolve(), Models(options.max_models, options.device),
                    lease)

    def stop(signum: int, frame: object) -> None:
        server.stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"model server: {options.prefix} on {options.redis_url}, models from {options.data_dir}, "
          f"up to {options.max_models} on {options.device}", flush=True)
    server.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
