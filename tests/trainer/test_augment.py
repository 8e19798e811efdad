"""Batched augmentation on tensors (trainer.augment)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from trainer.augment import Augment, reflect, take

EVERYTHING = {"crop": 6, "translate": 2, "flip": "both", "rotation": 15.0, "scale": 0.2, "noise": 0.1, "color_jitter": 0.4}


def batch(n: int = 16, channels: int = 3, height: int = 8, width: int = 10, seed: int = 0) -> torch.Tensor:
    return torch.rand((n, channels, height, width), generator=torch.Generator().manual_seed(seed))


def asymmetric(n: int = 64) -> torch.Tensor:
    """The same image n times, unlike any of its flips."""
    return torch.arange(2 * 5 * 7, dtype=torch.float32).view(1, 2, 5, 7).div(70).expand(n, -1, -1, -1).contiguous()


def test_shapes_and_output_size():
    augment = Augment(EVERYTHING, 0, "cpu")
    assert augment.output_size(8, 10) == (6, 6)
    out = augment(batch())
    assert out.shape == (16, 3, 6, 6) and out.dtype == torch.float32
    assert Augment({}, 0, "cpu").output_size(8, 10) == (8, 10)
    assert Augment({"crop": 4, "flip": "vertical"}, 0, "cpu")(batch(channels=1)).shape == (16, 1, 4, 4)
    with pytest.raises(ValueError, match="larger than the images"):
        augment.output_size(5, 10)


def test_invalid_settings():
    for config in ({"flip": "diagonal"}, {"scale": 1.0}, {"noise": -0.1}, {"crop": 0.5}):
        with pytest.raises(ValueError):
            Augment(config, 0, "cpu")


def test_nothing_to_do_returns_the_input():
    x = batch()
    assert Augment({}, 0, "cpu")(x) is x
    assert Augment({"flip": "none", "translate": 0, "crop": None, "rotation": 0, "noise": 0}, 0, "cpu")(x) is x
    assert Augment(EVERYTHING | {"crop": None}, 0, "cpu", train=False)(x) is x


def test_evaluation_crops_the_centre_without_randomness():
    x = batch()
    augment = Augment(EVERYTHING, 0, "cpu", train=False)
    before = augment.state_dict()["generator"].clone()
    assert torch.equal(augment(x), x[:, :, 1:7, 2:8])
    assert torch.equal(augment.state_dict()["generator"], before)


def test_random_crops_are_windows_of_the_image():
    x = batch(64)
    out = Augment({"crop": 5}, 3, "cpu")(x)
    offsets = set()
    for n in range(64):
        found = [(top, left) for top in range(4) for left in range(6) if torch.equal(out[n], x[n, :, top:top + 5, left:left + 5])]
        assert found
        offsets.update(found)
    assert len(offsets) > 10  # per-image offsets


def test_translation_shifts_the_content_with_reflection():
    x = batch(64)
    out = Augment({"translate": 3}, 1, "cpu")(x)
    padded = F.pad(x, (3, 3, 3, 3), mode="reflect")
    shifts = set()
    for n in range(64):
        found = [(dy, dx) for dy in range(7) for dx in range(7) if torch.equal(out[n], padded[n, :, dy:dy + 8, dx:dx + 10])]
        assert found
        shifts.update(found)
    assert len(shifts) > 10


@pytest.mark.parametrize(("flip", "variants"), [
    ("horizontal", lambda x: [x, x.flip(-1)]),
    ("vertical", lambda x: [x, x.flip(-2)]),
    ("both", lambda x: [x, x.flip(-1), x.flip(-2), x.flip(-1, -2)]),
])
def test_flips_flip_some_images(flip, variants):
    x = asymmetric()
    out = Augment({"flip": flip}, 2, "cpu")(x)
    expected = variants(x[0])
    seen = set()
    for image in out:
        matches = [i for i, variant in enumerate(expected) if torch.equal(image, variant)]
        assert len(matches) == 1
        seen.add(matches[0])
    assert seen == set(range(len(expected)))


def mirrored(augment: Augment, numbers: torch.Tensor, epoch: int) -> torch.Tensor:
    """Which of the images ``numbers`` come out mirrored in ``epoch``."""
    columns = augment.positions(len(numbers), 4, 6, numbers, epoch)[1]
    return columns[:, 0] == 5


def test_the_alternating_flip_mirrors_exactly_the_other_half_in_odd_epochs():
    augment = Augment({"flip": "alternating", "translate": 0, "seed": 3}, 0, "cpu")
    numbers = torch.arange(1000)
    even, odd = mirrored(augment, numbers, 0), mirrored(augment, numbers, 1)
    assert torch.equal(odd, ~even), "each image is mirrored in one epoch of each pair"
    assert 450 <= int(even.sum()) <= 550, "half of them"
    assert torch.equal(mirrored(augment, numbers, 4), even) and torch.equal(mirrored(augment, numbers, 7), odd)
    shuffled = torch.randperm(1000, generator=torch.Generator().manual_seed(0))
    assert torch.equal(mirrored(augment, shuffled, 0), even[shuffled]), "by image, whatever the batch"
    other_seed = mirrored(Augment({"flip": "alternating", "seed": 4}, 0, "cpu"), numbers, 0)
    assert not torch.equal(other_seed, even)


def test_the_alternating_flip_needs_the_images_numbers():
    with pytest.raises(ValueError, match="numbers"):
        Augment({"flip": "alternating"}, 0, "cpu").positions(4, 4, 6)


def test_rotation_and_scale_keep_the_centre():
    x = batch(32, height=7, width=9)
    out = Augment({"rotation": 30.0, "scale": 0.3}, 4, "cpu")(x)
    assert out.shape == x.shape
    torch.testing.assert_close(out[:, :, 3, 4], x[:, :, 3, 4])
    assert not torch.allclose(out, x)


def test_rotation_turns_a_wide_image_in_pixels():
    """A bar through the centre of a wide image keeps its length at every
    angle (a turn in the grid's [-1, 1] coordinates would squash it)."""
    x = torch.zeros(1, 1, 9, 15)
    x[:, :, 4, 5:10] = 1
    rows, cols = torch.meshgrid(torch.arange(9.0), torch.arange(15.0), indexing="ij")
    points = torch.stack([rows.flatten(), cols.flatten()], 1)
    augment = Augment({"rotation": 90.0}, 0, "cpu")
    steep = 0
    for _ in range(30):
        mass = augment(x).flatten().clamp(min=0)
        centred = points - (mass[:, None] * points).sum(0) / mass.sum()
        spread = (mass[:, None, None] * centred[:, :, None] * centred[:, None, :]).sum(0) / mass.sum()
        variances, axes = torch.linalg.eigh(spread)
        assert mass.sum() == pytest.approx(5, abs=0.5)
        assert 1.9 < variances[1] < 2.4  # 5 pixels in a line: variance 2 along it
        steep += bool(axes[0, 1].abs() > 0.7)  # more vertical than horizontal
    assert steep >= 5


def test_noise_has_its_standard_deviation():
    x = torch.full((64, 3, 16, 16), 0.5)
    out = Augment({"noise": 0.1}, 5, "cpu")(x)
    assert (out - x).std().item() == pytest.approx(0.1, rel=0.05)
    assert (out - x).mean().abs().item() < 0.01


@pytest.mark.parametrize("channels", [1, 3])
def test_colour_jitter_varies_per_image_within_range(channels):
    x = batch(32, channels=channels) * 0.5 + 0.25
    out = Augment({"color_jitter": 0.5}, 6, "cpu")(x)
    assert out.shape == x.shape and out.min() >= 0 and out.max() <= 1
    ratios = out.mean(dim=(1, 2, 3)) / x.mean(dim=(1, 2, 3))
    assert ratios.std() > 0.05
    assert torch.allclose(Augment({"color_jitter": 0.5}, 6, "cpu", train=False)(x), x)


def test_colour_jitter_is_brightness_then_contrast_then_saturation():
    x = batch(8) * 0.2 + 0.4  # no clamping at these values
    factors = 1 + (torch.rand((8, 3), generator=torch.Generator().manual_seed(7)) * 2 - 1) * 0.2
    expected = x * factors[:, 0, None, None, None]
    grey = (expected * torch.tensor([0.299, 0.587, 0.114]).view(1, 3, 1, 1)).sum(1, keepdim=True)
    mean = grey.mean(dim=(1, 2, 3), keepdim=True)
    expected = (expected - mean) * factors[:, 1, None, None, None] + mean
    grey = (expected * torch.tensor([0.299, 0.587, 0.114]).view(1, 3, 1, 1)).sum(1, keepdim=True)
    expected = (expected - grey) * factors[:, 2, None, None, None] + grey
    torch.testing.assert_close(Augment({"color_jitter": 0.2}, 7, "cpu")(x), expected)


def test_the_same_generator_state_gives_the_same_augmentation():
    x = batch()
    first, second = Augment(EVERYTHING, 9, "cpu"), Augment(EVERYTHING, 9, "cpu")
    assert torch.equal(first(x), second(x))
    state = first.state_dict()
    expected = [first(x), first(x)]
    resumed = Augment(EVERYTHING, 1, "cpu")
    resumed.load_state_dict(state)
    assert torch.equal(resumed(x), expected[0]) and torch.equal(resumed(x), expected[1])
    assert not torch.equal(expected[0], expected[1])
    assert not torch.equal(Augment(EVERYTHING, 10, "cpu")(x), second(x))


def test_reflect_matches_reflect_padding():
    size = 5
    line = torch.arange(size, dtype=torch.float32).view(1, 1, size)
    padded = F.pad(line, (4, 4), mode="reflect").view(-1).long()
    assert torch.equal(reflect(torch.arange(-4, size + 4), size), padded)
    assert torch.equal(reflect(torch.tensor([-13, 13, 8]), size), torch.tensor([3, 3, 0]))
    assert torch.equal(reflect(torch.tensor([-2, 3]), 1), torch.tensor([0, 0]))


def test_take_gathers_images_at_positions():
    images = torch.arange(4 * 3 * 5 * 2).view(4, 3, 5, 2)
    rows, cols = torch.tensor([[2, 0], [1, 1]]), torch.tensor([[4, 3, 0]])
    out = take(images, torch.tensor([3, 0]), (rows, cols))
    assert out.shape == (2, 2, 3, 2)
    assert torch.equal(out[0], images[3][[2, 0]][:, [4, 3, 0]])
    assert torch.equal(out[1], images[0][[1, 1]][:, [4, 3, 0]])
    assert torch.equal(take(images, torch.tensor([1]), None), images[1:2])
    assert take(images, None, None) is images
