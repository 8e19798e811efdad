"""The formats both sides share: the job folder's file names, the event
vocabulary, the step arithmetic and the growing-file reader, each in a
module that loads neither torch nor Django."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from trainer import eventkinds, jobfiles, steps, tasks
from trainer.linetail import LineTail
from trainer.targets import ClassLabels

SHARED = ("trainer.jobfiles", "trainer.eventkinds", "trainer.steps", "trainer.linetail", "trainer.eventlog", "trainer.tasks")

SCORE = (tasks.Metric("score", "score"),)


def test_the_shared_modules_load_neither_torch_nor_django():
    code = f"import sys, {', '.join(SHARED)}; print(sorted({{'torch', 'django'}} & set(sys.modules)))"
    root = Path(__file__).parents[2]
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(("epoch", "name"), [(3.0, "epoch-3.pt"), (2.5, "epoch-2.50.pt"), (0.25, "epoch-0.25.pt")])
def test_a_snapshot_name_gives_back_its_epoch(epoch, name):
    assert jobfiles.snapshot_name(epoch) == name
    assert jobfiles.snapshot_epoch(name) == epoch


def test_snapshots_are_listed_by_epoch_then_the_best(tmp_path):
    folder = tmp_path / jobfiles.CHECKPOINTS
    folder.mkdir()
    for name in ("epoch-10.pt", "epoch-2.pt", "epoch-2.50.pt", jobfiles.BEST, jobfiles.LAST, "epoch-x.pt", "notes.txt"):
        (folder / name).write_bytes(b"")
    assert jobfiles.snapshots(tmp_path) == ["checkpoints/epoch-2.pt", "checkpoints/epoch-2.50.pt",
                                            "checkpoints/epoch-10.pt", jobfiles.BEST_CHECKPOINT]


def test_a_tasks_series_fields_come_from_its_series_and_the_events_carry_them():
    task = tasks.task_of({})
    fields = task.series_fields()
    assert task.name == tasks.DEFAULT == "classification"
    assert fields[eventkinds.TRAIN]["train_loss"] == "loss" and fields[eventkinds.VAL]["val_top1"] == "top1"
    assert sum(len(f) for f in fields.values()) == len(task.series)
    assert set(eventkinds.train(1, 0.1, 2.0, 0.1, 32, 9.0, 0.0)) >= set(fields[eventkinds.TRAIN].values())
    assert task.page_vocabulary()["series_fields"] == fields
    assert [m["series"] for m in task.shown_metrics(10)] == ["val_top1", "val_top5"]
    assert [m["label"] for m in task.shown_metrics(5)] == ["top-1"]  # top-5 is always 100% then
    assert len(task.shown_metrics(None)) == 2


def test_every_tasks_series_are_read_and_an_unknown_task_is_named():
    for task in tasks.TASKS.values():
        assert task.series.items() <= tasks.EVERY_SERIES.items()
    assert tasks.task_of({"task": "classification"}) is tasks.TASKS["classification"]
    with pytest.raises(ValueError, match="There is no task “sorting”"):
        tasks.task_of({"task": "sorting"})


def test_a_task_offers_the_uses_it_names_and_no_other():
    classification = tasks.task_of({})
    assert all(classification.offers(use) for use in tasks.uses.USES - {tasks.uses.DETECT, tasks.uses.SEGMENT})
    assert not classification.offers(tasks.uses.DETECT), "a classifier draws no boxes"
    assert not classification.offers(tasks.uses.SEGMENT), "nor does it colour pixels"
    segmentation = tasks.task_of({"task": "segmentation"})
    assert segmentation.offers(tasks.uses.SEGMENT) and not segmentation.offers(tasks.uses.CLASSIFY)
    bare = tasks.Task("bare", "Bare", metrics=SCORE, metrics_title="score", targets=ClassLabels(), training="", plan="")
    assert not any(bare.offers(use) for use in tasks.uses.USES), "a task offers no use it does not name"
    only = tasks.Task("only", "Only", metrics=SCORE, metrics_title="score", targets=ClassLabels(), training="", plan="",
                      export="", model_uses=frozenset({tasks.uses.EXPORT}))
    assert [use for use in sorted(tasks.uses.USES) if only.offers(use)] == [tasks.uses.EXPORT]


def test_a_task_that_offers_export_names_the_module_of_its_archive():
    with pytest.raises(ValueError, match="The task “odd” offers export but names no module that makes the archive"):
        tasks.Task("odd", "Odd", metrics=SCORE, metrics_title="score", targets=ClassLabels(), training="", plan="",
                   model_uses=frozenset({tasks.uses.EXPORT}))
    assert all(task.export for task in tasks.TASKS.values() if task.offers(tasks.uses.EXPORT))


def test_a_misspelt_use_fails_when_asked_and_when_a_task_names_it():
    with pytest.raises(ValueError, match="There is no use “clasify”: the uses are classify, detect, evaluate, export"):
        tasks.task_of({}).offers("clasify")
    with pytest.raises(ValueError, match="The task “odd” names unknown uses \\(count\\)"):
        tasks.Task("odd", "Odd", metrics=SCORE, metrics_title="score", targets=ClassLabels(), training="", plan="",
                   model_uses=frozenset({"count"}))


def test_training_steps_are_each_process_even_share_in_whole_batches():
    assert steps.shard_size(10, 0, 3, even=True) == 3 and steps.shard_size(10, 0, 3, even=False) == 4
    assert steps.shard_size(10, 2, 3, even=False) == 3
    assert steps.batch_count(10, 4, drop_last=True) == 2 and steps.batch_count(10, 4, drop_last=False) == 3
    # 1000 images on 3 processes: 333 each; batches of 64 (5 a epoch), then of 128 from epoch 2 (2 a epoch)
    assert steps.total_steps(1000, 64, 3, 4, [[2, 128]]) == 5 + 5 + 2 + 2


def test_a_line_tail_returns_complete_lines_once(tmp_path):
    path = tmp_path / "growing.txt"
    tail = LineTail(path)
    assert tail.lines() == []
    path.write_bytes(b"one\ntwo\nthr")
    assert tail.lines() == [b"one", b"two"] and tail.partial
    with open(path, "ab") as handle:
        handle.write(b"ee\n")
    assert tail.lines() == [b"three"] and not tail.partial
    assert tail.lines() == []


def test_the_web_process_with_every_route_loads_no_torch():
    code = ("import sys, django; django.setup(); import digitslike.urls; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch'))")
    root = Path(__file__).parents[2]
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "digitslike.settings"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root, env=env)
    assert result.stdout.strip() == "[]"
