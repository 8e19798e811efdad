"""Networks: every standard one builds and fits small images, customised
texts rebuild them, layer lists and Python code fail with messages that
point at the user's mistake, summaries count what they should, the inspect
command answers in JSON, and fastnet's whitening init whitens."""

from __future__ import annotations

import json
import subprocess
import sys
import traceback
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from trainer.networks import STANDARD, NetworkError, build, customize, summary, validate_layers
from trainer.networks.inspect import answer

ROOT = Path(__file__).resolve().parents[2]
NAMES = ["lenet", "alexnet", "googlenet", "vgg16", "resnet18", "resnet34", "resnet50", "mobilenet_v3",
         "efficientnet_b0", "vit_small", "fastnet"]


def standard(name: str, channels: int = 3, classes: int = 10, height: int = 32, width: int = 32) -> torch.nn.Module:
    return build({"source": "standard", "name": name}, channels, classes, height, width)


def layers(text: str, channels: int = 1, classes: int = 10, height: int = 28, width: int = 28) -> torch.nn.Module:
    return build({"source": "layers", "text": text}, channels, classes, height, width)


def python(text: str, channels: int = 1, classes: int = 10, height: int = 28, width: int = 28) -> torch.nn.Module:
    return build({"source": "python", "text": text}, channels, classes, height, width)


def error_of(make, *args) -> str:
    with pytest.raises(NetworkError) as caught:
        make(*args)
    return str(caught.value)


