"""Chart series from a run's events.jsonl: min/max downsampling that keeps
every spike, step order, resumed runs without duplicates, and the cache."""

import json
import math

import numpy as np
import pytest

from trainer import eventkinds as kinds
from trainer import eventlog, jobfiles
from trainer.tasks import task_of
from training import series


def all_of(run: series.Run) -> dict:
    return run.metrics(task_of({}), series.MAX_POINTS)


def test_downsampling_keeps_the_extremes_and_every_spike_within_the_bound():
    rng = np.random.default_rng(0)
    count = 20_000
    values = 2.0 / (1.0 + np.arange(count) * 0.001) + rng.normal(0, 0.01, count)
    spikes = rng.choice(np.arange(0, count, 50), size=40, replace=False)  # at least 50 points apart
    values[spikes[:30]] += 5.0
    values[spikes[30:]] -= 5.0
    kept = series.downsample(values, 1000)
    assert len(kept) <= 1000
    assert kept == sorted(set(kept))  # in order, no repeats
    assert set(spikes.tolist()) <= set(kept)
    assert int(values.argmax()) in kept and int(values.argmin()) in kept
    assert values[kept].min() == values.min() and values[kept].max() == values.max()


@pytest.mark.parametrize(("count", "limit"), [(0, 10), (5, 10), (10, 10), (11, 10), (1001, 2), (12345, 777), (3000, 1000)])
def test_the_bucket_count_bounds_the_length(count, limit):
    values = np.sin(np.arange(count, dtype=float) / 7.0)
    kept = series.downsample(values, limit)
    assert len(kept) <= limit
    if count <= limit:
        assert kept == list(range(count))
    else:
        assert len(kept) >= limit // 2  # every bucket keeps at least one point


def test_downsampling_is_never_random_or_every_kth():
    values = np.zeros(1000)
    values[123] = 1.0  # the one point every-k-th sampling would miss
    kept = series.downsample(values, 10)
    assert 123 in kept and kept == series.downsample(values, 10)


