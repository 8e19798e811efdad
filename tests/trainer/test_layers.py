"""Looking inside a network with one image: the rows the training page's
summary shows (count, shapes, parameters), with activations, filters and
statistics, for LeNet and ResNet-18."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pytest
from PIL import Image

from tests.inferfiles import bar_images, untrained_job
from tests.trainfiles import make_dataset
from trainer.inference import load_model, preprocess
from trainer.inference.layers import inspect
from trainer.networks import summary


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return make_dataset(tmp_path_factory.mktemp("bars") / "dataset")


@pytest.mark.parametrize("network, layers, params", [("lenet", 8, 431_080 - 6 * 501), ("resnet18", 60, None)])
def test_every_layer_in_order_with_its_shape_parameters_and_pictures(tmp_path, dataset, network, layers, params):
    loaded = load_model(untrained_job(tmp_path / "job", dataset, network))
    image, _ = bar_images(1)[0]
    result = inspect(loaded, preprocess(loaded, image))
    table = summary(loaded.model, 1, 28, 28)
    assert len(result["layers"]) == layers
    assert [(r["name"], r["type"], r["output_shape"], r["params"]) for r in result["layers"]] == \
        [(r["name"], r["type"], r["output_shape"], r["params"]) for r in table["layers"]]
    assert result["params"] == table["params"] == sum(r["params"] for r in result["layers"])
    if params:
        assert result["params"] == params
    first = result["layers"][0]
    assert first["type"] == "Conv2d" and first["weights"]["shape"][0] in (20, 64)
    with Image.open(io.BytesIO(first["weights"]["filters"])) as filters, \
            Image.open(io.BytesIO(first["activations"])) as activations:
        assert filters.size[0] > 24 and activations.size[0] > 24
    assert sum(first["activation_stats"]["histogram"]["counts"]) == math.prod(first["output_shape"])
    assert first["weights"]["std"] > 0
    last = result["layers"][-1]
    assert last["type"] == "Linear" and last["output_shape"] == [4] and last["weights"]["filters"] is None
    assert json.dumps({k: v for k, v in last["activation_stats"].items()})
