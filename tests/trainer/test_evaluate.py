"""Classify many and evaluate: the report's measures on a small set whose
answers are known exactly, and a real run over files and a dataset split."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.inferfiles import bar_images, trained_job
from tests.trainfiles import make_dataset
from trainer.inference import evaluate, evaluate_split, load_model
from trainer.inference.report import report

CLASSES = ["cat", "dog", "fox"]
ROOT = Path(__file__).resolve().parents[2]


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


def test_classify_many_and_evaluate_on_a_trained_model(tmp_path, dataset):
    loaded = load_model(trained_job(tmp_path / "job", dataset, epochs=2))
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
        (job / "config.json").write_text(json.dumps({"model_dir": str(model), "snapshot": None,
                                                     "source": {"type": "split", "split": "test"}, "top_n": 5}))
        done = subprocess.run([sys.executable, "-m", "trainer.inference.job", "config.json"], cwd=job, timeout=120,
                              capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 0, done.stdout + done.stderr
        rows = json.loads((job / "evaluation" / "results.json").read_text())["rows"]
        assert len(rows) == test_per_class * 4 and all(row["top"] for row in rows)
