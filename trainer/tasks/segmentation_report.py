"""Semantic segmentation's evaluation report of a split: the segmenter run
over it as validation runs it (the training side's ``predict`` and
``Evaluation``: eval mode, the job's normalisation, the ignore value left
out), then

- the split's figures: the loss, mIoU, pixel accuracy and Dice, as the
  live charts compute them (``segmentation_training.scores``), and the
  pixel confusion matrix (rows the true class, columns the predicted one,
  labelled pixels alone);
- per class: its labelled pixels and the pixels predicted as it, IoU, Dice,
  precision and recall (None for a class absent from both, which says
  nothing);
- per image (the rows and the table): its own mIoU over the classes in its
  truth or its prediction, its pixel accuracy, and its labelled, wrong and
  ignored pixels; an image with no labelled pixel has no score;
- the images worst first by their mIoU, each with its true and predicted
  masks (PNGs of class indices, ``IGNORE`` where the truth ignores a pixel),
  from which the page draws the error map (right, wrong, ignored).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from trainer.datastore import png_bytes
from trainer.segmentation.labels import IGNORE
from trainer.tta import predictor

from .training import SplitReport

if TYPE_CHECKING:
    from .segmentation_training import Training

WORST = 48  # images in the worst-first list, each with its two masks
DIGITS = 4  # of the shares written


def image_confusions(predicted: torch.Tensor, truth: torch.Tensor, classes: int) -> torch.Tensor:
    """B×C×C pixel confusion matrices of a batch's B×H×W predicted and true
    masks (rows the true class), the ignored pixels left out."""
    batch = truth.shape[0]
    labelled = truth != IGNORE
    where = (torch.arange(batch, device=truth.device)[:, None, None] * classes + truth.long()) * classes \
        + predicted.long()
    counts = torch.bincount(where[labelled], minlength=batch * classes * classes)
    return counts.reshape(batch, classes, classes)


def share(part: float, whole: float) -> float | None:
    return round(part / whole, DIGITS) if whole else None


def image_miou(confusion: np.ndarray) -> float | None:
    """The mean IoU of one image over the classes in its truth or its
    prediction; None when no pixel of it is labelled."""
    hits = np.diag(confusion).astype(np.float64)
    truth, predicted = confusion.sum(axis=1), confusion.sum(axis=0)
    seen = (truth + predicted) > 0
    if not seen.any():
        return None
    return round(float((hits[seen] / (truth + predicted - hits)[seen]).mean()), DIGITS)


def per_class(confusion: np.ndarray, names: list[str]) -> list[dict[str, Any]]:
    """Each class's pixels, IoU, Dice, precision and recall (see the module)."""
    table = []
    for k, name in enumerate(names):
        hits, truth, predicted = int(confusion[k, k]), int(confusion[k].sum()), int(confusion[:, k].sum())
        table.append({"class": name, "pixels": truth, "predicted": predicted,
                      "iou": share(hits, truth + predicted - hits), "dice": share(2 * hits, truth + predicted),
                      "precision": share(hits, predicted), "recall": share(hits, truth)})
    return table


def mask_png(mask: np.ndarray) -> str:
    """An H×W mask of class indices as a base64 grayscale PNG."""
    return base64.b64encode(png_bytes(mask[:, :, None])).decode("ascii")


def split_report(training: Training, model: torch.nn.Module, batches: Iterable[tuple[torch.Tensor, torch.Tensor]],
                 total: int, names: list[str], image_names: Sequence[str],
                 progress: Callable[[int, int], None]) -> SplitReport:
    """The report of the ``total`` images that ``batches`` give (in order,
    unshuffled), named ``image_names``; see the module's docstring."""
    classes = len(names)
    evaluation = training.evaluation(next(model.parameters()).device)
    rows: list[dict[str, Any]] = []
    candidates: list[tuple[float, int, np.ndarray, np.ndarray]] = []
    with torch.no_grad():
        for x, y in batches:
            logits = training.predict(model, x, y, predictor("none"))
            evaluation.update(logits, y)
            predicted = logits.argmax(dim=1)
            confusions = image_confusions(predicted, y, classes).cpu().numpy()
            predicted, truth = predicted.to(torch.uint8).cpu().numpy(), y.cpu().numpy()
            for confusion, mine, true in zip(confusions, predicted, truth, strict=True):
                index = len(rows)
                labelled = int(confusion.sum())
                right = int(np.trace(confusion))
                miou = image_miou(confusion)
                rows.append({"index": index, "name": image_names[index], "miou": miou,
                             "pixel_accuracy": share(right, labelled), "labelled": labelled,
                             "wrong": labelled - right, "ignored": int(true.size - labelled)})
                if miou is not None:
                    candidates.append((miou, index, np.where(true == IGNORE, IGNORE, mine), true))
            candidates = sorted(candidates, key=lambda c: (c[0], c[1]))[:WORST]
            progress(len(rows), total)
    confusion = evaluation.confusion.compute().cpu().numpy().astype(np.int64)
    figures = evaluation.compute()
    scored = [row for row in rows if row["miou"] is not None]
    worst = [{**rows[index], "truth": mask_png(true), "predicted": mask_png(mine)}
             for _, index, mine, true in candidates]
    summary = {"count": len(rows), "miou": figures["miou"], "pixel_accuracy": figures["pixel_accuracy"],
               "dice": figures["dice"]}
    report = {"layout": "masks", "classes": names, **summary, "loss": figures["loss"], "ignore": IGNORE,
              "pixels": int(confusion.sum()), "ignored": sum(row["ignored"] for row in rows),
              "confusion": confusion.tolist(), "per_class": per_class(confusion, names),
              "worst": worst, "worst_total": len(scored)}
    header = ["index", "image", "miou", "pixel_accuracy", "labelled_pixels", "wrong_pixels", "ignored_pixels"]
    table = [[row["index"], row["name"], "" if row["miou"] is None else row["miou"],
              "" if row["pixel_accuracy"] is None else row["pixel_accuracy"], row["labelled"], row["wrong"],
              row["ignored"]] for row in rows]
    return SplitReport(report=report, rows=rows, table=[header, *table], summary=summary)
