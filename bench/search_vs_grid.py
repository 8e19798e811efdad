"""Does an adaptive search find a model as good as a grid's with a third of
its compute?

A throwaway stack (its own Redis and SQLite, a real worker with one CPU
slot) builds the sample dataset the app makes offline (the 1,797
handwritten digits), then trains through the New model form:

- the grid: 27 LeNets, every combination of three learning rates, three
  batch sizes and three weight decays (three sweeps of nine), each for
  ``--epochs`` epochs;
- the search: ``--trials`` trials (27) of the same ranges (learning rate and
  weight decay log-uniform between the grid's ends, the three batch sizes),
  TPE with successive halving (ASHA), one at a time.

Compute is counted in epochs trained (from each job's train and validation
events) and in the trial processes' wall time; a trial stopped at a rung
trains on until the worker's next heartbeat acts (``--heartbeat``), and that
counts against the search; the aim (issue: within 0.5 points of the
grid's best validation accuracy with at most a third of its compute) is
printed met or not. It takes minutes: 27 trainings and a search.

    .venv/bin/python bench/search_vs_grid.py [--epochs 9] [--trials 27] [--pruner asha]
"""

from __future__ import annotations

import argparse
import os
import time

from stack import Stack, machine

LRS = (0.003, 0.03, 0.3)
BATCH_SIZES = (16, 32, 64)
WEIGHT_DECAYS = (1e-5, 1e-4, 1e-3)


def model_fields(dataset_id: int, epochs: int) -> dict:
    return {"dataset": dataset_id, "network": {"source": "standard", "name": "lenet"}, "epochs": epochs,
            "val_interval": 1, "snapshot_interval": epochs, "solver": "momentum", "seed": 1}


def submit(owner, body: dict) -> object:
    from training.forms import NewModelForm
    from training.jsondata import api_data

    form = NewModelForm(api_data(NewModelForm, body), user=owner)
    if not form.is_valid():
        raise SystemExit(f"the form refused the benchmark's fields: {form.errors.as_json()}")
    return form.submit_search(owner) if body.get("search") else form.submit(owner)


def epochs_trained(job) -> float:
    """The epochs a job trained, by its last train or validation event (a
    train event is written every half second, so the last may be before the end)."""
    from trainer import eventlog

    trained = [event["data"]["epoch"] for event in eventlog.read_all(job.folder) if event["kind"] in ("train", "val")]
    return max(trained, default=0.0)


def best_top1(job) -> float | None:
    from trainer import eventlog

    values = [event["data"]["top1"] for event in eventlog.read_all(job.folder) if event["kind"] == "val"]
    return max(values, default=None)


def seconds(job) -> float:
    return (job.finished_at - job.started_at).total_seconds() if job.finished_at and job.started_at else 0.0


def wait_jobs(ids: list[int], timeout: float) -> list:
    from jobs.models import TERMINAL, Job
    from tests.processes import wait_for

    wait_for(lambda: Job.objects.filter(pk__in=ids).exclude(status__in=TERMINAL).count() == 0, timeout=timeout,
             every=2, what="the jobs to end")
    return list(Job.objects.filter(pk__in=ids))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=9)
    parser.add_argument("--trials", type=int, default=27)
    parser.add_argument("--pruner", default="asha", choices=["asha", "hyperband", "median", "none"])
    parser.add_argument("--values", type=int, default=3, choices=[1, 2, 3],
                        help="values a setting takes in the grid (3: the 27 combinations); fewer for a quick look")
    parser.add_argument("--heartbeat", type=float, default=0.5,
                        help="the worker's heartbeat, at which it advances the search (an epoch here is under a second)")
    args = parser.parse_args()
    os.environ["WORKER_HEARTBEAT_SECONDS"] = f"{args.heartbeat:g}"
    lrs, batch_sizes, decays = LRS[:args.values], BATCH_SIZES[:args.values], WEIGHT_DECAYS[:args.values]
    stack = Stack()
    try:
        from datasets import sample
        from jobs.models import Job, Status
        from tests.processes import wait_for
        from training import searches
        from training.models import Search

        owner = stack.user()
        stack.start_worker()
        dataset = sample.submit(owner)
        wait_for(lambda: Job.objects.get(pk=dataset.pk).status == Status.DONE, timeout=600, what="the digits dataset")
        base = model_fields(dataset.pk, args.epochs)
        print(f"machine: {machine()}")
        began = time.monotonic()
        grid_ids = []
        for decay in decays:
            jobs = submit(owner, {**base, "name": f"grid wd {decay:g}", "lr": list(lrs), "batch_size": list(batch_sizes),
                                  "weight_decay": decay})
            grid_ids += [job.pk for job in jobs]
        grid = wait_jobs(grid_ids, timeout=7200)
        grid_wall = time.monotonic() - began
        began = time.monotonic()
        search = submit(owner, {**base, "name": "search", "lr": LRS[0], "batch_size": BATCH_SIZES[0], "search": True,
                                "search_lr_low": LRS[0], "search_lr_high": LRS[-1],
                                "search_weight_decay_low": WEIGHT_DECAYS[0], "search_weight_decay_high": WEIGHT_DECAYS[-1],
                                "search_batch_sizes": list(batch_sizes), "search_sampler": "tpe",
                                "search_pruner": args.pruner, "search_trials": args.trials, "search_parallel": 1})
        wait_for(lambda: not searches.active().filter(pk=search.pk).exists(), timeout=7200, every=2,
                 what="the search to end")
        trials = wait_jobs([trial.job_id for trial in Search.objects.get(pk=search.pk).trial_set.all()], timeout=120)
        search_wall = time.monotonic() - began
        grid_best = max(filter(None, map(best_top1, grid)))
        search_best = max(filter(None, map(best_top1, trials)))
        grid_epochs, search_epochs = sum(map(epochs_trained, grid)), sum(map(epochs_trained, trials))
        grid_seconds, search_seconds = sum(map(seconds, grid)), sum(map(seconds, trials))
        stopped = sum(1 for job in trials if job.status == Status.ABORTED)
        failed = [job.error for job in grid if job.status == Status.FAILED]
    finally:
        stack.close()  # the job folders go with it: everything is read above
    print(f"grid: {len(grid)} models × {args.epochs} epochs, best validation top-1 {grid_best:.2%}, "
          f"{grid_epochs:.1f} epochs trained, {grid_seconds:.0f} s in its jobs, {grid_wall:.0f} s in all; "
          f"{len(failed)} failed{': ' + failed[0] if failed else ''}")
    print(f"search ({args.pruner}, TPE): {len(trials)} trials, {stopped} stopped early, best validation top-1 "
          f"{search_best:.2%}, {search_epochs:.1f} epochs trained, {search_seconds:.0f} s in its jobs, "
          f"{search_wall:.0f} s in all")
    print(f"ratio search/grid: epochs {search_epochs / grid_epochs:.2f}x, job seconds {search_seconds / grid_seconds:.2f}x; "
          f"best top-1 {100 * (search_best - grid_best):+.2f} points")
    met = search_best >= grid_best - 0.005 and search_epochs <= grid_epochs / 3
    print(f"aim (within 0.5 points of the grid's best with at most a third of its epochs): {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
