"""How much does the app cost using a trained model?

In one run, on one trained model:

- Classify one, warm: ``POST /api/models/<id>/classify`` through a real web
  server and model server, timed at the client, against a bare forward pass
  of the same model in this process on the same preprocessed tensor.
  Aim: the app's p50 at most the bare p50 + 10 ms, its p95 at most the
  bare p95 + 20 ms.
- Classify many: an evaluation job over the dataset's validation split
  (a real worker), its throughput between its first and last progress
  events, against a plain batched loop over the same stored images in this
  process (the training loader's normalizer, the same batch size), run
  just before and just after each job. Aim: at least 0.95x the plain loop.
  The ratio is the median of the rounds' own ratios (each job against the
  mean of the two loops around it): on a shared 2-core virtual machine the
  speed of the same loop moves between two levels about 1.5x apart for
  seconds at a time, so medians taken over rounds minutes apart compare
  the host's moments more than the two sides. The ratio of the medians is
  printed too. The whole job (submit to done: the queue, Python and torch
  starting, the report written, as the job's record times it) is printed
  as well.

    .venv/bin/python bench/classify_latency.py [--network lenet] [--requests 50] [--images 20000] [--epochs 1]

The dataset is the tests' generated bars (28×28 grayscale, four classes);
the model is trained in this process first (a few seconds for LeNet).
"""

from __future__ import annotations

import argparse
import inspect
import json
import time
from statistics import median

import httpx
from stack import Stack, machine, percentile

SPLIT = "val"
DONE_POLL_SECONDS = 0.5
WARM_UP = 5


def _evaluation_batch() -> int:
    """The batch size an evaluation job reads a split with (``evaluate_split``'s default)."""
    from trainer.inference.classify import evaluate_split

    return inspect.signature(evaluate_split).parameters["batch_size"].default


