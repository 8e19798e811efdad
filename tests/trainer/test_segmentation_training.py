"""Semantic segmentation trained by the shared loop, in this process, on
the CPU: the synthetic scenes (a disc and a rectangle on noise, an ignore
border) built by the dataset build; masks moved with the pixels by every
augmentation that re-indexes them; the ignored pixels out of the loss and
the metrics; a small U-Net reaching a stated mIoU in a few epochs;
torchvision's segmenters' backbones started from a classifier of their
network, and refused one of another."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.detectionfiles import CPU
from tests.segmentationfiles import CLASSES, built_scenes, segmentation_config, trained_segmenter
from trainer import checkpoint, eventlog
from trainer import eventkinds as kinds
from trainer.augment import Augment, Moved, take
from trainer.data import Batches, Normalizer, SplitData
from trainer.networks import NetworkError
from trainer.segmentation.labels import IGNORE
from trainer.segmentation.targets import Masks, pixel_counts
from trainer.tasks import segmentation
from trainer.tasks.segmentation_training import (
    DICE_LOSSES,
    Evaluation,
    Training,
    loss_of,
    loss_sums,
    median_frequency_weights,
    scores,
)
from trainer.train import Run, TrainingError

SEGMENTATION = segmentation.TASK
# Measured: the U-Net's validation mIoU after 8 epochs of the 96 scenes at
# 32×24 was 0.83 to 0.88 over seeds on one thread; chance is about 0.2.
LEARNED_MIOU = 0.6


@pytest.fixture(scope="module")
def scenes(tmp_path_factory) -> Path:
    """The built dataset: 96 scenes at 32×24, 72 for training and 24 for validation."""
    return built_scenes(tmp_path_factory.mktemp("scenes"))


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def run_here(folder: Path, dataset: Path, **overrides) -> Run:
    return trained_segmenter(folder, dataset, **overrides)


def of_kind(folder: Path, kind: str) -> list[dict]:
    return [event["data"] for event in eventlog.Reader(folder).read() if event["kind"] == kind]


@pytest.mark.parametrize("options", [{"flip": "both"}, {"translate": 3}, {"crop": 16}, {"flip": "horizontal",
                                                                                          "translate": 2, "crop": 20}])
def test_masks_move_with_the_pixels_under_every_augmentation_that_reindexes_them(options):
    """Images whose pixels are their own mask's values stay equal to their masks after the augmentation."""
    masks = torch.randint(0, 3, (6, 24, 32), dtype=torch.uint8)
    masks[:, 0] = IGNORE
    augment = Augment({"seed": 1, **options}, 5, "cpu")
    positions = augment.positions(6, 24, 32, images=torch.arange(6))
    pixels = take(masks[..., None].repeat(1, 1, 1, 3), None, positions)
    moved = Training(SEGMENTATION, 3, {}).follow(masks, Moved(positions))
    assert torch.equal(pixels[..., 0], moved) and not torch.equal(moved, masks[:, :moved.shape[1], :moved.shape[2]])