def write_run(folder, first: int, last: int, offset: float = 0.0) -> None:
    for step in range(first, last + 1):
        epoch = step / 10
        eventlog.append(folder, kinds.TRAIN, kinds.train(step, epoch, offset + 1.0 / (step + 1), 0.1, 32, 500.0 + step, 0.25))
        if step % 10 == 0 and step:
            snapshot = jobfiles.checkpoint(jobfiles.snapshot_name(step // 10))
            eventlog.append(folder, kinds.VAL, kinds.val(step, epoch, {"loss": offset + 2.0 / step, "top1": 0.5, "top5": 0.9}))
            eventlog.append(folder, kinds.SNAPSHOT, kinds.snapshot(step, epoch, snapshot, True, {"val_loss": 2.0 / step}))
            eventlog.append(folder, kinds.BEST, {"epoch": epoch, "step": step, "metric": "val_loss", "value": 2.0 / step,
                                                 "file": snapshot})


def test_points_are_in_step_order_with_their_epochs(tmp_path):
    write_run(tmp_path, 0, 40)
    body = series.view(tmp_path, all_of)
    train = body["series"]["train_loss"]
    assert [p[0] for p in train] == list(range(41))
    assert train[10] == [10, 1.0, 1.0 / 11]
    assert [p[0] for p in body["series"]["val_top1"]] == [10, 20, 30, 40]
    assert body["series"]["images_per_s"][-1][2] == 540.0 and body["series"]["data_wait"][0][2] == 0.25
    assert [s["step"] for s in body["snapshots"]] == [10, 20, 30, 40]
    assert [s["is_best"] for s in body["snapshots"]] == [False, False, False, True]
    assert body["best"]["step"] == 40 and body["result"] is None


def test_a_resume_drops_what_the_interrupted_run_recorded_after_its_step(tmp_path):
    write_run(tmp_path, 0, 37)  # the run dies at step 37; its last checkpoint was at step 20
    eventlog.append(tmp_path, kinds.RESUME, kinds.resume(20, 2.0))
    write_run(tmp_path, 21, 50, offset=100.0)
    body = series.view(tmp_path, all_of)
    train = body["series"]["train_loss"]
    assert [p[0] for p in train] == list(range(51))  # no duplicates, no gaps
    assert all(p[2] < 100 for p in train[:21]) and all(p[2] > 100 for p in train[21:])
    assert [p[0] for p in body["series"]["val_loss"]] == [10, 20, 30, 40, 50]
    assert body["series"]["val_loss"][2][2] > 100  # step 30 as the resumed run measured it
    assert [s["step"] for s in body["snapshots"]] == [10, 20, 30, 40, 50]
    assert body["best"]["step"] == 50


def test_a_resume_without_new_points_keeps_the_earlier_best(tmp_path):
    write_run(tmp_path, 0, 30)
    eventlog.append(tmp_path, kinds.RESUME, kinds.resume(20, 2.0))
    body = series.view(tmp_path, all_of)
    assert body["best"]["step"] == 20 and [s["step"] for s in body["snapshots"]] == [10, 20]
    assert body["snapshots"][-1]["is_best"]


def test_not_finite_values_are_left_out_of_curves_and_become_null_elsewhere(tmp_path):
    eventlog.append(tmp_path, kinds.TRAIN, kinds.train(1, 0.1, 2.0, 0.1, 32, 1.0, 0.0))
    eventlog.append(tmp_path, kinds.TRAIN, kinds.train(2, 0.2, float("nan"), 0.1, 32, 1.0, 0.0))
    eventlog.append(tmp_path, kinds.LAYERS, {"step": 2, "epoch": 0.2, "filters": None, "layers": [
        {"name": "fc", "weight_norm": float("inf"), "grad_norm": None, "weight_hist": {"edges": [], "counts": []},
         "grad_hist": {"edges": [], "counts": []}}]})
    run = series.view(tmp_path, lambda r: r)
    assert [p[0] for p in run.points("train_loss", 100)] == [1]
    assert [p[0] for p in run.points("lr", 100)] == [1, 2]
    assert run.layers["layers"][0]["weight_norm"] is None
    json.dumps(run.layers, allow_nan=False)


def test_only_the_latest_of_the_latest_kinds_and_a_window_of_hardware(tmp_path):
    for i in range(series.HARDWARE_HISTORY + 5):
        eventlog.append(tmp_path, kinds.HARDWARE, {"gpus": [], "cpu_percent": float(i), "rss_bytes": 1, "threads": 2})
    eventlog.append(tmp_path, kinds.PERF, {"images_per_s": 1.0, "data_wait": 0.5, "step_ms": 3.0, "flops_per_image": 10,
                                       "mfu": None, "device": "cpu"})
    eventlog.append(tmp_path, kinds.PERF, {"images_per_s": 2.0, "data_wait": 0.5, "step_ms": 3.0, "flops_per_image": 10,
                                       "mfu": None, "device": "cpu"})
    eventlog.append(tmp_path, kinds.LOG, {"lines": ["not a chart's business"]})
    run = series.view(tmp_path, lambda r: r)
    assert run.perf["images_per_s"] == 2.0
    assert len(run.hardware) == series.HARDWARE_HISTORY and run.hardware[-1]["cpu_percent"] == series.HARDWARE_HISTORY + 4
    assert run.hardware[0]["t"] > 0
    assert run.seq == series.HARDWARE_HISTORY + 8  # the log line counts too


def test_the_cache_reads_only_what_the_file_gained_and_rereads_a_new_file(tmp_path):
    write_run(tmp_path, 0, 10)
    first = series.view(tmp_path, lambda r: r)
    assert series.view(tmp_path, lambda r: r) is first
    write_run(tmp_path, 11, 12)
    assert series.view(tmp_path, lambda r: r) is first  # read on, not again
    assert [p[0] for p in first.points("train_loss", 100)][-2:] == [11, 12]

    path = tmp_path / eventlog.FILENAME
    with open(path, "ab") as handle:  # a line being written
        handle.write(b'{"seq":99,"t":1.0,"kind":"train","data":{"step":13,')
    assert len(series.view(tmp_path, lambda r: r.points("train_loss", 100))) == 13
    with open(path, "ab") as handle:
        handle.write(b'"epoch":1.3,"loss":0.5,"lr":0.1,"images_per_s":1.0,"data_wait":0.0}}\n')
    assert series.view(tmp_path, lambda r: r.points("train_loss", 100))[-1] == [13, 1.3, 0.5]

    path.unlink()
    write_run(tmp_path, 0, 3)
    again = series.view(tmp_path, lambda r: r)
    assert again is not first and len(again.points("train_loss", 100)) == 4


def test_a_folder_without_events_is_an_empty_run(tmp_path):
    body = series.view(tmp_path / "nothing", all_of)
    assert all(points == [] for points in body["series"].values())
    assert body["snapshots"] == [] and body["best"] is None


def test_points_are_clamped(tmp_path):
    assert series.clamp_points(None) == 1000 and series.clamp_points("") == 1000
    assert series.clamp_points("50000") == 10_000 and series.clamp_points("-3") == 2
    with pytest.raises(ValueError):
        series.clamp_points("many")


def test_a_long_run_is_downsampled_per_series(tmp_path):
    lines = []
    for step in range(5000):
        loss = 10.0 if step == 4321 else 1.0 / math.sqrt(step + 1)
        event = {"seq": step + 1, "t": 1.0, "kind": kinds.TRAIN, "data": kinds.train(step, step / 100, loss, 0.1, 32, 1.0, 0.0)}
        lines.append(json.dumps(event, separators=(",", ":")))
    (tmp_path / eventlog.FILENAME).write_text("\n".join(lines) + "\n")
    train = series.view(tmp_path, lambda r: r.points("train_loss", 100))
    assert len(train) <= 100
    assert [4321, 43.21, 10.0] in train and train[0][0] == 0
    assert [p[0] for p in train] == sorted(p[0] for p in train)


@pytest.mark.parametrize("asked, given", [("", 1000), ("1", 2), ("2", 2), ("10000", 10_000), ("10001", 10_000)])
def test_the_points_asked_for_are_held_between_2_and_10000(asked, given):
    """``?points=``: ``DEFAULT_POINTS`` (1000) when not given, at most ``MAX_POINTS`` (10,000), at least 2."""
    assert series.clamp_points(asked) == given


def test_the_cache_keeps_the_64_runs_read_last_and_rereads_one_it_dropped(tmp_path):
    """``CACHED_RUNS`` (64): 64 runs stay cached; a 65th drops the one read
    least recently, which is read again whole when asked for."""
    folders = [tmp_path / str(number) for number in range(series.CACHED_RUNS + 1)]
    for folder in folders:
        folder.mkdir()
        write_run(folder, 0, 10)
    series._cache.clear()
    runs = [series.view(folder, lambda run: run) for folder in folders[:series.CACHED_RUNS]]
    assert all(series.view(folder, lambda run: run) is run for folder, run in zip(folders[:-1], runs, strict=True))
    assert len(series._cache) == series.CACHED_RUNS
    series.view(folders[-1], lambda run: run)
    assert len(series._cache) == series.CACHED_RUNS
    again = series.view(folders[0], lambda run: run)
    assert again is not runs[0] and again.points("train_loss", 100) == runs[0].points("train_loss", 100)
    assert series.view(folders[1], lambda run: run) is not runs[1]  # dropped in turn for the first


def test_the_parts_of_a_detectors_loss_are_series_of_their_own(tmp_path):
    for step in range(1, 4):
        parts = {"loss_classifier": 0.5 / step, "loss_box_reg": 0.25 / step, "unnamed_part": 9.0}
        eventlog.append(tmp_path, kinds.TRAIN, kinds.train(step, step / 10, 0.75 / step, 0.1, 8, 50.0, 0.0, parts))
    eventlog.append(tmp_path, kinds.TRAIN, kinds.train(4, 0.4, 0.1, 0.1, 8, 50.0, 0.0, {"loss_classifier": math.nan}))
    detection = task_of({"task": "detection"})
    body = series.view(tmp_path, lambda run: run.metrics(detection, series.MAX_POINTS))["series"]
    assert [point[2] for point in body["loss_part_loss_classifier"]] == [0.5, 0.25, 0.5 / 3]
    assert [point[0] for point in body["loss_part_loss_box_reg"]] == [1, 2, 3]
    assert body["loss_part_loss_objectness"] == [] and not any("unnamed" in name for name in body)
    assert len(body["train_loss"]) == 4
    classification = series.view(tmp_path, all_of)["series"]
    assert not any(name.startswith("loss_part_") for name in classification)
    parts = detection.page_vocabulary()["loss_components"]
    assert parts[0] == {"series": "loss_part_loss_classifier", "label": "classification (box head)"}
    assert detection.series_fields()[kinds.TRAIN]["loss_part_loss_box_reg"] == "components.loss_box_reg"