def params(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


# Parameter counts of the standard networks for 3×32×32 images and 10 classes, noted as
# they are built, so that the customised texts are compared without building them twice.
SEEN: dict[str, int] = {}


def test_the_standard_networks_are_listed_with_their_papers():
    assert list(STANDARD) == NAMES
    for name, info in STANDARD.items():
        assert info.name == name and info.label and info.summary
        assert info.paper_url.startswith(("http://", "https://"))
        assert len(info.input_size) == 2
    assert STANDARD["lenet"].input_size == (28, 28) and STANDARD["fastnet"].input_size == (32, 32)
    assert {name: info.paper_url for name, info in STANDARD.items() if name in ("lenet", "alexnet", "fastnet")} == {
        "lenet": "http://yann.lecun.com/exdb/publis/pdf/lecun-98.pdf", "alexnet": "https://papers.nips.cc/paper/4824",
        "fastnet": "https://arxiv.org/abs/2404.00498"}


@pytest.mark.parametrize("shape", [(1, 28, 28), (3, 32, 32)], ids=["1x28x28", "3x32x32"])
@pytest.mark.parametrize("name", NAMES)
def test_every_standard_network_fits_small_images(name, shape):
    channels, height, width = shape
    model = standard(name, channels, 10, height, width)  # checked by a forward pass of two images
    assert model.training
    table = summary(model, channels, height, width)
    assert table["params"] == params(model)
    if shape == (3, 32, 32):
        SEEN[name] = table["params"]
    # Every parameter is in exactly one row, whatever the network's structure.
    assert sum(row["params"] for row in table["layers"]) == table["params"]
    assert table["layers"][-1]["output_shape"][-1] == 10 or name == "fastnet"  # fastnet scales its head's output
    assert table["flops_per_image"] > 0


def test_a_network_at_its_designed_size_keeps_its_stem():
    small, large = standard("resnet18", 3, 1000, 32, 32), standard("resnet18", 3, 1000, 224, 224)
    assert small.conv1.stride == (1, 1) and isinstance(small.maxpool, torch.nn.Identity)
    assert large.conv1.stride == (2, 2) and isinstance(large.maxpool, torch.nn.MaxPool2d)
    assert params(large) == params(small) == 11_689_512  # torchvision's ResNet-18 for ImageNet


def test_images_too_small_for_a_network_are_upsampled():
    model = standard("googlenet", 1, 10, 2, 3)
    assert isinstance(model[0], torch.nn.Upsample) and model[0].size == (4, 4)
    assert standard("lenet", 1, 10, 12, 20)[0].size == (16, 20)
    assert isinstance(standard("fastnet", 3, 10, 8, 8).resize, torch.nn.Upsample)


@pytest.mark.parametrize("name", NAMES)
def test_customized_text_rebuilds_the_standard_network(name):
    spec = customize(name)
    assert spec["source"] == ("layers" if name in ("lenet", "alexnet", "vgg16") else "python")
    if spec["source"] == "python":
        assert "def build(channels" in spec["text"] and "trainer" not in spec["text"]
    # AlexNet's layer list is AlexNet as designed (first convolution at stride 4), which needs
    # 63×63 images at least; its parameter count does not depend on the image size, so the
    # list is built for 64×64 images and compared with the standard network on 32×32.
    size = 64 if name == "alexnet" else 32
    custom = build(spec, 3, 10, size, size)
    assert params(custom) == (SEEN.get(name) or params(standard(name)))


def test_customized_lenet_has_the_standard_networks_state_dict():
    custom, plain = layers(customize("lenet")["text"]), standard("lenet", 1, 10, 28, 28)
    assert {k: v.shape for k, v in custom.state_dict().items()} == {k: v.shape for k, v in plain.state_dict().items()}


def test_a_customized_fastnet_can_still_be_initialised_from_data():
    model = build(customize("fastnet"), 3, 10, 32, 32)
    model.init_from_data(torch.randn(8, 3, 32, 32))
    assert not model.whiten.weight.requires_grad


LENET_YAML = """\
- conv: {out: 20, kernel: 5}
- maxpool: {kernel: 2}
- conv: {out: 50, kernel: 5}
- maxpool: {kernel: 2}
- flatten
- linear: {out: 500}
- relu:
- dropout: {p: 0.25}
- linear: {out: classes}
"""


def test_a_layer_list_builds_its_network():
    model = layers(LENET_YAML, classes=7)
    names = [name for name, _ in model.named_children()]
    assert names == ["conv1", "maxpool2", "conv3", "maxpool4", "flatten5", "linear6", "relu7", "dropout8", "linear9"]
    assert model.linear6.in_features == 800 and model.linear9.out_features == 7 and model.dropout8.p == 0.25
    assert params(model) == 431_080 - 5_010 + 500 * 7 + 7


def test_a_layer_list_may_be_json_and_has_defaults_filled_in():
    parsed = validate_layers('[{"conv": {"out": "classes", "kernel": [3, 5], "padding": "same"}}, {"batchnorm": {}},'
                             ' {"leakyrelu": {"slope": 0.2}}, {"lrn": {}}, {"adaptiveavgpool": {}}, "flatten"]')
    assert parsed[0] == {"type": "conv", "args": {"out": "classes", "kernel": [3, 5], "stride": 1, "padding": "same",
                                                  "groups": 1, "bias": True}}
    assert parsed[1]["args"] == {"eps": 1e-5, "momentum": 0.1}
    model = layers(json.dumps([{layer["type"]: layer["args"]} for layer in parsed]), channels=3, classes=10)
    assert model.conv1.weight.shape == (10, 3, 3, 5) and isinstance(model.batchnorm2, torch.nn.BatchNorm2d)
    assert model(torch.zeros(2, 3, 28, 28)).shape == (2, 10)
    assert validate_layers("[{conv: {out: 4, kernel: 3}}, relu]") == [  # YAML's flow style is not JSON
        {"type": "conv", "args": {"out": 4, "kernel": 3, "stride": 1, "padding": 0, "groups": 1, "bias": True}},
        {"type": "relu", "args": {}}]


@pytest.mark.parametrize(("text", "message"), [
    ("- conv: {out: 20, kernal: 5}",
     "Layer 1 (conv): unknown argument 'kernal'; allowed: out, kernel, stride, padding, groups, bias"),
    ("- relu: {}\n- convv: {out: 3}", "Layer 2: unknown type 'convv'; known: conv, maxpool,"),
    ("- relu: {inplace: true}", "Layer 1 (relu): unknown argument 'inplace'; allowed: none"),
    ("- conv: {kernel: 5}", "Layer 1 (conv): missing argument 'out'"),
    ("- conv: {out: 0, kernel: 5}", "Layer 1 (conv): 'out' must be a positive integer or the word 'classes', not 0"),
    ("- conv: {out: 4, kernel: [3, 3, 3]}", "Layer 1 (conv): 'kernel' must be a positive integer or a pair of them"),
    ("- linear: {out: 4, bias: 1}", "Layer 1 (linear): 'bias' must be true or false, not 1"),
    ("- dropout: {p: 1.5}", "Layer 1 (dropout): 'p' must be a number from 0 up to (not including) 1, not 1.5"),
    ("- conv: {out: 4, kernel: 3, stride: 2, padding: same}", "Layer 1 (conv): padding 'same' needs stride 1"),
    ("- conv: 5", "Layer 1 (conv): the arguments must be a mapping like {name: value}, not 5"),
    ("- {relu: {}, tanh: {}}", "Layer 1: expected one layer type with its arguments"),
    ("- [relu]", "Layer 1: expected one layer type with its arguments"),
    ("conv: {out: 4}", "The layer list must be a list of layers"),
    ("", "The layer list is empty"),
    ("# nothing\n[]", "The layer list is empty"),
    ("- relu: {}\n- conv: {out: 4, kernel: 3\n- relu: {}", "Not valid YAML: line 3, column"),
    ('[{"relu": {}},\n {"conv": {"out": 4}}', "Not valid JSON: line 2, column 22: Expecting ',' delimiter"),
])
def test_layer_list_mistakes_are_named(text, message):
    assert error_of(validate_layers, text).startswith(message)


@pytest.mark.parametrize(("text", "message"), [
    ("- conv: {out: 8, kernel: 40}\n- flatten: {}\n- linear: {out: classes}",
     "The network does not fit the data (1×28×28 input): layer 1 (conv) gets a 1×28×28 input: "),
    ("- flatten: {}\n- conv: {out: 8, kernel: 3}",
     "Layer 2 (conv): needs an image (channels×height×width) as input, but gets 784 features"),
    ("- conv: {out: 8, kernel: 3}\n- linear: {out: classes}", "Layer 2 (linear): gets a 8×26×26 input; put a 'flatten'"),
    ("- flatten: {}\n- linear: {out: 5}",
     "The network does not fit the data (1×28×28 input): its output for a batch of 2 images is 2×5; it must be 2×10"),
])
def test_a_layer_list_that_does_not_fit_says_where(text, message):
    assert error_of(layers, text).startswith(message)


def test_the_layer_spec_and_the_package_import_neither_torch_nor_django():
    code = ("import sys; import trainer.networks.layerspec, trainer.networks; "
            "trainer.networks.validate_layers('- relu'); "
            "assert not {'torch', 'django'} & set(sys.modules), sorted(m for m in sys.modules if 'torch' in m)")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


TINY = """\
class Tiny(nn.Module):
    def __init__(self, channels, classes):
        super().__init__()
        self.conv = nn.Conv2d(channels, 4, 3)
        self.fc = nn.Linear(4, classes)

    def forward(self, x):
        x = F.adaptive_avg_pool2d(F.relu(self.conv(x)), 1)
        return self.fc(torch.flatten(x, 1))


def build(channels, classes, height, width):
    return Tiny(channels, classes)
"""


def test_python_code_builds_its_network():
    model = python(TINY, channels=3, classes=5, height=16, width=16)
    assert type(model).__name__ == "Tiny" and params(model) == 3 * 4 * 9 + 4 + 4 * 5 + 5
    with pytest.raises(RuntimeError) as caught:  # a later failure (in training) shows the user's line too
        model(torch.zeros(1, 3, 2, 2))
    assert "x = F.adaptive_avg_pool2d(F.relu(self.conv(x)), 1)" in "".join(traceback.format_exception(caught.value))
    mlp = python("def build(channels, classes, height, width):\n"
                 "    return nn.Sequential(nn.Flatten(), torchvision.ops.MLP(channels * height * width, [classes]))\n")
    assert params(mlp) == 28 * 28 * 10 + 10


@pytest.mark.parametrize(("text", "expected"), [
    ("def build(channels, classes, height, width):\n    x = 1\n    return nn.Linear(x x)\n",
     ["The network code is not valid Python:", "line 3", "SyntaxError"]),
    ("import math\n\ndef build(channels, classes, height, width):\n    return nn.Conv2d(channels, 0 / 0, 3)\n",
     ["failed in build(channels=1, classes=10, height=28, width=28)", "line 4, in build",
      "return nn.Conv2d(channels, 0 / 0, 3)", "ZeroDivisionError: division by zero"]),
    ("def helper():\n    raise ValueError('no such layer')\n\ndef build(channels, classes, height, width):\n"
     "    return helper()\n",
     ["line 5, in build", "line 2, in helper", "raise ValueError('no such layer')", "ValueError: no such layer"]),
    ("x = undefined_name\n", ["failed while it was run", "line 1, in <module>", "NameError"]),
    ("import sys\nsys.exit(3)\n", ["failed while it was run", "line 2, in <module>", "SystemExit: 3"]),
    ("def build(channels, classes, height, width):\n    return 42\n",
     ["build() (defined at line 1) returned int, not a torch.nn.Module"]),
    ("def make(channels, classes, height, width):\n    return nn.Identity()\n",
     ["must define a function build(channels, classes, height, width)"]),
    (TINY.replace("nn.Linear(4, classes)", "nn.Linear(5, classes)"),
     ["The network does not fit the data (1×28×28 input):", "line 9, in forward",
      "return self.fc(torch.flatten(x, 1))", "RuntimeError: mat1 and mat2 shapes cannot be multiplied"]),
])
def test_python_code_failures_point_at_the_users_line(text, expected):
    message = error_of(python, text)
    position = 0
    for part in expected:
        position = message.find(part, position)
        assert position >= 0, f"{part!r} not in order in:\n{message}"


def test_specs_that_name_nothing_known_are_refused():
    assert "Unknown standard network 'lenet5'; known: lenet, alexnet" in error_of(standard, "lenet5")
    assert "one of standard, layers, python" in error_of(build, {"source": "onnx"}, 1, 10, 28, 28)
    assert "The network's text is empty" in error_of(build, {"source": "python", "text": " "}, 1, 10, 28, 28)
    assert "The data's classes must be a positive integer, not 0" in error_of(standard, "lenet", 1, 0)
    assert "Unknown standard network" in error_of(customize, "resnet")


def test_the_lenet_summary():
    table = summary(standard("lenet", 1, 10, 28, 28).eval(), 1, 28, 28)
    rows = [(row["name"], row["type"], row["output_shape"], row["params"]) for row in table["layers"]]
    assert rows == [
        ("conv1", "Conv2d", [20, 24, 24], 520),
        ("maxpool2", "MaxPool2d", [20, 12, 12], 0),
        ("conv3", "Conv2d", [50, 8, 8], 25_050),
        ("maxpool4", "MaxPool2d", [50, 4, 4], 0),
        ("flatten5", "Flatten", [800], 0),
        ("linear6", "Linear", [500], 400_500),
        ("relu7", "ReLU", [500], 0),
        ("linear8", "Linear", [10], 5_010),
    ]
    assert table["params"] == table["trainable"] == 431_080
    macs = 20 * 24 * 24 * 25 + 50 * 8 * 8 * 20 * 25 + 800 * 500 + 500 * 10
    assert table["flops_per_image"] == 2 * macs


def test_summary_counts_attention_and_frozen_parameters():
    vit = standard("vit_small", 3, 10, 32, 32)
    table = summary(vit, 3, 32, 32)
    assert vit.training  # the summary's eval-mode pass leaves the mode as it was
    attention = [row for row in table["layers"] if row["type"] == "MultiheadAttention"]
    assert len(attention) == 6 and attention[0]["output_shape"] == [65, 384]
    assert attention[0]["params"] == 4 * 384 * 384 + 4 * 384
    tokens, width = 65, 384
    per_block = 4 * tokens * width * width + 2 * tokens * tokens * width + 2 * tokens * width * 1536
    patches = 64 * 384 * 3 * 4 * 4
    assert table["flops_per_image"] == 2 * (6 * per_block + patches + 384 * 10)
    assert {"model", "encoder"} <= {row["name"] for row in table["layers"]}  # class token, positional embedding
    fast = summary(standard("fastnet"), 3, 32, 32)
    frozen = 24 * 3 * 2 * 2 + 2 * (64 + 256 + 256)  # whitening filters, batch-norm scales
    assert fast["trainable"] == fast["params"] - frozen


def test_fastnet_is_airbench():
    model = standard("fastnet", 3, 10, 32, 32)
    assert model.whiten.weight.shape == (24, 3, 2, 2) and model.whiten.bias.requires_grad
    assert [group.conv1.out_channels for group in model.groups] == [64, 256, 256]
    assert model.groups[0].norm1.momentum == pytest.approx(0.4) and model.groups[0].norm1.eps == 1e-12
    assert model.head.bias is None and model.scale == pytest.approx(1 / 9)
    assert standard("fastnet", 1, 10, 28, 28).whiten.out_channels == 8


def test_fastnet_init_from_data_whitens_the_patches():
    generator = torch.Generator().manual_seed(0)
    mixing = torch.tensor([[1.0, 0.0, 0.0], [0.8, 0.6, 0.0], [0.5, 0.5, 0.7]])
    images = F.avg_pool2d(torch.randn(64, 3, 18, 18, generator=generator), 3, 1)  # neighbouring pixels correlate
    images = torch.einsum("oc,nchw->nohw", mixing, images)  # so do channels
    model = standard("fastnet", 3, 10, 16, 16)
    model.init_from_data(images)
    weight = model.whiten.weight
    assert torch.equal(weight[12:], -weight[:12]) and not weight.requires_grad

    def covariance(features: torch.Tensor) -> torch.Tensor:
        flat = features.permute(0, 2, 3, 1).reshape(-1, features.shape[1]).double()
        return flat.T @ flat / flat.shape[0]

    patches = covariance(F.unfold(images, 2).reshape(64, 12, 15, 15))
    correlation = patches / patches.diagonal().sqrt().outer(patches.diagonal().sqrt())
    assert (correlation - torch.eye(12)).abs().max() > 0.5  # far from white before
    white = covariance(F.conv2d(images, weight[:12]))
    assert (white - torch.diag(white.diagonal())).abs().max() < 1e-4
    assert white.diagonal().max() <= 1 and white.diagonal()[:6].min() > 0.9


def test_fastnet_whitening_is_the_same_at_any_pixel_scale():
    """Its eps is relative to the data's variance: images in [0, 1] with the
    mean subtracted (the app's) are whitened as airbench's unit-variance ones."""
    images = F.avg_pool2d(torch.randn(32, 3, 18, 18, generator=torch.Generator().manual_seed(1)), 3, 1)
    small, large = standard("fastnet", 3, 10, 16, 16), standard("fastnet", 3, 10, 16, 16)
    small.init_from_data(images * 0.05)
    large.init_from_data(images * 5.0)
    for a, b in zip(small.whiten.weight * 0.05, large.whiten.weight * 5.0, strict=True):  # an eigenvector's sign is free
        assert min((a - b).norm(), (a + b).norm()) <= 1e-4 * a.norm()


def ask(request: dict | str) -> dict:
    data = request if isinstance(request, str) else json.dumps(request)
    done = subprocess.run([sys.executable, "-m", "trainer.networks.inspect"], input=data, capture_output=True, text=True,
                          cwd=ROOT, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_inspect_command_answers_in_json_alone_on_stdout():
    noisy = "print('hello')\n" + TINY
    answer = ask({"network": {"source": "python", "text": noisy}, "channels": 1, "classes": 3, "height": 8, "width": 8})
    assert answer["ok"] and answer["summary"]["params"] == 1 * 4 * 9 + 4 + 4 * 3 + 3
    assert answer["summary"]["layers"][0] == {"name": "conv", "type": "Conv2d", "output_shape": [4, 6, 6], "params": 40}
    answer = ask({"network": {"source": "layers", "text": "- conv: {out: 2, kernal: 3}"}, "channels": 1, "classes": 3,
                  "height": 8, "width": 8})
    assert answer == {"ok": False, "error": "Layer 1 (conv): unknown argument 'kernal'; "
                                            "allowed: out, kernel, stride, padding, groups, bias"}
    assert ask("{not json")["ok"] is False


def test_inspect_answers():
    lenet = {"network": {"source": "standard", "name": "lenet"}, "channels": 1, "classes": 10, "height": 28, "width": 28}
    assert answer(lenet) == {"ok": True, "summary": summary(standard("lenet", 1, 10, 28, 28), 1, 28, 28)}
    too_big = {**lenet, "network": {"source": "layers", "text": "- conv: {out: 2, kernel: 40}"}}
    assert answer(too_big) == {"ok": False, "error": error_of(layers, too_big["network"]["text"])}
    assert answer({"network": lenet["network"]}) == {"ok": False, "error": "The request lacks 'channels'"}
    assert answer([lenet]) == {"ok": False, "error": "The request must be a JSON object"}


def test_building_lenet_does_not_import_torchvision_and_a_resnet_does():
    script = ("import sys\n"
              "from trainer.networks import build\n"
              "build({'source': 'standard', 'name': 'lenet'}, 1, 10, 28, 28)\n"
              "print('torchvision' in sys.modules)\n"
              "build({'source': 'standard', 'name': 'resnet18'}, 3, 5, 64, 64)\n"
              "print('torchvision' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.split() == ["False", "True"], done.stderr


# One layer of eight nested levels of six aliases each: 6**8 (1.7 million) items once expanded, from 300 bytes.
ALIAS_BOMB = "- [&a [x, x, x, x, x, x], " + ", ".join(
    f"&{name} [{', '.join([f'*{before}'] * 6)}]" for before, name in zip("abcdefg", "bcdefgh", strict=True)) + "]\n"


def test_yaml_anchors_and_aliases_are_refused_before_anything_is_expanded():
    assert len(ALIAS_BOMB) < 400
    message = error_of(validate_layers, ALIAS_BOMB)
    assert message == ("Line 1, column 4: YAML anchors (&name) and aliases (*name) are not allowed in a layer list; "
                       "write each layer out.")


def test_a_layer_error_shows_a_long_value_cut_short():
    message = error_of(validate_layers, f"- conv: {{out: [{', '.join(['7'] * 100_000)}], kernel: 3}}")
    assert message.startswith("Layer 1 (conv): 'out' must be a positive integer or the word 'classes', not [7, 7, ")
    assert len(message) < 500 and message.endswith("…")
    assert len(error_of(validate_layers, f"- {'x' * 100_000}: {{}}")) < 500
