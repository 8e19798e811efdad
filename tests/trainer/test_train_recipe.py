"""The airbench recipe's options in a training run (trainer.train): the
whitening as the network sees the data, the whitening bias trained for the
first epochs only, the averaged weights as the job's result, and
test-time augmentation in evaluation."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from tests.trainer.test_train import CPU, of_kind
from tests.trainfiles import make_dataset, train_config
from trainer import checkpoint, jobfiles, tta
from trainer import eventkinds as kinds
from trainer.averaging import NoAverage
from trainer.data import Batches
from trainer.train import Run

FASTNET = {"network": {"source": "standard", "name": "fastnet"}, "lr": 0.2, "momentum": 0.85, "batch_size": 32,
           "lr_policy": {"name": "fixed"}, "mean": "image"}


@pytest.fixture(scope="module")
def few_bars(tmp_path_factory) -> Path:
    return make_dataset(tmp_path_factory.mktemp("few") / "dataset", per_class={"train": 24, "val": 8, "test": 4})


def make_run(tmp_path: Path, dataset: Path, **overrides) -> Run:
    folder = tmp_path / "run"
    folder.mkdir(exist_ok=True)
    return Run({**train_config(dataset, **overrides), "job_id": 1, "devices": ["cpu0"]}, folder, CPU)


def test_the_whitening_layer_whitens_the_training_images_as_the_network_receives_them(tmp_path, few_bars):
    run = make_run(tmp_path, few_bars, **FASTNET)
    received = Batches(run.splits["train"], 96, shuffle=False, normalizer=run.normalizer)  # the normalised pixels
    x = torch.cat([x for x, _ in received])
    weight = run.model.whiten.weight
    dims = weight.shape[0] // 2
    features = F.conv2d(x, weight[:dims]).permute(0, 2, 3, 1).reshape(-1, dims).double()
    covariance = features.T @ features / features.shape[0]
    assert (covariance - torch.diag(covariance.diagonal())).abs().max() < 0.02, "uncorrelated"
    assert covariance.diagonal().max() < 1.01 and covariance.diagonal()[0] > 0.95, "unit variance (less eps)"
    raw = F.conv2d(x + 0.3, weight[:dims]).permute(0, 2, 3, 1).reshape(-1, dims).double()
    assert (raw.T @ raw / raw.shape[0]).diagonal().max() > 1.5, "not whitened: the same images, mean not subtracted"


def test_the_whitening_bias_stops_changing_after_its_epochs_and_the_rest_trains_on(tmp_path, few_bars):
    run = make_run(tmp_path, few_bars, **FASTNET, epochs=3, whiten_bias_epochs=2, val_interval=3.0)
    run.train()
    states = [checkpoint.load(run.job_dir / jobfiles.checkpoint(jobfiles.snapshot_name(e)))["model"] for e in (1, 2, 3)]
    bias, weight = "whiten.bias", "groups.0.conv1.weight"
    assert not torch.equal(states[0][bias], states[1][bias]), "it trains in epoch 2"
    assert torch.equal(states[1][bias], states[2][bias]), "not in epoch 3"
    assert not torch.equal(states[1][weight], states[2][weight])


def test_only_a_network_with_a_whitening_layer_takes_the_whitening_bias_epochs(tmp_path, few_bars):
    from trainer.train import TrainingError

    with pytest.raises(TrainingError, match="whitening layer"):
        make_run(tmp_path, few_bars, whiten_bias_epochs=3)


@pytest.mark.parametrize("kind", ["ema", "lookahead"])
def test_the_averaged_weights_are_evaluated_saved_and_exported(tmp_path, few_bars, kind):
    run = make_run(tmp_path, few_bars, epochs=2, val_interval=2.0, lr_policy={"name": "fixed"}, lr=0.05,
                   averaging={"kind": kind, "decay": 0.9, "every": 4})  # moved at step 4 of 6
    result = run.train()
    average = run.average.average
    exported = torch.load(run.job_dir / jobfiles.EXPORTED_MODEL, weights_only=True)["model"]
    assert all(torch.equal(exported[name], average[name]) for name in average)
    assert not all(torch.equal(run.model.state_dict()[name], average[name]) for name in average), \
        "the weights training went on with are not the average"
    run.model.load_state_dict(exported)
    run.average = NoAverage(run.model)
    assert run.evaluate("val")["loss"] == pytest.approx(result["final"]["val_loss"], rel=1e-6), \
        "the result is the exported model's"
    last = checkpoint.load(run.job_dir / jobfiles.LAST_CHECKPOINT)
    assert any(not torch.equal(last["training_weights"][name], last["model"][name]) for name in average), \
        "resuming goes on from the weights, not the average"


def test_evaluation_averages_the_logits_over_the_tta_views(tmp_path, few_bars):
    run = make_run(tmp_path, few_bars, epochs=1, tta="mirror")
    batches = run.eval_batches["val"]
    x, y = next(iter(batches))
    assert len(x) == len(run.splits["val"]), "one batch"
    run.model.eval()
    with torch.no_grad():
        mirrored = 0.5 * run.model(x) + 0.5 * run.model(x.flip(-1))
        plain = run.model(x)
    run.model.train()
    assert run.evaluate("val")["loss"] == pytest.approx(F.cross_entropy(mirrored, y).item(), rel=1e-5)
    assert run.predict is tta.mirror
    assert F.cross_entropy(plain, y).item() != pytest.approx(F.cross_entropy(mirrored, y).item(), rel=1e-5)


def test_a_run_with_the_whole_recipe_learns(tmp_path, few_bars):
    run = make_run(tmp_path, few_bars, **{**FASTNET, "lr_policy": {"name": "linear"}, "lr": 0.5}, epochs=3,
                   norm_bias_lr_scale=64.0, norm_bias_weight_decay=2e-5, weight_decay=1.3e-3, label_smoothing=0.2,
                   averaging={"kind": "lookahead", "decay": 0.95, "every": 2}, whiten_bias_epochs=2,
                   flip="alternating", translate=2, tta="mirror_translate", val_interval=3.0)
    result = run.train()
    assert result["final"]["val_top1"] >= 0.5, result
    rates = {round(group["lr"] / run.lr, 6) for group in run.optimizer.param_groups if group["lr"]}
    assert rates == {1.0, 64.0}, "BatchNorm biases at 64× the rate"
    assert [e["epoch"] for e in of_kind(run.job_dir, kinds.VAL)] == [3.0]