def test_masks_follow_rotation_and_zoom_by_nearest_neighbour_on_the_pixels_grid():
    """Images of flat regions, each its class's colour (red, green, blue;
    white where ignored: none a blend of the others or of black), rotated
    and zoomed through ``Batches``: wherever a resampled pixel is one of
    those colours exactly (every source pixel it blends is), its mask holds
    that class; where it came from outside the image (black), the mask
    ignores it; and the masks did move."""
    count, height, width = 16, 24, 32
    rows, columns = torch.meshgrid(torch.arange(height), torch.arange(width), indexing="ij")
    masks = torch.stack([((rows // (4 + n % 3) + columns // (5 + n % 4)) % 3) for n in range(count)]).to(torch.uint8)
    masks[:, 8:12] = IGNORE  # a band across the middle, in view whatever the rotation
    colours = torch.zeros(256, 3, dtype=torch.uint8)
    colours[0, 0] = colours[1, 1] = colours[2, 2] = 255
    colours[IGNORE] = 255
    split = SplitData(colours[masks.long()].contiguous(), masks)
    augment = Augment({"seed": 2, "rotation": 30.0, "scale": 0.3}, 7, "cpu")
    batches = Batches(split, count, shuffle=False, augment=augment, normalizer=Normalizer("none", None),
                      follow=Training(SEGMENTATION, 3, {}).follow)
    x, moved = next(iter(batches))
    assert moved.dtype == torch.uint8 and moved.shape == masks.shape and not torch.equal(moved, masks)
    for value in (0, 1, 2, IGNORE):
        exact = ((x - colours[value].float()[None, :, None, None] / 255).abs() < 1e-4).all(dim=1)
        assert exact.sum() > 100 and (moved[exact] == value).all(), value
    outside = (x.abs() < 1e-4).all(dim=1)
    assert outside.sum() > 100 and (moved[outside] == IGNORE).all()


def loss(kind: str, logits: torch.Tensor, masks: torch.Tensor, weights: torch.Tensor | None = None) -> float:
    weights = torch.ones(logits.shape[1]) if weights is None else weights
    return float(loss_of(kind, loss_sums(logits, masks, weights, kind in DICE_LOSSES)))


def test_the_losses_and_the_metrics_leave_the_ignored_pixels_out():
    logits = torch.randn(2, 3, 4, 5)
    masks = logits.argmax(dim=1).to(torch.uint8)
    wrong = masks.clone()
    wrong[0, 0] = IGNORE  # the ignored pixels' logits say nothing: the loss is the mean of the others
    labelled = wrong != IGNORE
    plain = torch.nn.functional.cross_entropy(logits.permute(0, 2, 3, 1)[labelled], wrong[labelled].long())
    assert loss("cross_entropy", logits, wrong) == pytest.approx(float(plain), rel=1e-5)
    weights = torch.tensor([1.0, 2.0, 0.5])
    weighted = torch.nn.functional.cross_entropy(logits.permute(0, 2, 3, 1)[labelled], wrong[labelled].long(),
                                                 weight=weights)
    assert loss("weighted_cross_entropy", logits, wrong, weights) == pytest.approx(float(weighted), rel=1e-5)
    every = torch.full_like(masks, IGNORE)
    for kind in ("cross_entropy", "weighted_cross_entropy", "dice", "cross_entropy_dice"):
        assert math.isfinite(loss(kind, logits, every)), kind  # not NaN
    evaluation = Training(SEGMENTATION, 3, {}).evaluation(torch.device("cpu"))
    evaluation.update(logits, wrong)
    assert evaluation.compute()["pixel_accuracy"] == 1.0 and evaluation.compute()["miou"] == 1.0


def test_dice_is_near_0_for_a_sure_right_answer_and_near_1_for_a_sure_wrong_one():
    masks = torch.randint(0, 3, (2, 8, 8), dtype=torch.uint8)
    sure = torch.nn.functional.one_hot(masks.long(), 3).permute(0, 3, 1, 2).float() * 50
    assert loss("dice", sure, masks) < 0.01
    assert loss("dice", sure.roll(1, dims=1), masks) > 0.95
    assert loss("cross_entropy_dice", sure, masks) == pytest.approx(loss("cross_entropy", sure, masks)
                                                                     + loss("dice", sure, masks), abs=1e-6)


def test_a_splits_validation_loss_is_the_loss_of_its_batches_summed_first():
    """Two batches given to the evaluation score as the two as one batch would."""
    logits, masks = torch.randn(4, 3, 6, 6), torch.randint(0, 3, (4, 6, 6), dtype=torch.uint8)
    masks[1, :2] = IGNORE
    for kind in ("cross_entropy", "weighted_cross_entropy", "dice", "cross_entropy_dice"):
        weights = torch.tensor([0.5, 1.0, 3.0])
        evaluation = Evaluation(3, torch.device("cpu"), kind, weights)
        evaluation.update(logits[:1], masks[:1])
        evaluation.update(logits[1:], masks[1:])
        assert evaluation.compute()["loss"] == pytest.approx(loss(kind, logits, masks, weights), rel=1e-5), kind


def test_class_weights_are_the_median_share_over_each_classs_share_of_the_training_pixels(scenes):
    counts = pixel_counts(Masks().read(scenes, "train"))[:, :3].sum(axis=0)
    share = counts / counts.sum()
    weights = median_frequency_weights(scenes, 4)  # a fourth class that no pixel has weighs 1
    assert weights[:3].tolist() == pytest.approx((np.median(share) / share).tolist(), rel=1e-6)
    assert weights[3] == 1.0 and weights[0] < 1 < weights[:3].max()  # the background is the most common class


def test_the_scores_of_a_confusion_matrix():
    confusion = torch.tensor([[8, 2, 0], [1, 4, 0], [0, 0, 0]])  # class 2 never occurs: it says nothing
    found = scores(confusion)
    assert found["pixel_accuracy"] == pytest.approx(12 / 15)
    assert found["miou"] == pytest.approx((8 / 11 + 4 / 7) / 2)
    assert found["dice"] == pytest.approx((16 / 19 + 8 / 11) / 2)


def test_a_unet_learns_the_scenes_and_its_best_snapshot_is_chosen_by_miou(tmp_path, scenes):
    folder = tmp_path / "run"
    run_here(folder, scenes, epochs=8, val_interval=4.0, snapshot_interval=8.0, flip="horizontal")
    validations = of_kind(folder, kinds.VAL)
    assert [v["epoch"] for v in validations] == [4, 8]
    assert all(set(v) == {"step", "epoch", "loss", "miou", "pixel_accuracy", "dice"} for v in validations)
    assert validations[-1]["miou"] >= LEARNED_MIOU, validations
    assert validations[-1]["loss"] < validations[0]["loss"] or validations[0]["miou"] >= LEARNED_MIOU
    assert 0 < validations[-1]["dice"] <= 1 and validations[-1]["pixel_accuracy"] > validations[-1]["miou"] - 0.2
    bests = of_kind(folder, kinds.BEST)
    assert {best["metric"] for best in bests} == {"val_miou"}
    result = of_kind(folder, kinds.RESULT)[-1]
    assert set(result["final"]) == {"val_loss", "val_miou", "val_pixel_accuracy", "val_dice"}
    (rows,) = result["per_class"].values()
    assert list(result["per_class"]) == ["val"] and [row["class"] for row in rows] == list(CLASSES)
    scored = [row["iou"] for row in rows if row["iou"] is not None]
    assert sum(scored) / len(scored) == pytest.approx(result["final"]["val_miou"], abs=1e-3), "mIoU is their mean"
    assert sum(row["pixels"] for row in rows) > 0 and all(0 <= row["recall"] <= 1 for row in rows if row["pixels"])


@pytest.mark.parametrize("kind", ["weighted_cross_entropy", "dice", "cross_entropy_dice"])
def test_each_loss_trains(tmp_path, scenes, kind):
    folder = tmp_path / kind
    run_here(folder, scenes, epochs=5, val_interval=5.0, segmentation_loss=kind)
    train = [event["loss"] for event in of_kind(folder, kinds.TRAIN)]
    assert all(math.isfinite(value) for value in train) and train[-1] < train[0], train
    assert of_kind(folder, kinds.VAL)[-1]["miou"] > 0.3


def test_a_unet_trains_with_its_masks_rotated_and_zoomed_with_the_images(tmp_path, scenes):
    folder = tmp_path / "rotated"
    run_here(folder, scenes, epochs=5, val_interval=5.0, rotation=15.0, scale=0.15, flip="horizontal")
    train = [event["loss"] for event in of_kind(folder, kinds.TRAIN)]
    assert all(math.isfinite(value) for value in train) and train[-1] < train[0], train
    assert of_kind(folder, kinds.VAL)[-1]["miou"] > 0.3


def test_a_segmentation_run_refuses_a_loss_it_does_not_know(tmp_path, scenes):
    with pytest.raises(TrainingError, match="The loss is one of: cross_entropy, weighted_cross_entropy, dice, "
                                            "cross_entropy_dice."):
        run_here(tmp_path / "run", scenes, epochs=1, segmentation_loss="focal")


def test_a_segmenter_trains_in_bf16_mixed_precision(tmp_path, scenes):
    folder = tmp_path / "bf16"
    run_here(folder, scenes, epochs=1, precision="bf16", network={"source": "standard",
                                                                   "name": "lraspp_mobilenet_v3_large"})
    train = of_kind(folder, kinds.TRAIN)
    assert train and all(math.isfinite(event["loss"]) for event in train)


@pytest.mark.parametrize("option, value", [("tta", "flip"), ("label_smoothing", 0.1)])
def test_a_segmentation_run_refuses_what_its_masks_cannot_follow(tmp_path, scenes, option, value):
    with pytest.raises(TrainingError, match=f"A segmentation run cannot use {option} = {value} yet"):
        run_here(tmp_path / "run", scenes, epochs=1, **{option: value})


def test_torchvisions_networks_take_colour_images_alone():
    training = Training(SEGMENTATION, 2, {})
    with pytest.raises(NetworkError, match="takes colour images"):
        training.build({"source": "standard", "name": "fcn_resnet50"}, 1, 2, 24, 32)
    assert training.build({"source": "standard", "name": "unet"}, 1, 2, 24, 32)(torch.rand(1, 1, 24, 30)).shape == (
        1, 2, 24, 30)
    with pytest.raises(NetworkError, match="one of the segmentation networks"):
        training.build({"source": "standard", "name": "lenet"}, 3, 2, 24, 32)


def classifier_weights(tmp_path: Path, network: str) -> Path:
    """A classifier of ``network`` whose weights a fresh network does not start from, saved as a snapshot."""
    from trainer.networks import build

    trained = build({"source": "standard", "name": network}, 3, 7, 24, 32)
    for parameter in trained.parameters():
        torch.nn.init.uniform_(parameter, 0.5, 0.6)
    path = tmp_path / "classifier.pt"
    checkpoint.save(path, {"model": trained.state_dict()})
    return path


@pytest.mark.parametrize(("segmenter", "classifier"), [("lraspp_mobilenet_v3_large", "mobilenet_v3"),
                                                        ("deeplabv3_resnet50", "resnet50")])
def test_a_segmenters_backbone_starts_from_a_classifier_of_its_network(tmp_path, scenes, segmenter, classifier,
                                                                        capsys):
    path = classifier_weights(tmp_path, classifier)
    run = Run(segmentation_config(scenes, network={"source": "standard", "name": segmenter},
                                  pretrained={"job": 1, "path": str(path), "mode": "backbone"}), tmp_path, CPU)
    backbone = {key.removeprefix("network.backbone."): value for key, value in run.model.state_dict().items()
                if key.startswith("network.backbone.")}
    given = {key.removeprefix("features."): value for key, value in checkpoint.load(path)["model"].items()
             if not key.startswith(("fc.", "classifier."))}
    assert backbone.keys() == given.keys() and all(torch.equal(backbone[key], given[key]) for key in backbone)
    head = [value for key, value in run.model.state_dict().items() if key.startswith("network.classifier.")
            and value.is_floating_point()]
    assert head and not any(((value >= 0.5) & (value <= 0.6)).all() for value in head), "the head starts untrained"
    assert (f"loaded the backbone's {len(backbone)} tensors from {path}; the rest starts untrained"
            in capsys.readouterr().out)


def test_a_segmenters_backbone_refuses_a_classifier_of_another_network(tmp_path, scenes):
    config = segmentation_config(scenes, network={"source": "standard", "name": "fcn_resnet50"},
                                 pretrained={"job": 1, "path": str(classifier_weights(tmp_path, "mobilenet_v3")),
                                             "mode": "backbone"})
    with pytest.raises(TrainingError, match=r"The pretrained model's weights do not fill FCN ResNet-50's backbone "
                                            r"\(318 of its 318 tensors missing or of another shape, .*start it from a "
                                            "resnet50 classifier"):
        Run(config, tmp_path, CPU)
    unet = segmentation_config(scenes, pretrained={"job": 1, "path": str(classifier_weights(tmp_path, "resnet50")),
                                                   "mode": "backbone"})
    with pytest.raises(TrainingError, match="U-Net \\(small\\)'s backbone cannot start from a pretrained model"):
        Run(unet, tmp_path, CPU)


def test_masks_come_the_same_whether_the_split_is_held_in_memory_or_streamed(scenes):
    from trainer.data import SplitData, StreamingSplit, load_split

    held = load_split(scenes, "train", budget_bytes=1 << 30)
    streamed = load_split(scenes, "train", budget_bytes=1)
    assert isinstance(held, SplitData) and isinstance(streamed, StreamingSplit)
    assert len(streamed) == len(held) == 72 and held.targets.dtype == torch.uint8
    _, masks = streamed.reader[torch.arange(5)]
    assert torch.equal(masks, held.targets[:5])
