"""Semantic segmentation's evaluation report (``segmentation_report``), from
predictions known in advance: a network that answers, for each pixel, the
class its input's first channel holds. The figures are checked against
numpy's counts of the same masks, pixel by pixel."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
import torch
from PIL import Image

from trainer.segmentation.labels import IGNORE
from trainer.tasks import segmentation
from trainer.tasks.segmentation_report import WORST, split_report
from trainer.tasks.segmentation_training import Training, scores

CLASSES = ["background", "disc", "square"]


class Answers(torch.nn.Module):
    """Logits whose argmax is the class in the input's first channel."""

    def __init__(self) -> None:
        super().__init__()
        self.unused = torch.nn.Parameter(torch.zeros(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.one_hot(x[:, 0].long(), len(CLASSES)).permute(0, 3, 1, 2).float() * 5


def report_of(predicted: np.ndarray, truth: np.ndarray, batch: int = 3):
    """The report of images whose network's answers are ``predicted`` (N×H×W) and masks ``truth``."""
    x = torch.from_numpy(predicted).float()[:, None].repeat(1, 3, 1, 1)
    y = torch.from_numpy(truth)
    batches = [(x[start:start + batch], y[start:start + batch]) for start in range(0, len(x), batch)]
    seen = []
    report = split_report(Training(segmentation.TASK, len(CLASSES), {}), Answers(), batches, len(x), CLASSES,
                          [f"val #{i}" for i in range(len(x))], lambda done, total: seen.append((done, total)))
    assert seen[-1] == (len(x), len(x))
    return report


def decoded(png: str) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(png))))


def numpy_confusion(predicted: np.ndarray, truth: np.ndarray) -> np.ndarray:
    labelled = truth != IGNORE
    return np.bincount(truth[labelled].astype(int) * 3 + predicted[labelled], minlength=9).reshape(3, 3)


@pytest.fixture
def masks() -> tuple[np.ndarray, np.ndarray]:
    """Seven 6×5 images: random truth with an ignored border, predictions
    right on most pixels; image 4 wholly ignored, image 2 wholly right."""
    rng = np.random.default_rng(5)
    truth = rng.integers(0, 3, (7, 6, 5)).astype(np.uint8)
    truth[:, 0, :] = IGNORE
    predicted = np.where(rng.random(truth.shape) < 0.7, truth, rng.integers(0, 3, truth.shape)).astype(np.uint8)
    predicted[truth == IGNORE] = rng.integers(0, 3, int((truth == IGNORE).sum()))
    truth[4] = IGNORE
    predicted[2] = np.where(truth[2] == IGNORE, 0, truth[2])
    return predicted, truth


def test_the_splits_figures_and_each_classs_are_those_of_its_labelled_pixels(masks):
    predicted, truth = masks
    own = report_of(predicted, truth)
    report = own.report
    confusion = numpy_confusion(predicted, truth)
    assert report["layout"] == "masks" and report["classes"] == CLASSES and report["count"] == 7
    assert report["confusion"] == confusion.tolist()
    assert report["pixels"] == int((truth != IGNORE).sum()) and report["ignored"] == int((truth == IGNORE).sum())
    expected = scores(torch.from_numpy(confusion))
    for field in ("miou", "pixel_accuracy", "dice"):
        assert report[field] == pytest.approx(expected[field]) and own.summary[field] == report[field]
    for k, row in enumerate(report["per_class"]):
        hits, labelled, said = confusion[k, k], confusion[k].sum(), confusion[:, k].sum()
        assert row["class"] == CLASSES[k] and (row["pixels"], row["predicted"]) == (labelled, said)
        assert row["iou"] == pytest.approx(hits / (labelled + said - hits), abs=1e-4)
        assert row["dice"] == pytest.approx(2 * hits / (labelled + said), abs=1e-4)
        assert (row["precision"], row["recall"]) == (pytest.approx(hits / said, abs=1e-4),
                                                     pytest.approx(hits / labelled, abs=1e-4))


def test_a_class_in_neither_the_truth_nor_the_prediction_has_no_score():
    truth = np.zeros((1, 4, 4), np.uint8)
    truth[0, :2] = 1
    report = report_of(truth.copy(), truth).report
    square = report["per_class"][2]
    assert (square["pixels"], square["predicted"]) == (0, 0)
    assert square["iou"] is square["dice"] is square["precision"] is square["recall"] is None
    assert report["miou"] == 1.0 and report["worst"][0]["miou"] == 1.0


def test_each_images_row_and_the_worst_first_list_with_both_masks(masks):
    predicted, truth = masks
    own = report_of(predicted, truth)
    rows = own.rows
    assert [row["name"] for row in rows] == [f"val #{i}" for i in range(7)]
    for i, row in enumerate(rows):
        labelled = truth[i] != IGNORE
        wrong = int((predicted[i] != truth[i])[labelled].sum())
        assert (row["labelled"], row["wrong"], row["ignored"]) == (labelled.sum(), wrong, (~labelled).sum())
        if i == 4:
            assert row["miou"] is None and row["pixel_accuracy"] is None
            continue
        assert row["miou"] == pytest.approx(scores(torch.from_numpy(numpy_confusion(predicted[i], truth[i])))["miou"],
                                            abs=1e-4)
    assert rows[2]["miou"] == 1.0 and rows[2]["wrong"] == 0
    worst = own.report["worst"]
    assert own.report["worst_total"] == 6 and 4 not in [image["index"] for image in worst]
    assert [image["miou"] for image in worst] == sorted(row["miou"] for row in rows if row["miou"] is not None)
    for image in worst:
        i = image["index"]
        assert np.array_equal(decoded(image["truth"]), truth[i])
        assert np.array_equal(decoded(image["predicted"]), np.where(truth[i] == IGNORE, IGNORE, predicted[i]))
    header, *table = own.table
    assert header[:4] == ["index", "image", "miou", "pixel_accuracy"] and len(table) == 7
    assert table[4][2:4] == ["", ""] and table[2][2] == 1.0


@pytest.mark.parametrize("count", [WORST - 1, WORST, WORST + 9])
def test_the_worst_list_keeps_the_lowest_over_every_batch(count):
    rng = np.random.default_rng(count)
    truth = rng.integers(0, 3, (count, 4, 4)).astype(np.uint8)
    predicted = np.where(rng.random(truth.shape) < rng.random((count, 1, 1)), truth, (truth + 1) % 3).astype(np.uint8)
    own = report_of(predicted, truth, batch=5)
    kept = sorted((row["miou"], row["index"]) for row in own.rows)[:WORST]
    assert [(image["miou"], image["index"]) for image in own.report["worst"]] == kept
    assert own.report["worst_total"] == count and len(own.report["worst"]) == min(count, WORST)
