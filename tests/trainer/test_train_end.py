"""The end of a training run: final metrics, the resuming checkpoint and the
export, which reuse what the run already holds instead of doing it again."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.trainer.test_train import job_folder, log_of, of_kind, train
from tests.trainfiles import make_dataset, train_config
from trainer import eventkinds as kinds


@pytest.fixture(scope="module")
def bars(tmp_path_factory) -> Path:
    return make_dataset(tmp_path_factory.mktemp("bars") / "dataset")


def weights(path: Path) -> dict[str, torch.Tensor]:
    return torch.load(path, weights_only=True)["model"]


def assert_same_weights(left: dict[str, torch.Tensor], right: dict[str, torch.Tensor]) -> None:
    assert left.keys() == right.keys()
    for name in left:
        assert torch.equal(left[name], right[name]), name


def test_the_final_validation_is_the_last_one_when_it_ran_at_the_last_step(tmp_path, bars):
    folder = job_folder(tmp_path, train_config(bars, epochs=2, val_interval=1.0))
    assert train(folder) == 0, log_of(folder)

    last_validation = of_kind(folder, kinds.VAL)[-1]
    final = of_kind(folder, kinds.RESULT)[-1]["final"]
    assert (final["val_loss"], final["val_top1"]) == (last_validation["loss"], last_validation["top1"])


def test_the_final_validation_is_measured_again_when_the_last_one_was_earlier(tmp_path, bars):
    folder = job_folder(tmp_path, train_config(bars, epochs=3, val_interval=2.0))
    assert train(folder) == 0, log_of(folder)

    validations = of_kind(folder, kinds.VAL)
    assert [round(v["epoch"], 6) for v in validations] == [2.0]
    final = of_kind(folder, kinds.RESULT)[-1]["final"]
    assert final["val_loss"] != validations[-1]["loss"]  # a third epoch trained since


def test_the_export_holds_the_best_checkpoints_weights(tmp_path, bars):
    folder = job_folder(tmp_path, train_config(bars, epochs=3))
    assert train(folder) == 0, log_of(folder)

    assert_same_weights(weights(folder / "export" / "model.pt"), weights(folder / "checkpoints" / "best.pt"))


def test_without_a_validation_split_the_export_and_last_checkpoint_hold_the_final_weights(tmp_path):
    dataset = make_dataset(tmp_path / "dataset", {"train": 120, "val": 0, "test": 30})
    folder = job_folder(tmp_path, train_config(dataset, epochs=2, snapshot_interval=2.0))
    assert train(folder) == 0, log_of(folder)

    exported = weights(folder / "export" / "model.pt")
    assert_same_weights(exported, weights(folder / "checkpoints" / "last.pt"))
    assert_same_weights(exported, weights(folder / "checkpoints" / "epoch-2.pt"))
    assert "test_top1" in of_kind(folder, kinds.RESULT)[-1]["final"]
