"""The average of a model's weights (trainer.averaging): EMA and lookahead."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from trainer.averaging import NoAverage, WeightAverage, make


def small_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))


def nudge(model: nn.Module, amount: float) -> None:
    with torch.no_grad():
        for param in model.parameters():
            param.add_(amount)
        model[1].running_mean.add_(amount)


def test_ema_follows_the_formula_and_leaves_the_weights_alone():
    model = small_model()
    start = {name: t.clone() for name, t in model.state_dict().items()}
    average = WeightAverage(model, "ema", decay=0.9, every=2, total_steps=10)
    nudge(model, 1.0)
    average.update(1)  # not a multiple of every: nothing moves
    assert torch.equal(average.average["0.weight"], start["0.weight"])
    average.update(2)
    d = 0.9 ** 2 * (2 / 10) ** 3
    for name in ("0.weight", "0.bias", "1.bias", "1.running_mean"):
        expected = d * start[name] + (1 - d) * model.state_dict()[name]
        assert torch.allclose(average.average[name], expected), name
        assert not torch.allclose(average.average[name], model.state_dict()[name]), "the average is not the weights"
    assert torch.equal(model.state_dict()["0.weight"], start["0.weight"] + 1), "EMA never writes the weights"
    assert average.weights()["1.num_batches_tracked"].dtype == torch.long, "integer buffers are the model's"


def test_lookahead_sets_the_weights_to_the_average_when_it_moves():
    model = small_model()
    start = model.state_dict()["0.weight"].clone()
    average = WeightAverage(model, "lookahead", decay=0.95, every=5, total_steps=20)
    nudge(model, 2.0)
    average.update(10)
    d = 0.95 ** 5 * (10 / 20) ** 3
    assert torch.allclose(model.state_dict()["0.weight"], d * start + (1 - d) * (start + 2))
    assert torch.equal(model.state_dict()["0.weight"], average.average["0.weight"])


def test_evaluation_sees_the_average_and_training_its_own_weights_after():
    model = small_model()
    average = WeightAverage(model, "ema", decay=0.5, every=1, total_steps=1)
    averaged = model.state_dict()["0.weight"].clone()
    nudge(model, 1.0)
    own = model.state_dict()["0.weight"].clone()
    with average.evaluated():
        assert torch.equal(model[0].weight.detach(), averaged)
    assert torch.equal(model[0].weight.detach(), own)
    assert torch.equal(average.weights()["0.weight"], averaged)
    assert torch.equal(average.training_weights()["0.weight"], own)


def test_loading_restores_the_average():
    model = small_model()
    average = WeightAverage(model, "ema", decay=0.5, every=1, total_steps=4)
    nudge(model, 1.0)
    average.update(4)
    saved = {name: t.clone() for name, t in average.weights().items()}
    other = WeightAverage(small_model(), "ema", decay=0.5, every=1, total_steps=4)
    other.load(saved)
    assert all(torch.equal(other.average[name], saved[name]) for name in other.average)


def test_no_average_is_the_model_itself():
    model = small_model()
    none = make(model, None, 10)
    assert isinstance(none, NoAverage) and not isinstance(none, WeightAverage)
    nudge(model, 1.0)
    none.update(5)
    assert torch.equal(none.weights()["0.weight"], model.state_dict()["0.weight"])
    assert none.training_weights() is None


def test_settings_out_of_range_are_refused():
    for kind, decay, every in (("swa", 0.9, 1), ("ema", 1.0, 1), ("ema", 0.9, 0)):
        with pytest.raises(ValueError):
            WeightAverage(small_model(), kind, decay, every, 10)
