"""The evaluation job's report of a detector: a Faster R-CNN trained two
epochs on the rectangles, evaluated by the job itself on its validation
split; its figures checked against torchmetrics given the detector's own
detections, its listings against its rows, and the greedy match on boxes
made by hand."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import torch
from torchmetrics.detection import MeanAveragePrecision

from tests.detectionfiles import built_rectangles, trained_detector
from trainer import eventkinds, eventlog
from trainer.detection.targets import DIFFICULT, FLAGS
from trainer.evaluation_files import CSV, OUTPUT, REPORT, RESULTS
from trainer.inference.classify import split_batches
from trainer.inference.job import main
from trainer.inference.model import load_model
from trainer.tasks.detection_report import match
from trainer.tasks.detection_training import scored


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory) -> tuple[Path, Path]:
    """The model's folder and the evaluation's, done."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        root = tmp_path_factory.mktemp("detector")
        dataset = built_rectangles(root, count=40)
        trained_detector(root / "model", dataset, epochs=2, lr=0.0003, val_interval=2.0, snapshot_interval=2.0)
        job = root / "evaluation"
        job.mkdir()
        config = {"model_dir": str(root / "model"), "snapshot": None, "source": {"type": "split", "split": "val"},
                  "roots": [], "top_n": 5}
        (job / "config.json").write_text(json.dumps(config))
        assert main(str(job / "config.json")) == 0, (job / "events.jsonl").read_text()[-2000:]
    finally:
        torch.set_num_threads(threads)
    return root / "model", job / OUTPUT


def read(folder: Path, name: str):
    return json.loads((folder / name).read_text())


def test_the_report_gives_torchmetrics_map_of_the_detectors_own_detections(evaluated):
    model_dir, output = evaluated
    report = read(output, REPORT)
    loaded = load_model(model_dir)
    batches, total = split_batches(loaded, json.loads((model_dir / "config.json").read_text())["dataset_dir"], "val")
    metric = MeanAveragePrecision(box_format="xyxy", iou_type="bbox", backend="faster_coco_eval")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the job ran: another thread count sums in another order
    try:
        with torch.no_grad():
            for x, y in batches:
                metric.update(loaded.model(list(x)), [scored(rows, 2) for rows in y.float()])
    finally:
        torch.set_num_threads(threads)
    expected = metric.compute()
    assert report["count"] == total == 10
    assert report["map50"] == pytest.approx(float(expected["map_50"]), abs=1e-6)
    assert report["map"] == pytest.approx(float(expected["map"]), abs=1e-6)
    assert list(report["per_class"]) == report["classes"] == ["Car", "Cyclist"]
    assert sum(c["boxes"] for c in report["per_class"].values()) == report["boxes"] == 10
    curves = report["pr_curves"]
    assert len(curves["recall"]) == 101 and curves["recall"][0] == 0 and curves["recall"][-1] == 1
    assert all(len(curve) == 101 for curve in curves["precision"].values())
    ap50 = [c["ap50"] for c in report["per_class"].values()]
    assert sum(ap50) / len(ap50) == pytest.approx(report["map50"], abs=1e-6), "AP@0.5 is each class's curve's mean"
    result = [e for e in eventlog.read_all(output.parent) if e["kind"] == eventkinds.RESULT][-1]["data"]
    assert result["map50"] == report["map50"] and result["count"] == 10


def test_the_listings_follow_the_rows_and_the_csv_holds_them(evaluated):
    _, output = evaluated
    report, rows = read(output, REPORT), read(output, RESULTS)["rows"]
    assert report["detections"] == len(rows) > 0
    threshold = report["score_threshold"]
    unmatched = sorted((row["score"] for row in rows if row["matched"] is False and row["score"] >= threshold),
                       reverse=True)
    assert [fp["score"] for fp in report["false_positives"]] == unmatched[:len(report["false_positives"])]
    assert report["false_positives_total"] == len(unmatched)
    badness = [image["misses"] + image["false_positives"] for image in report["worst"]]
    assert badness == sorted(badness, reverse=True) and all(badness)
    for image in report["worst"]:
        mine = [row for row in rows if row["index"] == image["index"]]
        assert image["false_positives"] == sum(row["matched"] is False and row["score"] >= threshold for row in mine)
        assert image["detections"] == [row for row in mine if row["score"] >= threshold]
        assert len(image["truth"]) == 1 and image["misses"] <= 1
    assert report["missed_total"] == sum(image["misses"] for image in report["worst"])
    with open(output / CSV, newline="", encoding="utf-8") as handle:
        table = list(csv.reader(handle))
    assert table[0] == ["index", "image", "class", "score", "x1", "y1", "x2", "y2", "matched"]
    assert [[int(r[0]), r[1], r[2], float(r[3]), *map(float, r[4:8]), r[8]] for r in table[1:]] == [
        [row["index"], row["name"], report["classes"][row["class"]], row["score"], *row["box"],
         "" if row["matched"] is None else str(int(row["matched"]))] for row in rows]


def test_the_greedy_match_takes_the_highest_score_first_and_leaves_crowds_unscored():
    rows = torch.tensor([[0, 0, 10, 10, 0, 0], [20, 20, 30, 30, 0, DIFFICULT], [40, 0, 50, 10, 1, 0]],
                        dtype=torch.float32)
    truth = scored(rows, 2)
    assert truth["iscrowd"].tolist() == [0, 1, 0] and int(rows[1, FLAGS]) == DIFFICULT
    found = {"boxes": torch.tensor([[0, 0, 10, 9], [0, 0, 10, 10], [21, 21, 30, 30], [40, 0, 50, 10], [60, 0, 70, 9]],
                                   dtype=torch.float32),
             "scores": torch.tensor([0.6, 0.9, 0.8, 0.7, 0.95]), "labels": torch.tensor([1, 1, 1, 1, 2])}
    matched, owner = match(found, truth)
    # The 0.9 takes the car before the 0.6 can; the 0.8 sits on a difficult
    # car; the 0.7 car is on a cyclist's box; the 0.95 cyclist on nothing.
    assert matched == [False, True, None, False, False]
    assert owner == [1, None, None]
