"""Object detection's evaluation report of a split: the detector run over
it as validation runs it (the training side's ``predict`` and
``Evaluation``: eval mode, the job's normalisation, difficult boxes and
ignore regions as crowds), then

- the figures, all from torchmetrics: mAP@0.5, mAP@0.5:0.95 and per class
  AP@0.5:0.95 (``map_per_class``), AP@0.5 and the precision–recall curve
  at IoU 0.5 (its ``precision`` array over its 101 recall thresholds, every
  area, 100 detections an image; AP@0.5 is that curve's mean, as COCO
  computes it);
- the listings, from a greedy match of each image's detections to its
  boxes, class by class, highest score first, at IoU 0.5: a detection is
  ``matched`` (a box), not (a false positive) or None (on a difficult box
  or an ignore region, covering half of the detection: scored as neither,
  as COCO scores a crowd). At the evaluation's score threshold (by default
  ``SCORE_THRESHOLD``): the false positives scoring at least it, highest
  first, the boxes no detection of at least it matched (largest first), and
  the images worst first by those misses and false positives. A greedy
  match by score gives each detection the same match whether or not lower
  scores are counted, so one match serves every threshold, and the
  precision and recall at it are read off torchmetrics' curves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import torch
from torchvision.ops import box_area, box_iou

from trainer.detection.targets import Boxes
from trainer.tta import predictor

from .detection import SCORE_THRESHOLD
from .training import SplitReport

IOU = 0.5
LISTED = 200  # false positives and missed boxes the report lists
WORST = 48  # images in the worst-first list
DIGITS = 4  # of the scores and boxes written
CURVE_POINTS = 101  # torchmetrics' (COCO's) recall thresholds


def box_overlaps(found: dict[str, Any], truth: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
    """Each detection's IoU with each ground-truth row (D×T) and the share of
    the detection the row covers (D×T), by their boxes."""
    iou = box_iou(found["boxes"], truth["boxes"])
    areas = box_area(found["boxes"]).unsqueeze(1)
    inter = iou * (areas + box_area(truth["boxes"]).unsqueeze(0)) / (1 + iou)
    return iou, inter / areas.clamp(min=1e-9)


def match(found: dict[str, Any], truth: dict[str, Any],
          overlaps: Callable[[dict[str, Any], dict[str, Any]], tuple[torch.Tensor, torch.Tensor]] = box_overlaps,
          ) -> tuple[list[bool | None], list[int | None]]:
    """Greedy, by score: per detection True (matched a box), False or None
    (on a crowd); per ground-truth row the detection that matched it
    (crowds: None). ``overlaps`` measures them (``box_overlaps``; an
    instance segmentation's, by their masks)."""
    order = torch.argsort(found["scores"], descending=True, stable=True).tolist()
    crowd = truth["iscrowd"].bool()
    iou, over_detection = overlaps(found, truth)
    owner: list[int | None] = [None] * len(truth["labels"])
    matched: list[bool | None] = [False] * len(found["labels"])
    for d in order:
        same = truth["labels"] == found["labels"][d]
        free = same & ~crowd & torch.tensor([o is None for o in owner], dtype=torch.bool)
        candidates = torch.where(free, iou[d], torch.full_like(iou[d], -1.0))
        if len(candidates) and float(candidates.max()) >= IOU:
            owner[int(candidates.argmax())], matched[d] = d, True
        elif bool((same & crowd & (over_detection[d] >= IOU)).any()):
            matched[d] = None
    return matched, owner


def _box(values: torch.Tensor) -> list[float]:
    return [round(float(v), DIGITS) for v in values]


def _value(number: torch.Tensor | float) -> float | None:
    """torchmetrics' -1 (nothing to score) as None."""
    number = float(number)
    return None if number < 0 else number


def per_class(result: dict[str, Any], names: list[str], boxes: list[int],
              detections: list[int]) -> tuple[dict[str, dict[str, Any]], list[list[float | None] | None]]:
    """{class: {"boxes", "detections", "ap50", "ap"}} and each class's
    precision at the 101 recall thresholds (None where a class has no box)."""
    labels = [int(label) for label in result["classes"].reshape(-1).tolist()]
    curves: list[list[float | None] | None] = [None] * len(names)
    table = {name: {"boxes": boxes[k], "detections": detections[k], "ap50": None, "ap": None}
             for k, name in enumerate(names)}
    ap = result["map_per_class"].reshape(-1)
    for place, label in enumerate(labels):
        k = label - 1
        if not 0 <= k < len(names):
            continue
        curve = result["precision"][0, :, place, 0, -1]
        if float(curve.min()) >= 0:
            curves[k] = [round(float(p), DIGITS) for p in curve]
            table[names[k]]["ap50"] = float(curve.mean())
        table[names[k]]["ap"] = _value(ap[place])
    return table, curves


def boxes_shown(stored: np.ndarray) -> list[dict[str, Any]]:
    """An image's stored rows as the report draws its truth (``Boxes.shown``)."""
    return Boxes().shown(stored[None], 0)


def split_report(training: Any, model: torch.nn.Module, batches: Iterable[tuple[torch.Tensor, torch.Tensor]],
                 total: int, names: list[str], image_names: Sequence[str], progress: Callable[[int, int], None],
                 threshold: float = SCORE_THRESHOLD, overlaps: Callable[..., tuple[torch.Tensor, torch.Tensor]] =
                 box_overlaps, truth_shown: Callable[[np.ndarray], list[dict[str, Any]]] = boxes_shown,
                 extra: tuple[str, ...] = ()) -> SplitReport:
    """The report of the ``total`` images that ``batches`` give (in order,
    unshuffled), named ``image_names``; see the module's docstring. An
    instance segmentation's report is this one with its detections matched
    by their masks (``overlaps``), its truth drawn as boxes round its
    objects (``truth_shown`` of an image's stored target) and its mAP the
    masks' (its evaluation's ``detailed``), with the ``extra`` figures its
    ``detailed`` gives beside them (its boxes' ``box_map50``) in the report."""
    evaluation = training.evaluation(next(model.parameters()).device)
    shown: list[list[dict[str, Any]]] = []
    with torch.no_grad():
        for x, y in batches:
            evaluation.update(training.predict(model, x, y, predictor("none")), y)
            shown += [truth_shown(row) for row in y.cpu().numpy()]
            progress(len(shown), total)
    result = evaluation.detailed()
    loss = float(evaluation.loss.compute())
    rows, false_positives, missed, images = [], [], [], []
    boxes_of, detections_of = [0] * len(names), [0] * len(names)
    for index, (found, truth) in enumerate(zip(evaluation.found, evaluation.truth, strict=True)):
        name = image_names[index]
        matched, owner = match(found, truth, overlaps)
        image_rows = []
        for box, score, label, hit in zip(found["boxes"], found["scores"].tolist(), found["labels"].tolist(), matched,
                                          strict=True):
            row = {"index": index, "name": name, "class": label - 1, "score": round(score, DIGITS), "box": _box(box),
                   "matched": hit}
            image_rows.append(row)
            detections_of[label - 1] += 1
        rows += image_rows
        strong = [row for row in image_rows if row["score"] >= threshold]
        misses = []
        for t, (box, label, crowd) in enumerate(zip(truth["boxes"], truth["labels"].tolist(),
                                                    truth["iscrowd"].tolist(), strict=True)):
            if crowd:
                continue
            boxes_of[label - 1] += 1
            if owner[t] is None or image_rows[owner[t]]["score"] < threshold:
                misses.append({"index": index, "name": name, "class": label - 1, "box": _box(box)})
        wrong = [row for row in strong if row["matched"] is False]
        false_positives += wrong
        missed += misses
        images.append({"index": index, "name": name, "misses": len(misses), "false_positives": len(wrong),
                       "truth": shown[index],
                       "detections": strong})
    table, curves = per_class(result, names, boxes_of, detections_of)
    from .detection_training import at_score  # (that module imports this one)

    precision, recall = at_score(result, threshold)  # as the training's charts read them
    false_positives.sort(key=lambda row: -row["score"])
    missed.sort(key=lambda row: -(row["box"][2] - row["box"][0]) * (row["box"][3] - row["box"][1]))
    worst = sorted((image for image in images if image["misses"] or image["false_positives"]),
                   key=lambda image: (-(image["misses"] + image["false_positives"]), image["index"]))
    report = {"layout": "boxes", "classes": names, "count": len(images), "detections": len(rows),
              "boxes": sum(boxes_of), "iou": IOU, "score_threshold": threshold, "loss": loss,
              "map50": float(result["map_50"]), "map": float(result["map"]), "precision": precision,
              "recall": recall, "per_class": table,
              "pr_curves": {"recall": [round(r / (CURVE_POINTS - 1), 2) for r in range(CURVE_POINTS)],
                            "precision": dict(zip(names, curves, strict=True))},
              "false_positives": false_positives[:LISTED], "false_positives_total": len(false_positives),
              "missed": missed[:LISTED], "missed_total": len(missed),
              "worst": worst[:WORST], "worst_total": len(worst),
              **{name: float(result[name]) for name in extra}}
    header = ["index", "image", "class", "score", "x1", "y1", "x2", "y2", "matched"]
    table_rows = [[row["index"], row["name"], names[row["class"]], row["score"], *row["box"],
                   "" if row["matched"] is None else int(row["matched"])] for row in rows]
    summary = {"count": len(images), "map50": report["map50"], "map": report["map"], "precision": precision,
               "recall": recall}
    return SplitReport(report=report, rows=rows, table=[header, *table_rows], summary=summary)
