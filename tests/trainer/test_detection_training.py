"""Detection trained by the shared loop, in this process, on the CPU: a
tiny dataset of coloured rectangles on noise, built by the dataset build
from KITTI folders, so its boxes are exact; boxes flipped with the pixels;
augmentation a detector cannot take refused; snapshots and resuming."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from tests.detectionfiles import COLOURS, CPU, NETWORK, SIZE, built_rectangles, detection_config, trained_detector
from trainer import checkpoint, eventlog, jobfiles
from trainer import eventkinds as kinds
from trainer.detection.targets import CLASS, DIFFICULT, IGNORE
from trainer.tasks import detection
from trainer.tasks.detection_training import Training, flip_boxes, learned, scored
from trainer.train import Run, TrainingError

DETECTION = detection.TASK


@pytest.fixture(scope="module")
def boxes(tmp_path_factory) -> Path:
    """The built dataset: 96 training and 32 validation images."""
    return built_rectangles(tmp_path_factory.mktemp("rectangles"))


@pytest.fixture(autouse=True)
def one_thread():
    """One thread: the detectors' small convolutions run faster so than
    fighting over a busy machine's cores."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def run_here(folder: Path, dataset: Path, **overrides) -> Run:
    return trained_detector(folder, dataset, **overrides)


def of_kind(folder: Path, kind: str) -> list[dict]:
    return [event["data"] for event in eventlog.Reader(folder).read() if event["kind"] == kind]


def test_a_horizontal_flip_moves_the_boxes_exactly_where_the_pixels_go():
    from trainer.augment import Augment, Moved, take
    from trainer.tasks.training import training_for

    width, height = 20, 12
    rows = torch.tensor([[[2, 3, 9, 10, 0, 0], [12, 0, 20, 5, 1, DIFFICULT]],
                         [[0, 1, 7, 12, 1, 0], [0, 0, 0, 0, -1, 0]]], dtype=torch.float32)
    pixels = torch.zeros(2, height, width, 1, dtype=torch.uint8)
    for image, (x1, y1, x2, y2, *_) in ((0, rows[0, 0]), (1, rows[1, 0])):
        pixels[image, int(y1):int(y2), int(x1):int(x2)] = 255
    training = training_for(DETECTION, 2, {"flip": "horizontal"})
    augment = Augment({"flip": "horizontal"}, 11, "cpu")
    for _ in range(4):  # random flips: both images flipped and not, over the draws
        positions = augment.positions(2, height, width)
        moved = training.follow(rows, Moved(positions))
        placed = take(pixels, None, positions)[..., 0]
        for image in range(2):
            ys, xs = torch.nonzero(placed[image], as_tuple=True)
            assert moved[image, 0, :4].tolist() == [xs.min(), ys.min(), xs.max() + 1, ys.max() + 1]
    assert flip_boxes(rows, torch.tensor([True, False]), width)[0].tolist() == [
        [11, 3, 18, 10, 0, 0], [0, 0, 8, 5, 1, DIFFICULT]]  # x1' = W - x2, x2' = W - x1; classes and flags kept
    assert torch.equal(training.follow(rows, Moved(None)), rows)


def test_a_detector_learns_from_its_objects_and_is_scored_with_difficult_boxes_and_ignore_regions_as_crowds():
    rows = torch.tensor([[[1, 2, 5, 6, 0, 0], [2, 2, 4, 4, 1, DIFFICULT], [0, 0, 9, 9, -1, IGNORE],
                          [3, 3, 8, 8, 1, IGNORE], [0, 0, 0, 0, -1, 0]]], dtype=torch.float32)
    (taught,) = learned(rows)
    assert taught["boxes"].tolist() == [[1, 2, 5, 6]] and taught["labels"].tolist() == [1]
    truth = scored(rows[0], classes=2)
    assert truth["boxes"].tolist() == [[1, 2, 5, 6], [2, 2, 4, 4], [3, 3, 8, 8], [0, 0, 9, 9], [0, 0, 9, 9]]
    assert truth["labels"].tolist() == [1, 2, 2, 1, 2]  # an ignore region of every class, once per class
    assert truth["iscrowd"].tolist() == [0, 1, 1, 1, 1]