def train(owner, args: argparse.Namespace):
    """A done training job of the network on a generated dataset, trained here."""
    import torch

    from jobs.models import Job, Status
    from tests.trainfiles import make_dataset, train_config
    from trainer import jobfiles
    from trainer.distributed import Placement
    from trainer.train import Run

    dataset = Job.objects.create(kind="dataset", name="bars", owner=owner, status=Status.DONE)
    make_dataset(dataset.folder / jobfiles.DATASET, {"train": 500, SPLIT: args.images // 4, "test": 0})
    params = train_config(dataset.folder / jobfiles.DATASET, dataset=dataset.pk, epochs=args.epochs,
                          network={"source": "standard", "name": args.network})
    model = Job.objects.create(kind="train", name=args.network, owner=owner, status=Status.DONE, params=params,
                               resources={"device": "cpu", "count": 1})
    model.folder.mkdir(parents=True)
    config = {**params, "job_id": model.pk, "devices": ["cpu0"]}
    (model.folder / jobfiles.CONFIG).write_text(json.dumps(config))
    Run(config, model.folder, Placement(0, 1, 0, torch.device("cpu"))).train()
    return model


def timed(call, count: int) -> list[float]:
    times = []
    for _ in range(count):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return times


def classify_one(url: str, key: str, model, image: bytes, count: int) -> list[float]:
    """Client-side times of ``count`` warm requests (after ``WARM_UP`` untimed ones)."""
    with httpx.Client(base_url=url, headers={"Authorization": f"Token {key}"}, timeout=60) as client:
        def ask() -> None:
            response = client.post(f"/api/models/{model.pk}/classify", files={"image": ("image.png", image)})
            response.raise_for_status()

        timed(ask, WARM_UP)
        return timed(ask, count)


def bare_forward(model, image: bytes, count: int) -> list[float]:
    """A forward pass of the same model on the same preprocessed tensor, top 5 included."""
    from trainer.inference import load_model, logits, preprocess
    from trainer.inference.classify import top_classes

    loaded = load_model(model.folder)
    x = preprocess(loaded, image).tensor[None]
    timed(lambda: top_classes(loaded, logits(loaded, x)), WARM_UP)
    return timed(lambda: top_classes(loaded, logits(loaded, x)), count)


def plain_loop(model, batch: int) -> float:
    """Images per second of a batched loop over the split's stored images, after one warm-up batch."""
    from trainer import jobfiles
    from trainer.data import load_split
    from trainer.inference import load_model, logits
    from trainer.inference.classify import SPLIT_BUDGET

    loaded = load_model(model.folder)
    data = load_split(model.params[jobfiles.DATASET_DIR_PARAM], SPLIT, SPLIT_BUDGET)
    images, top = data.images, min(5, len(loaded.classes))
    logits(loaded, loaded.normalizer(images[:batch]))
    start = time.perf_counter()
    for first in range(batch, len(images), batch):
        logits(loaded, loaded.normalizer(images[first:first + batch])).softmax(dim=1).topk(top, dim=1)
    return (len(images) - batch) / (time.perf_counter() - start)


def evaluation(owner, model) -> tuple[float, float, int]:
    """In-job images per second (first to last progress event), the whole job's seconds, and its image count."""
    from inference.evaluate import services
    from jobs.models import Job, Status
    from trainer import eventkinds, eventlog

    job = services.evaluate(owner, model, SPLIT)
    # Looked at seldom, so that this process takes no CPU from the job's
    # threads; the job's own times say how long it took.
    while Job.objects.get(pk=job.pk).status not in (Status.DONE, Status.FAILED, Status.ABORTED):
        time.sleep(DONE_POLL_SECONDS)
    job.refresh_from_db()
    wall = (job.finished_at - job.created_at).total_seconds()
    if job.status != Status.DONE:
        raise SystemExit(f"the evaluation ended {job.status}: {job.error}")
    progress = [e for e in eventlog.read_all(job.folder) if e["kind"] == eventkinds.PROGRESS and "done" in e["data"]]
    first, last = progress[0], progress[-1]
    if last["t"] <= first["t"]:
        raise SystemExit("the evaluation was too quick to time between progress events: give more --images")
    return (last["data"]["done"] - first["data"]["done"]) / (last["t"] - first["t"]), wall, last["data"]["total"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--network", default="lenet")
    parser.add_argument("--requests", type=int, default=50, help="timed classify-one requests")
    parser.add_argument("--images", type=int, default=20000, help="validation images for classify many")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5, help="alternated rounds of each; medians are reported")
    args = parser.parse_args()

    import torch

    stack = Stack()
    try:
        from accounts.models import ApiToken
        from tests.inferfiles import bar_images
        from tests.modelservers import start_model_server

        owner = stack.user()
        _, key = ApiToken.issue(owner, "bench")
        model = train(owner, args)
        image = bar_images(1, seed=3)[0][0]
        stack.start_worker()
        web = stack.start_web()
        from django.conf import settings

        stack.services.append(start_model_server(settings.DATA_DIR, settings.REDIS_PREFIX, stack.folder,
                                                 OMP_NUM_THREADS=str(torch.get_num_threads())))
        app, bare, in_job, plain, walls, ratios = [], [], [], [], [], []
        for _ in range(args.repeats):  # alternated, so drifts in the machine's speed hit both alike
            app += classify_one(web.url, key, model, image, args.requests)
            bare += bare_forward(model, image, args.requests)
            before = plain_loop(model, _evaluation_batch())
            rate, wall, count = evaluation(owner, model)
            after = plain_loop(model, _evaluation_batch())
            in_job.append(rate)
            walls.append(wall)
            plain += [before, after]
            ratios.append(rate / ((before + after) / 2))

        p50_app, p50_bare = percentile(app, 50), percentile(bare, 50)
        print(f"machine: {machine()}, {torch.cuda.get_device_name() if torch.cuda.is_available() else 'CPU'}, "
              f"torch threads {torch.get_num_threads()}")
        print(f"{args.network}, {args.repeats} alternated rounds; classify one: {args.requests} warm requests a round; "
              f"classify many: the {SPLIT} split, {count} images")
        for name, values in (("classify one through the API", app), ("bare forward in this process", bare)):
            print(f"{name:32s} p50 {percentile(values, 50) * 1000:7.1f} ms   p95 {percentile(values, 95) * 1000:7.1f} ms"
                  f"   min {min(values) * 1000:6.1f} ms   max {max(values) * 1000:7.1f} ms")
        print(f"classify one: p50 app - bare {(p50_app - p50_bare) * 1000:.1f} ms (aim <= 10 ms), "
              f"p95 app - bare {(percentile(app, 95) - percentile(bare, 95)) * 1000:.1f} ms (aim <= 20 ms), "
              f"ratio p50 {p50_app / p50_bare:.2f}x, p95 {percentile(app, 95) / percentile(bare, 95):.2f}x")
        print(f"classify many: evaluation job {median(in_job):8.0f} images/s (in the job; rounds "
              f"{', '.join(f'{r:.0f}' for r in in_job)}), whole job {median(walls):.2f} s submit to done "
              f"({count / median(walls):.0f} images/s)")
        print(f"               plain loop     {median(plain):8.0f} images/s (rounds {', '.join(f'{r:.0f}' for r in plain)})")
        print(f"classify many: ratio job/plain {median(ratios):.3f}x, the median of the rounds' own "
              f"({', '.join(f'{r:.3f}' for r in ratios)}) (aim >= 0.95); ratio of the medians "
              f"{median(in_job) / median(plain):.3f}x")
    finally:
        stack.close()


if __name__ == "__main__":
    main()
