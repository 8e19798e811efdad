"""Boxes move exactly with their pixels: checked against the pixels
``imageio.place`` makes of a painted box, against torchvision.transforms.v2
on BoundingBoxes, and on known numbers (the scale actually applied, min_size
drops, DIGITS' padding)."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from PIL import Image
from torchvision import tv_tensors
from torchvision.transforms.v2 import functional as F

from trainer import imageio
from trainer.detection.boxgeometry import fractions_to_pixels, move_boxes, unmove_boxes
from trainer.imageio import RESIZE_MODES, ImageError, place, placement

PROPERTY = settings(max_examples=150, deadline=None, database=None, phases=[Phase.explicit, Phase.generate],
                    suppress_health_check=[HealthCheck.too_slow])


class ZeroNoise:
    """Stands in for the rng: the border fill and half_crop add is black, like the background of a mask."""

    def integers(self, low, high, size, dtype):
        return np.zeros(size, dtype=dtype)


@st.composite
def geometries(draw, largest: int) -> tuple:
    """(image size, target size, mode, pad_to) with small or large sides, aspect changes either way."""
    sides = st.integers(1, largest)
    image = draw(sides), draw(sides)
    target = draw(sides), draw(sides)
    pad_to = draw(st.none() | st.tuples(st.integers(image[0], image[0] + largest // 2),
                                        st.integers(image[1], image[1] + largest // 2)))
    return image, target, draw(st.sampled_from(RESIZE_MODES)), pad_to


@st.composite
def painted_boxes(draw) -> tuple:
    """A geometry and one integer-aligned box inside its image (so it can be painted exactly)."""
    geometry = draw(geometries(40))
    (image_w, image_h) = geometry[0]
    x1, y1 = draw(st.integers(0, image_w - 1)), draw(st.integers(0, image_h - 1))
    box = (x1, y1, draw(st.integers(x1 + 1, image_w)), draw(st.integers(y1 + 1, image_h)))
    return geometry, box


def placed_mask(geometry: tuple, box: tuple, resample: Image.Resampling) -> tuple[np.ndarray, imageio.Placement]:
    (image_w, image_h), (width, height), mode, pad_to = geometry
    mask = np.zeros((image_h, image_w), dtype=np.uint8)
    mask[box[1]:box[3], box[0]:box[2]] = 255
    where = placement(image_w, image_h, width, height, mode, pad_to)
    with mock.patch.object(imageio, "RESAMPLE", resample):
        pixels = place(Image.fromarray(mask, "L"), where, ZeroNoise())[:, :, 0]
    return pixels, where


def centres_inside(moved: np.ndarray, where: imageio.Placement, margin: tuple[float, float]) -> tuple:
    """Masks over the result's pixels: centres inside the moved box by more than ``margin`` on both axes,
    and centres outside it by more than ``margin`` on either."""
    width, height = where.size
    cx, cy = np.arange(width)[None, :] + 0.5, np.arange(height)[:, None] + 0.5
    x1, y1, x2, y2 = moved
    inside = (cx > x1 + margin[0]) & (cx < x2 - margin[0]) & (cy > y1 + margin[1]) & (cy < y2 - margin[1])
    outside = (cx < x1 - margin[0]) | (cx > x2 + margin[0]) | (cy < y1 - margin[1]) | (cy > y2 + margin[1])
    return inside, outside


@PROPERTY
@given(painted_boxes())
@example((((1280, 720), (64, 64), "crop", None), (298, 100, 1000, 700)))  # x1 lands at 1.54; at 1.49 by the nominal scale
@example((((7, 5), (10, 10), "half_crop", (9, 5)), (2, 0, 7, 5)))  # padded, then x cropped and y filled
def test_a_painted_box_resized_by_nearest_neighbour_is_exactly_the_moved_box(case):
    """Nearest neighbour takes each result pixel from the image pixel under its centre (mapped back), so a
    result pixel is white exactly when its centre lies in the moved box: x1 <= centre < x2 on both axes."""
    geometry, box = case
    pixels, where = placed_mask(geometry, box, Image.Resampling.NEAREST)
    moved, kept = move_boxes(np.array([box], dtype=float), where)
    inside, outside = centres_inside(moved[0], where, (1e-9, 1e-9))
    assert (pixels[inside] == 255).all() and (pixels[outside] == 0).all()
    if not kept[0]:
        assert not inside.any()


@PROPERTY
@given(painted_boxes())
def test_a_painted_box_resized_bilinearly_is_white_inside_and_black_outside_the_moved_box(case):
    """The build's own resampling: a result pixel whose filter window (a triangle of radius max(1, scale)
    result pixels) lies wholly inside the moved box is white; wholly outside it, black."""
    geometry, box = case
    pixels, where = placed_mask(geometry, box, imageio.RESAMPLE)
    moved, _ = move_boxes(np.array([box], dtype=float), where)
    margin = tuple(max(1.0, scale) + 1e-9 for scale in where.scale)
    inside, outside = centres_inside(moved[0], where, margin)
    assert (pixels[inside] == 255).all() and (pixels[outside] == 0).all()


def digits_offsets(scaled: int, target: int) -> tuple[int, int]:
    """DIGITS keeps the centre: (crop start, pad offset) on one axis, the odd pixel at the end."""
    return max(0, (scaled - target) // 2), max(0, (target - scaled) // 2)


@PROPERTY
@given(geometries(400), st.data())
def test_boxes_agree_with_torchvision_v2_on_bounding_boxes(geometry, data):
    (image_w, image_h), (width, height), mode, pad_to = geometry
    corners = data.draw(st.lists(st.tuples(st.floats(0, image_w), st.floats(0, image_w),
                                           st.floats(0, image_h), st.floats(0, image_h)), min_size=1, max_size=6))
    boxes = np.array([(min(a, b), min(c, d), max(a, b), max(c, d)) for a, b, c, d in corners])
    where = placement(image_w, image_h, width, height, mode, pad_to)
    ours, _ = move_boxes(boxes, where)

    theirs = tv_tensors.BoundingBoxes(torch.tensor(boxes), format="XYXY", canvas_size=(image_h, image_w))
    if pad_to is not None:
        theirs = F.pad(theirs, [0, 0, pad_to[0] - image_w, pad_to[1] - image_h])
    scaled_w, scaled_h = where.scaled
    theirs = F.resize(theirs, [scaled_h, scaled_w])
    resized = theirs
    (crop_x, pad_x), (crop_y, pad_y) = digits_offsets(scaled_w, width), digits_offsets(scaled_h, height)
    theirs = F.pad(theirs, [pad_x, pad_y, max(0, width - scaled_w) - pad_x, max(0, height - scaled_h) - pad_y])
    theirs = F.crop(theirs, top=crop_y, left=crop_x, height=height, width=width)
    assert theirs.canvas_size == (height, width)
    np.testing.assert_allclose(ours, theirs.numpy(), rtol=0, atol=1e-4)
    if (scaled_w - width) % 2 == 0 and (scaled_h - height) % 2 == 0:  # where v2's centre rounding is DIGITS' too
        np.testing.assert_allclose(ours, F.center_crop(resized, [height, width]).numpy(), rtol=0, atol=1e-4)


@PROPERTY
@given(geometries(400), st.data())
@example((((1280, 720), (64, 64), "crop", None), (298.0, 100.0, 1000.0, 700.0)), None)
@example((((7, 5), (10, 10), "half_crop", (9, 5)), (2.0, 0.0, 7.0, 5.0)), None)
def test_unmoving_a_moved_box_gives_back_the_part_of_it_the_result_shows(case, data):
    """Detect one's inverse: for every mode, with or without padding, a box
    moved into the result and back is the box itself, clipped to the part of
    the image the result keeps (a crop cuts the rest off)."""
    if data is None:
        geometry, box = case
    else:
        geometry = case
        (image_w, image_h) = geometry[0]
        x1, x2 = sorted(data.draw(st.floats(0, image_w), label="x") for _ in range(2))
        y1, y2 = sorted(data.draw(st.floats(0, image_h), label="y") for _ in range(2))
        box = (x1, y1, x2, y2)
    (image_w, image_h), (width, height), mode, pad_to = geometry
    where = placement(image_w, image_h, width, height, mode, pad_to)
    moved, _ = move_boxes(np.array([box]), where)
    (scale_x, scale_y), (shift_x, shift_y) = where.scale, where.shift
    kept = np.array([max(0, -shift_x / scale_x), max(0, -shift_y / scale_y),
                     min(image_w, (width - shift_x) / scale_x), min(image_h, (height - shift_y) / scale_y)])
    expected = np.clip(np.array(box), kept[:2].tolist() * 2, kept[2:].tolist() * 2)
    assert unmove_boxes(moved, where)[0] == pytest.approx(expected, abs=1e-9 * max(image_w, image_h))


def test_a_box_on_the_fill_around_an_image_comes_back_empty():
    where = placement(20, 10, 20, 20, "fill")  # the image lies at y 5 to 15
    back = unmove_boxes(np.array([[2, 0, 8, 4], [2, 3, 8, 9]]), where)
    assert back.tolist() == [[2, 0, 8, 0], [2, 0, 8, 4]]


def test_the_scale_applied_is_the_rounded_size_over_the_original_not_the_nominal_one():
    where = placement(1280, 720, 640, 640, "crop")  # nominal scale 640/720; 1280 of it is 1137.8, rounded to 1138
    assert (where.scaled, where.crop, where.pad) == ((1138, 640), (249, 0), (0, 0))
    moved, kept = move_boxes(np.array([[720.0, 0, 1280, 720]]), where)
    np.testing.assert_allclose(moved, [[720 * 1138 / 1280 - 249, 0, 640, 640]])  # 391.125, not 391.0
    assert kept.all()


def test_squash_changes_the_aspect_ratio_of_boxes_too():
    moved, kept = move_boxes(np.array([[20.0, 10, 60, 90]]), placement(200, 100, 100, 100, "squash"))
    np.testing.assert_array_equal(moved, [[10, 10, 30, 90]])
    assert kept.all()


def test_fill_shifts_by_the_pad_offset_and_boxes_are_clipped_to_their_image_first():
    where = placement(100, 50, 100, 100, "fill")
    assert (where.scaled, where.pad) == ((100, 50), (0, 25))
    moved, kept = move_boxes(np.array([[-10.0, -10, 50, 60], [10, 10, 20, 20]]), where)  # the first pokes out
    np.testing.assert_array_equal(moved, [[0, 25, 50, 75], [10, 35, 20, 45]])  # never into the noise
    assert kept.all()


def test_min_size_and_empty_boxes_are_dropped_for_the_build_to_count():
    where = placement(100, 100, 50, 50, "squash")
    boxes = np.array([
        [10.0, 10, 40, 40],  # 15×15: kept
        [0, 0, 10, 10],  # 5×5: below 6
        [0, 0, 40, 10],  # 20×5: too short
        [30, 30, 30, 60],  # no width at all
        [150, 150, 180, 180],  # off the image
    ])
    moved, kept = move_boxes(boxes, where, min_size=6)
    assert kept.tolist() == [True, False, False, False, False] and int((~kept).sum()) == 4
    assert moved.shape == (5, 4)
    _, kept_without_minimum = move_boxes(boxes, where)
    assert kept_without_minimum.tolist() == [True, True, True, False, False]


def test_the_minimum_is_measured_on_what_is_left_after_cropping():
    where = placement(200, 100, 100, 100, "crop")  # crops x from 50 to 150
    moved, kept = move_boxes(np.array([[40.0, 0, 53, 100], [40, 0, 60, 100]]), where, min_size=5)
    np.testing.assert_array_equal(moved, [[0, 0, 3, 100], [0, 0, 10, 100]])
    assert kept.tolist() == [False, True]


def test_padding_keeps_boxes_at_the_top_left_and_refuses_a_larger_image():
    where = placement(1242, 375, 624, 192, "squash", pad_to=(1248, 384))  # KITTI padded, then halved
    moved, _ = move_boxes(np.array([[100.0, 50, 200, 150]]), where)
    np.testing.assert_allclose(moved, [[50, 25, 100, 75]])
    with pytest.raises(ImageError, match="^1280×720 is larger than the padding size 1248×384$"):
        placement(1280, 720, 624, 192, "squash", pad_to=(1248, 384))
    with pytest.raises(ImageError, match="larger than the padding size"):
        placement(1000, 385, 624, 192, "crop", pad_to=(1248, 384))


def test_no_boxes_and_malformed_boxes():
    moved, kept = move_boxes(np.zeros((0, 4)), placement(10, 10, 5, 5, "crop"))
    assert moved.shape == (0, 4) and kept.shape == (0,)
    with pytest.raises(ValueError, match="N×4"):
        move_boxes(np.zeros((2, 5)), placement(10, 10, 5, 5, "crop"))
    with pytest.raises(ValueError, match="negative"):
        move_boxes(np.zeros((1, 4)), placement(10, 10, 5, 5, "crop"), min_size=-1)


def test_yolo_fractions_become_pixels_of_the_image():
    np.testing.assert_array_equal(fractions_to_pixels(np.array([[0.25, 0.5, 0.75, 1.0]]), 200, 100),
                                  [[50, 50, 150, 100]])
