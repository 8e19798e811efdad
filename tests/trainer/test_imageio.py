"""Decoding every accepted format and mode correctly, refusing what is not an
image, and DIGITS' four resize modes checked on known pixels."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from trainer.imageio import ImageError, load_image, resize

RNG = np.random.default_rng(0)


def encoded(image: Image.Image, fmt: str, **options) -> bytes:
    out = io.BytesIO()
    image.save(out, format=fmt, **options)
    return out.getvalue()


def pixel(source: bytes, channels: int) -> tuple:
    return tuple(np.asarray(load_image(source, channels)).reshape(-1, channels)[0])


@pytest.mark.parametrize("fmt", ["PNG", "BMP", "TIFF", "WEBP", "PPM", "GIF"])
def test_lossless_formats_decode_to_their_pixels(fmt):
    data = encoded(Image.new("RGB", (3, 2), (200, 40, 10)), fmt, **({"lossless": True} if fmt == "WEBP" else {}))
    assert pixel(data, 3) == (200, 40, 10) or fmt == "GIF"  # GIF quantises to its palette
    assert pixel(data, 1)[0] == pytest.approx(round(200 * 0.299 + 40 * 0.587 + 10 * 0.114), abs=2)


def test_pgm_and_bilevel_and_palette():
    assert pixel(encoded(Image.new("L", (2, 2), 77), "PPM"), 1) == (77,)
    assert pixel(encoded(Image.new("1", (2, 2), 1), "PNG"), 3) == (255, 255, 255)
    palette = Image.new("P", (2, 2), 1)
    palette.putpalette([0, 0, 0, 10, 20, 30] + [0] * 762)
    assert pixel(encoded(palette, "PNG"), 3) == (10, 20, 30)


def test_transparency_is_composited_over_black():
    rgba = Image.new("RGBA", (2, 1), (255, 255, 255, 0))
    rgba.putpixel((1, 0), (100, 150, 200, 255))
    pixels = np.asarray(load_image(encoded(rgba, "PNG"), 3))
    assert tuple(pixels[0, 0]) == (0, 0, 0) and tuple(pixels[0, 1]) == (100, 150, 200)
    la = Image.new("LA", (1, 1), (200, 128))
    assert pixel(encoded(la, "PNG"), 1) == (100,)
    palette = Image.new("P", (1, 1), 0)
    palette.putpalette([255, 0, 0] * 256)
    assert pixel(encoded(palette, "PNG", transparency=0), 3) == (0, 0, 0)


def test_sixteen_bit_images_are_scaled_not_clipped():
    deep = Image.fromarray(np.array([[65535, 32768, 0]], dtype=np.uint16))
    values = np.asarray(load_image(encoded(deep, "PNG"), 1))[0]
    assert list(values) == [255, 128, 0]


def test_cmyk_jpeg_becomes_rgb():
    cmyk = Image.new("CMYK", (8, 8), (0, 255, 255, 0))  # red
    red, green, blue = pixel(encoded(cmyk, "JPEG", quality=95), 3)
    assert red > 240 and green < 20 and blue < 20


def test_an_animated_gif_gives_its_first_frame():
    frames = [Image.new("RGB", (2, 2), c) for c in ((255, 0, 0), (0, 0, 255))]
    out = io.BytesIO()
    frames[0].save(out, format="GIF", save_all=True, append_images=frames[1:])
    assert pixel(out.getvalue(), 3) == (255, 0, 0)


def test_the_name_never_decides_the_type(tmp_path):
    path = tmp_path / "really-a-png.jpg"
    path.write_bytes(encoded(Image.new("RGB", (1, 1), (1, 2, 3)), "PNG"))
    assert np.asarray(load_image(path, 3))[0, 0].tolist() == [1, 2, 3]


@pytest.mark.parametrize("content,reason", [
    (b"", "empty file"),
    (b"hello, I am text", "not an image"),
    (b"%PDF-1.4 not accepted", "not an image"),
])
def test_refusals_have_reasons(tmp_path, content, reason):
    path = tmp_path / "x.jpg"
    path.write_bytes(content)
    with pytest.raises(ImageError, match=reason):
        load_image(path, 3)


def test_truncated_and_bomb_images_are_refused(tmp_path):
    jpeg = encoded(Image.effect_noise((64, 64), 50).convert("RGB"), "JPEG")
    with pytest.raises(ImageError, match="truncated or corrupt"):
        load_image(jpeg[: len(jpeg) // 2], 3)
    bomb = tmp_path / "bomb.png"
    Image.new("1", (20000, 20000)).save(bomb)
    with pytest.raises(ImageError, match="decompression bomb"):
        load_image(bomb, 1)
    with pytest.raises(ImageError, match="cannot read"):
        load_image(tmp_path, 1)


def stripes(colours, width_each=2, height=2):
    image = Image.new("RGB", (width_each * len(colours), height))
    for i, colour in enumerate(colours):
        image.paste(colour, (i * width_each, 0, (i + 1) * width_each, height))
    return image


RED, GREEN, BLUE, WHITE = (255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 255)


def test_squash_keeps_everything_in_place():
    out = resize(stripes([RED, BLUE], width_each=8, height=3), 4, 6, "squash", RNG)
    assert out.shape == (6, 4, 3)
    assert [tuple(out[2, 0]), tuple(out[2, 3])] == [RED, BLUE]


def test_crop_keeps_the_centre():
    out = resize(stripes([RED, GREEN, BLUE]), 2, 2, "crop", RNG)
    assert {tuple(p) for p in out.reshape(-1, 3)} == {GREEN}


def test_fill_pads_with_reproducible_noise():
    image = Image.new("RGB", (4, 2), WHITE)
    a = resize(image, 4, 4, "fill", np.random.default_rng(5))
    b = resize(image, 4, 4, "fill", np.random.default_rng(5))
    assert (a[1:3] == 255).all()
    assert (a == b).all() and not (a[0] == 255).all()


def test_half_crop_crops_the_long_axis_and_pads_the_short_one():
    image = stripes([RED, GREEN, GREEN, BLUE], width_each=4, height=4)  # 16×4
    out = resize(image, 8, 8, "half_crop", np.random.default_rng(1))  # scale (2 + 0.5) / 2 = 1.25 -> 20×5
    assert out.shape == (8, 8, 3)
    # Width 20 is cropped to the centre 8 (all green); height 5 is padded to 8: rows 1-5 image, 0, 6, 7 noise.
    assert {tuple(p) for p in out[2:5, 1:7].reshape(-1, 3)} == {GREEN}
    for row in (0, 6, 7):
        assert len({tuple(p) for p in out[row]}) > 1


@pytest.mark.parametrize("mode", ["squash", "crop", "fill", "half_crop"])
@pytest.mark.parametrize("size", [(1, 1), (10000, 10), (10, 10000)])
def test_every_mode_handles_extreme_shapes(mode, size):
    image = Image.new("L", size, 200)
    out = resize(image, 32, 24, mode, RNG)
    assert out.shape == (24, 32, 1)


def test_unknown_mode_and_bad_size():
    with pytest.raises(ValueError, match="unknown resize mode"):
        resize(Image.new("L", (2, 2)), 2, 2, "stretch", RNG)
    with pytest.raises(ValueError):
        resize(Image.new("L", (2, 2)), 0, 2, "crop", RNG)


def jpeg_of_size(width: int, height: int, orientation: int = 1) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = orientation
    return encoded(Image.new("RGB", (width, height), (90, 120, 150)), "JPEG", exif=exif.tobytes())


@pytest.mark.parametrize(("mode", "decoded"), [("squash", (400, 100)), ("crop", (400, 100)), ("fill", (200, 50)),
                                               ("half_crop", (200, 50))])
def test_jpeg_decodes_at_the_size_the_resize_mode_needs(mode, decoded):
    image = load_image(jpeg_of_size(1600, 400), 3, draft=(64, 64), resize_mode=mode)
    assert image.size == decoded
    assert resize(image, 64, 64, mode, RNG).shape == (64, 64, 3)


def test_a_turned_jpeg_is_never_decoded_smaller_than_its_target():
    image = load_image(jpeg_of_size(1000, 300, orientation=6), 3, draft=(256, 64))
    assert image.size == (300, 1000)  # shown turned; 150 wide would have to be stretched to 256
    assert load_image(jpeg_of_size(1000, 300, orientation=6), 3, draft=(64, 256)).size == (150, 500)


def digits_resize_before_placement(image: Image.Image, width: int, height: int, mode: str,
                                   rng: np.random.Generator) -> np.ndarray:
    """``resize`` as it was before its geometry became a ``Placement``: the reference its pixels must keep to."""
    def fit_axis(pixels, axis, target):
        have = pixels.shape[axis]
        if have > target:
            start = (have - target) // 2
            return pixels.take(range(start, start + target), axis=axis)
        if have < target:
            before = (target - have) // 2
            shape = list(pixels.shape)
            shape[axis] = target
            out = rng.integers(0, 256, size=shape, dtype=np.uint8)
            index = [slice(None)] * 3
            index[axis] = slice(before, before + have)
            out[tuple(index)] = pixels
            return out
        return pixels

    def as_array(img):
        pixels = np.asarray(img, dtype=np.uint8)
        return pixels[:, :, None] if pixels.ndim == 2 else pixels

    if image.size == (width, height):
        return as_array(image)
    if mode == "squash":
        return as_array(image.resize((width, height), Image.Resampling.BILINEAR))
    cover = max(width / image.width, height / image.height)
    fit = min(width / image.width, height / image.height)
    scale = {"crop": cover, "fill": fit, "half_crop": (cover + fit) / 2}[mode]
    size = max(1, round(image.width * scale)), max(1, round(image.height * scale))
    scaled = image if size == image.size else image.resize(size, Image.Resampling.BILINEAR)
    return fit_axis(fit_axis(as_array(scaled), 0, height), 1, width)


@pytest.mark.parametrize("mode", ["squash", "crop", "fill", "half_crop"])
@pytest.mark.parametrize("image_size,target", [((37, 23), (16, 16)), ((23, 37), (40, 24)), ((64, 48), (64, 48)),
                                               ((5, 90), (31, 7)), ((1280, 720), (96, 64)), ((3, 3), (8, 5))])
def test_pixels_are_byte_identical_to_resize_before_placement(mode, image_size, target):
    image = Image.effect_noise(image_size, 60).convert("RGB")
    seed = sum(image_size) + sum(target)
    ours = resize(image, *target, mode, np.random.default_rng(seed))
    before = digits_resize_before_placement(image, *target, mode, np.random.default_rng(seed))
    assert ours.dtype == before.dtype and ours.shape == before.shape and ours.tobytes() == before.tobytes()


def test_padding_is_black_at_the_right_and_bottom_before_the_resize():
    out = resize(Image.new("RGB", (4, 2), WHITE), 6, 6, "squash", RNG, pad_to=(6, 6))
    assert (out[:2, :4] == 255).all() and (out[2:] == 0).all() and (out[:, 4:] == 0).all()
    halved = resize(Image.new("L", (8, 4), 200), 8, 8, "squash", RNG, pad_to=(16, 16))  # the canvas halved
    assert (halved[0, :3] == 200).all() and (halved[3:] == 0).all() and (halved[:, 5:] == 0).all()


def test_an_image_larger_than_the_padding_size_is_refused_with_a_reason():
    with pytest.raises(ImageError, match="^1280×720 is larger than the padding size 1248×384$"):
        resize(Image.new("L", (1280, 720)), 640, 192, "squash", RNG, pad_to=(1248, 384))