@pytest.mark.parametrize("option, value", [("translate", 2), ("flip", "vertical"), ("color_jitter", 0.2),
                                           ("tta", "mirror")])
def test_a_detection_run_refuses_augmentation_that_would_not_move_its_boxes(tmp_path, boxes, option, value):
    with pytest.raises(TrainingError) as refused:
        Run(detection_config(boxes, **{option: value}), tmp_path, CPU)
    assert str(refused.value) == (f"A detection run cannot use {option} = {value} yet: its only augmentation is a "
                                  "horizontal flip, which moves the boxes with the pixels.")


def test_a_detection_run_refuses_compile_and_augmentation_together_each_with_its_reason(tmp_path, boxes):
    with pytest.raises(TrainingError) as refused:
        Run(detection_config(boxes, rotation=10.0, compile=True), tmp_path, CPU)
    assert str(refused.value) == ("A detection run cannot use rotation = 10.0, compile = True yet: its only "
                                  "augmentation is a horizontal flip, which moves the boxes with the pixels; "
                                  "torch.compile recompiles a detector at every batch (its proposals change in "
                                  "number), which costs far more than it saves.")


def detections_of(seed: int, images: int) -> tuple[list[tuple[list[dict], torch.Tensor]], list[torch.Tensor]]:
    """Batches of a detector's outputs (near-miss boxes of random scores, one
    batch loss each) and their targets: one object an image, sometimes a
    difficult one."""
    generator = torch.Generator().manual_seed(seed)
    batches, targets = [], []
    for size in (images // 2, images - images // 2):
        corner = torch.randint(0, 20, (size, 2), generator=generator).float()
        rows = torch.cat([corner, corner + 10, torch.randint(0, 2, (size, 1), generator=generator).float(),
                          (torch.rand(size, 1, generator=generator) < 0.2).float() * DIFFICULT], 1)[:, None]
        found = [{"boxes": torch.stack([row[0, :4] + torch.randn(4, generator=generator), row[0, :4] + 6]),
                  "scores": torch.rand(2, generator=generator), "labels": torch.tensor([int(row[0, CLASS]) + 1, 1])}
                 for row in rows]
        batches.append((found, torch.rand((), generator=generator)))
        targets.append(rows)
    return batches, targets


def _evaluate_on_rank(rank: int, port: int, shards: list, out: dict) -> None:
    import os

    import torch.distributed as dist

    from trainer.tasks.training import training_for

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    try:
        evaluation = training_for(DETECTION, 2, {}).evaluation(torch.device("cpu"))
        batches, targets = shards[rank]
        for outputs, rows in zip(batches, targets, strict=True):
            evaluation.update(outputs, rows)
        out[rank] = evaluation.compute()
    finally:
        dist.destroy_process_group()


def test_two_processes_with_uneven_shards_both_get_the_map_of_the_whole_split():
    import socket

    import torch.multiprocessing as mp

    from trainer.tasks.training import training_for

    shards = [detections_of(1, 9), detections_of(2, 4)]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = mp.Manager().dict()
    mp.spawn(_evaluate_on_rank, args=(port, shards, out), nprocs=2)
    alone = training_for(DETECTION, 2, {}).evaluation(torch.device("cpu"))
    for batches, targets in shards:
        for outputs, rows in zip(batches, targets, strict=True):
            alone.update(outputs, rows)
    expected = alone.compute()
    assert 0 < expected["map"] < expected["map50"] < 1
    assert out[0] == pytest.approx(expected, abs=1e-6) and out[1] == out[0]


@pytest.mark.timeout(900)  # about 30 CPU-seconds: 300 s and more of wall time beside the suite's other processes
def test_a_stopped_detection_run_resumes_from_its_checkpoint_to_the_uninterrupted_end(tmp_path, boxes):
    options = {"epochs": 1, "batch_size": 16, "flip": "horizontal", "val_interval": 1.0, "snapshot_interval": 0.5}
    whole = tmp_path / "whole"
    run_here(whole, boxes, **options)
    stopped = tmp_path / "stopped"
    stopped.mkdir()
    run = Run(detection_config(boxes, **options), stopped, CPU)
    step = run.step

    def then_stop(*args, **kwargs):
        done = step(*args, **kwargs)
        run.stop_requested = run.progress.step == 4  # past the first snapshot, before the second of 6 steps
        return done

    run.step = then_stop
    assert run.train() == {} and not of_kind(stopped, kinds.RESULT)
    assert checkpoint.load(stopped / jobfiles.LAST_CHECKPOINT)["progress"]["step"] == 4
    Run(detection_config(boxes, **options), stopped, CPU).train()

    assert [event["step"] for event in of_kind(stopped, kinds.RESUME)] == [4]
    steps = [t["step"] for t in of_kind(stopped, kinds.TRAIN)]
    assert steps == sorted(set(steps)) and steps[-1] == 6
    (validation,), (uninterrupted,) = of_kind(stopped, kinds.VAL), of_kind(whole, kinds.VAL)
    assert validation == pytest.approx(uninterrupted, rel=1e-5), "as without the stop"
    assert of_kind(stopped, kinds.RESULT)[-1]["final"] == pytest.approx(of_kind(whole, kinds.RESULT)[-1]["final"],
                                                                       rel=1e-5)
    assert sorted(path.name for path in (stopped / jobfiles.CHECKPOINTS).iterdir()) == [
        "best.pt", "epoch-0.50.pt", "epoch-1.pt", "last.pt"]
    exported = checkpoint.load(stopped / jobfiles.EXPORTED_MODEL)
    assert exported["classes"] == list(COLOURS) and exported["network"] == NETWORK
    detector = run.task_training.build(NETWORK, 3, len(COLOURS), SIZE, SIZE)
    detector.load_state_dict(exported["model"])  # every tensor of the network, nothing else


# Faster R-CNN MobileNetV3 from scratch: 72 steps of 8 images take about a
# minute on a loaded 2-core machine (one thread) and reach an mAP@0.5 of
# 0.0123 on the validation split (0.0022 at epoch 3, about 0.003 untrained;
# 8 epochs reach 0.03 to 0.11 depending on the options): a detector learns,
# slowly, far from a useful mAP at this budget. The test asks half the
# measured value, and that it rose.
LEARNING = {"epochs": 6, "lr": 0.0003, "flip": "horizontal", "val_interval": 3.0, "snapshot_interval": 6.0}
LEARNED_MAP50 = 0.006


@pytest.mark.timeout(900)  # about 30 CPU-seconds: 300 s and more of wall time beside the suite's other processes
def test_a_detector_learns_the_rectangles_reporting_its_loss_components_and_map(tmp_path, boxes):
    folder = tmp_path / "run"
    run_here(folder, boxes, **LEARNING)
    train = of_kind(folder, kinds.TRAIN)
    for event in train:
        parts = event["components"]
        assert set(parts) == {"loss_classifier", "loss_box_reg", "loss_objectness", "loss_rpn_box_reg"}
        assert sum(parts.values()) == pytest.approx(event["loss"], rel=1e-4)
    first, last = train[0]["loss"], [t["loss"] for t in train if t["epoch"] > LEARNING["epochs"] - 1]
    assert sum(last) / len(last) < 0.7 * first, (first, last)
    validations = of_kind(folder, kinds.VAL)
    assert [v["epoch"] for v in validations] == [3, 6]
    assert validations[1]["loss"] < validations[0]["loss"]
    assert all(set(v) == {"step", "epoch", "loss", "map50", "map", "precision", "recall"} for v in validations)
    assert all(0 <= v["precision"] <= 1 and 0 <= v["recall"] <= 1 for v in validations)
    assert validations[-1]["map50"] >= max(LEARNED_MAP50, 2 * validations[0]["map50"]), validations
    assert 0 < validations[-1]["map"] < validations[-1]["map50"]
    bests = of_kind(folder, kinds.BEST)  # chosen by mAP@0.5, not by the loss
    assert {best["metric"] for best in bests} == {"val_map50"}
    assert bests[-1]["value"] == max(v["map50"] for v in validations)


def test_a_detector_trains_in_bf16_mixed_precision_as_the_gpu_check_runs_it(tmp_path):
    """bf16 autocast on the CPU: the same autocast regions (torchvision's
    RoI Align included) as on a GPU, whose figure ``bench/gpu_check.py`` takes.
    On 16 images (two steps): the CPU's bf16 kernels are emulated, and an
    epoch of the module's 96 outlasted the suite's limit on a busy machine."""
    folder = tmp_path / "bf16"
    run_here(folder, built_rectangles(tmp_path / "few", count=20), epochs=1, precision="bf16")
    train = of_kind(folder, kinds.TRAIN)
    assert train and all(math.isfinite(event["loss"]) for event in train)
    result = of_kind(folder, kinds.RESULT)[-1]
    assert set(result["final"]) == {"val_loss", "val_map50", "val_map", "val_precision", "val_recall"}
    assert math.isfinite(result["final"]["val_loss"])


def test_precision_and_recall_at_a_score_are_read_off_the_metrics_own_curves():
    """Class 1: two objects, found at scores 0.9 and 0.4; class 2: a detection
    and no object (left out); class 3: an object never found."""
    from torchmetrics.detection import MeanAveragePrecision

    from trainer.tasks.detection_training import at_score

    metric = MeanAveragePrecision(box_format="xyxy", iou_type="bbox", backend="faster_coco_eval", extended_summary=True)
    metric.update([{"boxes": torch.tensor([[0, 0, 10, 10.0], [20, 20, 30, 30], [0, 0, 5, 5]]),
                    "scores": torch.tensor([0.9, 0.4, 0.7]), "labels": torch.tensor([1, 1, 2])}],
                  [{"boxes": torch.tensor([[0, 0, 10, 10.0], [20, 20, 30, 30], [50, 50, 60, 60]]),
                    "labels": torch.tensor([1, 1, 3])}])
    result = metric.compute()
    assert at_score(result, 0.5) == (0.5, 0.25)  # class 1: precision 1, recall 1/2; class 3: 0, 0
    assert at_score(result, 0.3) == (0.5, 0.5)  # class 1 finds both
    assert at_score(result, 0.95) == (0.0, 0.0)


def test_detections_scored_above_every_hit_give_no_precision():
    """One object, a false detection at 0.8 and the hit at 0.6: at 0.7 only the
    false one is kept, so precision and recall are both 0, not the curve's
    interpolated precision at recall 0."""
    from torchmetrics.detection import MeanAveragePrecision

    from trainer.tasks.detection_training import at_score

    metric = MeanAveragePrecision(box_format="xyxy", iou_type="bbox", backend="faster_coco_eval", extended_summary=True)
    metric.update([{"boxes": torch.tensor([[40, 40, 50, 50.0], [0, 0, 10, 10]]), "scores": torch.tensor([0.8, 0.6]),
                    "labels": torch.tensor([1, 1])}],
                  [{"boxes": torch.tensor([[0, 0, 10, 10.0]]), "labels": torch.tensor([1])}])
    result = metric.compute()
    assert at_score(result, 0.7) == (0.0, 0.0)
    assert at_score(result, 0.5) == (0.5, 1.0)


@pytest.mark.parametrize(("detector", "classifier"), [("fasterrcnn_mobilenet_v3_large_fpn", "mobilenet_v3"),
                                                      ("retinanet_resnet50_fpn", "resnet50")])
def test_a_detectors_backbone_starts_from_a_classifier_of_its_network(tmp_path, boxes, detector, classifier, capsys):
    from trainer.networks import build

    trained = build({"source": "standard", "name": classifier}, 3, 7, SIZE, SIZE)
    for parameter in trained.parameters():  # not what a fresh network starts from
        torch.nn.init.uniform_(parameter, 0.5, 0.6)
    path = tmp_path / "classifier.pt"
    checkpoint.save(path, {"model": trained.state_dict()})
    network = {"source": "standard", "name": detector}
    run = Run(detection_config(boxes, network=network, pretrained={"job": 1, "path": str(path), "mode": "backbone"}),
              tmp_path, CPU)
    body = {key.removeprefix("backbone.body."): value for key, value in run.model.state_dict().items()
            if key.startswith("backbone.body.")}
    given = {key.removeprefix("features."): value for key, value in trained.state_dict().items()
             if not key.startswith(("fc.", "classifier."))}
    assert body.keys() == given.keys() and all(torch.equal(body[key], given[key]) for key in body)
    head = dict(run.model.named_parameters())["rpn.head.conv.0.0.weight" if "rcnn" in detector
                                                else "head.classification_head.conv.0.0.weight"]
    assert head.abs().max() < 0.5  # the rest starts untrained
    assert f"loaded the backbone's {len(body)} tensors from {path}; the rest starts untrained" in capsys.readouterr().out


def test_a_backbone_refuses_a_classifier_of_another_network(tmp_path, boxes):
    from trainer.networks import build

    path = tmp_path / "classifier.pt"
    checkpoint.save(path, {"model": build({"source": "standard", "name": "resnet18"}, 3, 7, SIZE, SIZE).state_dict()})
    config = detection_config(boxes, network={"source": "standard", "name": "fcos_resnet50_fpn"},
                              pretrained={"job": 1, "path": str(path), "mode": "backbone"})
    with pytest.raises(TrainingError, match="The pretrained model's weights do not fill FCOS ResNet-50 FPN's backbone "
                                            r"\(\d+ of its 318 tensors missing or of another shape, .*start it from a "
                                            "resnet50 classifier"):
        Run(config, tmp_path, CPU)


# Two objects side by side; a detection of the first scored 0.7, a false one
# 0.45, one of the second 0.4: above a threshold of 0.5, half the objects
# found and every detection right; above 0.3, both found and two right of three.
OBJECTS = torch.tensor([[[0, 0, 10, 10, 0, 0], [20, 0, 30, 10, 0, 0]]], dtype=torch.float32)
DETECTIONS = {"boxes": torch.tensor([[0, 0, 10, 10.0], [40, 40, 50, 50], [20, 0, 30, 10]]),
              "scores": torch.tensor([0.7, 0.45, 0.4]), "labels": torch.tensor([1, 1, 1])}


def charted(config: dict) -> tuple[float, float]:
    """The precision and recall a run of ``config`` charts for ``DETECTIONS``."""
    evaluation = Training(DETECTION, 1, config).evaluation(torch.device("cpu"))
    evaluation.update(([DETECTIONS], torch.tensor(1.0)), OBJECTS)
    computed = evaluation.compute()
    return computed["precision"], computed["recall"]


def test_the_charted_precision_and_recall_count_the_detections_above_a_high_threshold():
    assert charted({"score_threshold": 0.5}) == (1.0, 0.5)
    assert charted({}) == (1.0, 0.5)  # a run made before the option: 0.5


def test_the_charted_precision_and_recall_count_the_detections_above_a_low_threshold():
    precision, recall = charted({"score_threshold": 0.3})
    assert precision == pytest.approx(2 / 3) and recall == 1.0


def test_a_detection_run_refuses_a_score_threshold_that_is_no_number_from_0_to_1():
    for wrong in (1.5, -0.1, "0.3", True):
        with pytest.raises(ValueError, match=r"^The score threshold is a number from 0 to 1\.$"):
            Training(DETECTION, 1, {"score_threshold": wrong})
