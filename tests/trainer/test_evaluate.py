"""Classify many and evaluate: the report's measures on a small set whose
answers are known exactly, and a real run over files and a dataset split."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest

from tests.inferfiles import bar_images, trained_job
from tests.trainfiles import make_dataset
from trainer import jobfiles
from trainer.data import DatasetInfo, SplitData, StreamingSplit, load_split
from trainer.datastore import SplitReader
from trainer.evaluation_files import IMAGES
from trainer.eventlog import read_all
from trainer.imagelists import Entry
from trainer.inference import evaluate, evaluate_split, load_model
from trainer.inference import job as inference_job
from trainer.inference.report import report
from trainer.targets import ClassLabels

CLASSES = ["cat", "dog", "fox"]
ROOT = Path(__file__).resolve().parents[2]
classify = import_module("trainer.inference.classify")  # the package exports a function of that name


def row(image: str, label: int | None, *scores: tuple[int, float]) -> dict:
    return {"image": image, "label": label, "error": None,
            "top": [{"index": k, "class": CLASSES[k], "probability": p} for k, p in scores]}


KNOWN = [
    row("a", 0, (0, 0.9), (1, 0.1)),
    row("b", 0, (0, 0.6), (2, 0.4)),
    row("c", 0, (1, 0.7), (0, 0.3)),   # a cat taken for a dog
    row("d", 1, (1, 0.8), (0, 0.2)),
    row("e", 1, (2, 0.95), (1, 0.05)),  # a dog taken for a fox, very sure: label noise?
    row("f", 2, (2, 0.5), (0, 0.3)),
    row("g", 2, (0, 0.55), (1, 0.45)),  # a fox taken for a cat, fox not in its top 2
    row("h", None, (1, 0.99), (0, 0.01)),
    {"image": "broken", "label": 1, "top": None, "error": "not an image"},
]


def test_the_confusion_matrix_and_measures_of_a_known_set_are_exact():
    result = report(KNOWN, CLASSES, top_n=2)
    assert (result["images"], result["errors"], result["labelled"]) == (9, 1, 7)
    assert result["confusion"] == [[2, 1, 0], [0, 1, 1], [1, 0, 1]]
    assert result["top1"] == pytest.approx(4 / 7)
    assert result["top5"] == pytest.approx(6 / 7)
    cat, dog, fox = result["per_class"]
    assert (cat["precision"], cat["recall"], cat["accuracy"]) == pytest.approx((2 / 3, 2 / 3, 5 / 7))
    assert (dog["precision"], dog["recall"], dog["accuracy"]) == pytest.approx((1 / 2, 1 / 2, 5 / 7))
    assert (fox["precision"], fox["recall"]) == pytest.approx((1 / 2, 1 / 2))
    assert [m["image"] for m in result["mistakes"]] == ["e", "c", "g"]
    assert result["mistakes"][0] == {"image": "e", "label": 1, "predicted": 2, "confidence": 0.95}
    dogs = result["confidence"][1]
    assert [m["image"] for m in dogs["most"]] == ["h", "d"] and [m["image"] for m in dogs["least"]] == ["c", "d"]


def test_without_labels_only_the_confidence_lists_are_made():
    result = report([r | {"label": None} for r in KNOWN[:3]], CLASSES)
    assert result["top1"] is None and result["confusion"] is None and result["mistakes"] is None
    assert [m["image"] for m in result["confidence"][0]["most"]] == ["a", "b"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return make_dataset(tmp_path_factory.mktemp("bars") / "dataset")


@pytest.fixture(scope="module")
def model(tmp_path_factory, dataset) -> Path:
    return trained_job(tmp_path_factory.mktemp("model") / "job", dataset, epochs=2)


def test_classify_many_and_evaluate_on_a_trained_model(tmp_path, dataset, model):
    loaded = load_model(model)
    files = []
    for number, (image, label) in enumerate(bar_images(24, seed=3)):
        path = tmp_path / f"{number}.png"
        path.write_bytes(image)
        files.append((path, loaded.classes[label] if number % 2 else label))
    files.append((tmp_path / "missing.png", 0))
    seen = []
    rows = evaluate(loaded, files, batch_size=10, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(10, 25), (20, 25), (25, 25)]
    assert rows[-1]["top"] is None and "cannot be read" in rows[-1]["error"]
    result = report(rows, loaded.classes)
    assert result["errors"] == 1 and result["labelled"] == 24 and result["top1"] >= 0.9
    assert sum(map(sum, result["confusion"])) == 24

    test_rows = evaluate_split(loaded, dataset, "test")
    assert len(test_rows) == 120 and report(test_rows, loaded.classes)["top1"] >= 0.9


# An encoded split of more than 512 images is decoded by a pool of forked
# processes; their parent is under the evaluation's SIGTERM handler, which
# removes the unfinished folder. Each side of the threshold, three times,
# as the worker runs it.
@pytest.mark.parametrize("test_per_class", [128, 129], ids=["512-decoded-here", "516-decoded-by-a-pool"])
def test_evaluating_an_encoded_split_as_a_job(tmp_path, test_per_class):
    dataset = make_dataset(tmp_path / "png", {"train": 30, "val": 5, "test": test_per_class}, encoding="png")
    model = trained_job(tmp_path / "model", dataset, epochs=1)
    for attempt in range(3):
        job = tmp_path / f"evaluation-{attempt}"
        job.mkdir()
        (job / jobfiles.CONFIG).write_text(json.dumps({"model_dir": str(model), "snapshot": None,
                                                     "source": {"type": "split", "split": "test"}, "top_n": 5}))
        done = subprocess.run([sys.executable, "-m", "trainer.inference.job", jobfiles.CONFIG], cwd=job, timeout=120,
                              capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 0, done.stdout + done.stderr
        rows = json.loads((job / "evaluation" / "results.json").read_text())["rows"]
        assert len(rows) == test_per_class * 4 and all(row["top"] for row in rows)


def test_a_split_is_evaluated_alike_in_memory_and_streamed(dataset, model, monkeypatch):
    """A split whose pixels fit in ``SPLIT_BUDGET`` (1 GiB) is evaluated from
    memory, a larger one streamed. Lowered here to the test split's own
    size, and to one byte less."""
    loaded = load_model(model)
    pixels = DatasetInfo.load(dataset).counts["test"] * math.prod(DatasetInfo.load(dataset).image_shape)
    rows = {}
    for budget, kind in ((pixels, SplitData), (pixels - 1, StreamingSplit)):
        monkeypatch.setattr(classify, "SPLIT_BUDGET", budget)
        assert isinstance(load_split(dataset, "test", classify.SPLIT_BUDGET), kind)
        rows[kind] = evaluate_split(loaded, dataset, "test", batch_size=50)
    assert len(rows[SplitData]) == 120 and rows[SplitData] == rows[StreamingSplit]


@pytest.mark.parametrize("count", [64, 65], ids=["one-batch", "two-batches"])
def test_files_are_classified_once_each_on_each_side_of_a_batch(tmp_path, model, count):
    """An evaluation of files classifies them ``BATCH`` (64) at a time; 64
    files are one batch, 65 two, one file unreadable in either."""
    assert inference_job.BATCH == 64
    loaded = load_model(model)
    entries = []
    for number, (image, label) in enumerate(bar_images(count - 1, seed=5)):
        (tmp_path / f"{number}.png").write_bytes(image)
        entries.append(Entry(str(tmp_path / f"{number}.png"), f"{number}.png", label))
    entries.insert(count // 2, Entry(str(tmp_path / "missing.png"), "missing.png", 1))
    (tmp_path / "job").mkdir()
    (tmp_path / "out").mkdir()
    rows = inference_job.file_rows(loaded, entries, tmp_path / "out", inference_job.Progress(tmp_path / "job"))
    assert [row["index"] for row in rows] == list(range(count))
    assert [row["name"] for row in rows] == [entry.name for entry in entries]
    assert [row["top"] is None for row in rows] == [entry.name == "missing.png" for entry in entries]
    expected = evaluate(loaded, [(Path(entry.path), entry.label) for entry in entries], batch_size=count)
    assert [row["top"][0][0] if row["top"] else None for row in rows] == [
        row["top"][0]["index"] if row["top"] else None for row in expected]
    assert len(SplitReader(tmp_path / "out", IMAGES, "png", (28, 28, 1), ClassLabels())) == count
    done = [e["data"]["done"] for e in read_all(tmp_path / "job") if e["kind"] == "progress"]
    assert done == ([64] if count == 64 else [64, 65])


@pytest.mark.parametrize("wrong", [500, 501])
def test_the_report_keeps_the_most_confident_500_mistakes_and_counts_them_all(wrong):
    """``MISTAKES_SHOWN``: the report lists 500 mistakes at most, the most confident first."""
    rows = [{"index": i, "label": 0, "error": None, "top": [[1, round(0.5 + i / 2000, 6)], [0, 0.1]]}
            for i in range(wrong)] + [{"index": wrong, "label": 0, "error": None, "top": [[0, 0.9], [1, 0.1]]}]
    found = inference_job.page_report(rows, ["a", "b"], 2)
    assert found["mistakes_total"] == wrong and found["labelled"] == wrong + 1
    assert found["mistakes"] == list(range(wrong - 1, wrong - 501, -1))
