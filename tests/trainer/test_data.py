"""Loading dataset splits and iterating batches (trainer.data), on stores
written by trainer.datastore's writers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from trainer import data
from trainer.augment import Augment
from trainer.data import Batches, DatasetInfo, Normalizer, SplitData, StreamingSplit, load_split
from trainer.datastore import EncodedSplitWriter, RawSplitWriter, SplitReader, encode, open_slots
from trainer.targets import ClassLabels
from trainer.train import INIT_FROM_DATA_IMAGES

SPLITS = ("train", "val", "test")
MEMORY = 1 << 30
AUGMENT = {"crop": 6, "translate": 2, "flip": "both", "color_jitter": 0.3, "noise": 0.05, "rotation": 10.0, "scale": 0.1}


def make_dataset(folder: Path, splits: dict[str, np.ndarray], encoding: str, quality: int = 90) -> Path:
    """A dataset folder as trainer.dataset_build writes it; each image's label is its position."""
    folder.mkdir(parents=True, exist_ok=True)
    shape = next(iter(splits.values())).shape[1:]
    counts = {}
    for split in SPLITS:
        images = splits.get(split, np.zeros((0, *shape), dtype=np.uint8))
        counts[split] = len(images)
        if encoding == "none":
            writer = RawSplitWriter(folder, split, shape, len(images), ClassLabels())
            if len(images):
                slots = open_slots(writer.slots())
                slots[:] = images
                slots.flush()
                del slots
            for slot in range(len(images)):
                writer.mark(slot, slot)
        else:
            writer = EncodedSplitWriter(folder, split, shape, len(images), ClassLabels(), encoding, quality)
            for slot, pixels in enumerate(images):
                writer.add(encode(pixels, encoding, quality), slot)
        writer.close()
    np.save(folder / "mean.npy", splits["train"].mean(axis=0).astype(np.float32))
    manifest = {
        "version": 1,
        "options": {"encoding": encoding, "height": shape[0], "width": shape[1], "channels": shape[2]},
        "classes": ["a", "b"],
        "image_shape": list(shape),
        "encoding": encoding,
        "splits": {split: {"count": counts[split], "per_class": [counts[split], 0]} for split in SPLITS},
        "skipped": {"total": 0, "per_class": {}},
        "warnings": [],
        "mean": "mean.png",
        "seconds": 0.1,
        "files": {},
    }
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def random_images(count: int, shape: tuple[int, int, int] = (8, 10, 3), seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (count, *shape), dtype=np.uint8)


def in_memory(count: int = 50, shape: tuple[int, int, int] = (8, 10, 3)) -> SplitData:
    return SplitData(torch.from_numpy(random_images(count, shape)), torch.arange(count))


def epoch_labels(batches: Batches) -> list[int]:
    return [int(label) for _, y in batches for label in y]


def plain(split: SplitData, batch_size: int = 8, **options) -> Batches:
    options.setdefault("shuffle", True)
    return Batches(split, batch_size, normalizer=Normalizer("none", None), **options)


def test_dataset_info(tmp_path):
    images = random_images(6)
    info = DatasetInfo.load(make_dataset(tmp_path, {"train": images, "val": images[:2]}, "none"))
    assert info.classes == ["a", "b"]
    assert info.image_shape == (8, 10, 3) and (info.height, info.width, info.channels) == (8, 10, 3)
    assert info.encoding == "none"
    assert info.counts == {"train": 6, "val": 2, "test": 0}
    np.testing.assert_allclose(info.mean, images.mean(axis=0), rtol=1e-6)
    (tmp_path / "mean.npy").unlink()
    assert DatasetInfo.load(tmp_path).mean is None


def test_raw_split_reads_back_exactly(tmp_path):
    images = random_images(30)
    folder = make_dataset(tmp_path, {"train": images}, "none")
    split = load_split(folder, "train", MEMORY)
    assert isinstance(split, SplitData)
    assert split.images.dtype == torch.uint8 and split.targets.dtype == torch.int64
    np.testing.assert_array_equal(split.images.numpy(), images)
    np.testing.assert_array_equal(split.targets.numpy(), np.arange(30))
    assert load_split(folder, "val", MEMORY) is None


@pytest.mark.parametrize("processes", [1, 2])
@pytest.mark.parametrize("shape", [(8, 10, 3), (7, 5, 1)])
def test_png_split_reads_back_exactly(tmp_path, processes, shape):
    images = random_images(1100, shape)  # more than two decoding chunks
    split = load_split(make_dataset(tmp_path, {"train": images}, "png"), "train", MEMORY, processes=processes)
    assert isinstance(split, SplitData)
    assert split.image_shape == shape
    np.testing.assert_array_equal(split.images.numpy(), images)
    np.testing.assert_array_equal(split.targets.numpy(), np.arange(1100))


def test_jpeg_split_decodes_as_the_store_reader(tmp_path):
    rows, cols = np.mgrid[0:16, 0:12]
    colours = random_images(40, (1, 1, 3)) // 2
    images = (colours + (rows * 4 + cols * 3)[None, :, :, None]).astype(np.uint8)  # smooth: JPEG keeps it close
    folder = make_dataset(tmp_path, {"train": images}, "jpeg")
    split = load_split(folder, "train", MEMORY, processes=2)
    reader = SplitReader(folder, "train", "jpeg", (16, 12, 3), ClassLabels())
    np.testing.assert_array_equal(split.images.numpy(), np.stack([reader.image(i) for i in range(40)]))
    assert np.abs(split.images.numpy().astype(int) - images).mean() < 4


def test_split_over_budget_streams(tmp_path):
    images = random_images(20)
    folder = make_dataset(tmp_path, {"train": images}, "png")
    split = load_split(folder, "train", 20 * 8 * 10 * 3 - 1)
    assert isinstance(split, StreamingSplit)
    assert len(split) == 20 and split.image_shape == (8, 10, 3) and split.to("cpu") is split
    assert isinstance(load_split(folder, "train", 20 * 8 * 10 * 3), SplitData)


@pytest.mark.parametrize("encoding", ["none", "png"])
def test_streaming_yields_the_batches_of_memory(tmp_path, encoding):
    folder = make_dataset(tmp_path, {"train": random_images(45)}, encoding)
    info = DatasetInfo.load(folder)
    outputs = []
    for budget in (MEMORY, 0):
        batches = Batches(load_split(folder, "train", budget), 8, shuffle=True, seed=3,
                          normalizer=Normalizer("image", info.mean), augment=Augment(AUGMENT, 5, "cpu"))
        runs = []
        for epoch in (0, 1):
            batches.set_epoch(epoch)
            runs.append(list(batches))
        batches.set_epoch(1)
        batches.start_at(4)
        runs.append(list(batches))
        outputs.append(runs)
    memory, streamed = outputs
    assert isinstance(load_split(folder, "train", 0), StreamingSplit)
    for run_memory, run_streamed in zip(memory, streamed, strict=True):
        assert len(run_memory) == len(run_streamed)
        for (x_memory, y_memory), (x_streamed, y_streamed) in zip(run_memory, run_streamed, strict=True):
            assert torch.equal(y_memory, y_streamed)
            assert torch.equal(x_memory, x_streamed)
    assert len(memory[0]) == 6 and len(memory[2]) == 2
    assert memory[0][0][0].shape == (8, 3, 6, 6)


def test_every_sample_once_per_epoch_in_an_order_per_seed_and_epoch():
    split = in_memory(50)
    batches = plain(split, seed=7)
    assert len(batches) == 7 and batches.samples == 50
    first = epoch_labels(batches)
    assert sorted(first) == list(range(50)) and first != list(range(50))
    assert epoch_labels(batches) == first  # the same epoch again
    assert epoch_labels(plain(split, seed=7)) == first
    assert epoch_labels(plain(split, seed=8)) != first
    batches.set_epoch(1)
    second = epoch_labels(batches)
    assert sorted(second) == list(range(50)) and second != first
    assert epoch_labels(plain(split, shuffle=False)) == list(range(50))


def test_batches_carry_the_pixels_of_their_labels():
    split = in_memory(20)
    for x, y in plain(split, 6):
        assert x.dtype == torch.float32 and x.shape[1:] == (3, 8, 10)
        assert torch.equal(x, split.images[y].permute(0, 3, 1, 2).float() / 255)


def test_rank_shards_are_disjoint_and_equal():
    split = in_memory(50)
    shards = [epoch_labels(plain(split, 4, seed=2, rank=rank, world_size=3)) for rank in range(3)]
    assert [len(shard) for shard in shards] == [16, 16, 16]
    assert [len(plain(split, 4, rank=rank, world_size=3)) for rank in range(3)] == [4, 4, 4]
    assert len(set().union(*shards)) == 48
    whole = epoch_labels(plain(split, 4, seed=2))
    assert [label for trio in zip(*shards, strict=True) for label in trio] == whole[:48]


def test_evaluation_shards_cover_every_sample_once():
    split = in_memory(50)
    shards = [plain(split, 8, shuffle=False, rank=rank, world_size=3) for rank in range(3)]
    assert [shard.samples for shard in shards] == [17, 17, 16]
    labels = [label for shard in shards for label in epoch_labels(shard)]
    assert sorted(labels) == list(range(50))


def test_drop_last_and_batch_size_changes():
    split = in_memory(50)
    batches = plain(split, 8, drop_last=True)
    assert len(batches) == 6 and batches.samples == 48
    assert [len(y) for _, y in batches] == [8] * 6
    batches.set_batch_size(20)
    assert len(batches) == 2 and [len(y) for _, y in batches] == [20, 20]
    batches = plain(split, 20)
    assert [len(y) for _, y in batches] == [20, 20, 10]


def test_start_at_yields_the_rest_of_the_epoch_exactly():
    split = in_memory(50)
    augment = Augment(AUGMENT, 11, "cpu")
    batches = Batches(split, 8, shuffle=True, seed=4, normalizer=Normalizer("pixel", np.full((8, 10, 3), 100.0)),
                      augment=augment)
    batches.set_epoch(2)
    whole = []
    for number, batch in enumerate(batches):
        whole.append(batch)
        if number == 2:
            state, augment_state = batches.state(), augment.state_dict()
    assert state == {"epoch": 2, "index": 3}
    assert batches.state() == {"epoch": 2, "index": 7}

    resumed_augment = Augment(AUGMENT, 0, "cpu")
    resumed_augment.load_state_dict(augment_state)
    resumed = Batches(split, 8, shuffle=True, seed=4, normalizer=Normalizer("pixel", np.full((8, 10, 3), 100.0)),
                      augment=resumed_augment)
    resumed.set_epoch(state["epoch"])
    resumed.start_at(state["index"])
    tail = list(resumed)
    assert len(tail) == 4
    for (x, y), (x_whole, y_whole) in zip(tail, whole[3:], strict=True):
        assert torch.equal(y, y_whole) and torch.equal(x, x_whole)
    assert resumed.state() == {"epoch": 2, "index": 7}
    assert len(list(resumed)) == 7  # the next iteration is a whole epoch again


def test_data_wait_is_measured():
    batches = plain(in_memory(20), 5)
    list(batches)
    assert batches.data_wait_seconds > 0


def test_normalizer_modes():
    pixels = torch.tensor([[[[0, 51, 255], [102, 204, 0]]]], dtype=torch.uint8)  # 1×1×2×3
    mean = np.array([[[51.0, 51.0, 0.0], [153.0, 102.0, 255.0]]])  # 1×2×3
    unit = pixels.permute(0, 3, 1, 2).float() / 255
    none = Normalizer("none", None)(pixels)
    assert none.shape == (1, 3, 1, 2) and none.dtype == torch.float32
    torch.testing.assert_close(none, unit)
    image = Normalizer("image", mean)(pixels)
    torch.testing.assert_close(image, unit - torch.tensor(mean, dtype=torch.float32).permute(2, 0, 1)[None] / 255)
    assert image[0, :, 0, 0].tolist() == pytest.approx([-0.2, 0.0, 1.0])
    pixel = Normalizer("pixel", mean)(pixels)
    torch.testing.assert_close(pixel, unit - torch.tensor([102.0, 76.5, 127.5]).view(1, 3, 1, 1) / 255)
    assert image.is_contiguous()
    with pytest.raises(ValueError, match="no mean image"):
        Normalizer("image", None)
    with pytest.raises(ValueError):
        Normalizer("median", mean)


def test_image_mean_is_subtracted_before_the_crop():
    """An image equal to the mean normalises to zero wherever the crop, translation and flips take it."""
    mean = random_images(1, (8, 10, 3))[0]
    split = SplitData(torch.from_numpy(np.repeat(mean[None], 12, axis=0)), torch.arange(12))
    augment = Augment({"crop": 5, "translate": 3, "flip": "both"}, 1, "cpu")
    for x, _ in Batches(split, 4, shuffle=True, normalizer=Normalizer("image", mean.astype(np.float32)), augment=augment):
        assert x.shape == (4, 3, 5, 5)
        assert x.abs().max() < 1e-6
    whole = Normalizer("none", None)
    centred = Normalizer("none", None, 5)
    for augment in (Augment({"crop": 5, "flip": "both"}, 0, "cpu", train=False), None):
        for x, y in Batches(split, 5, shuffle=False, normalizer=centred, augment=augment):
            torch.testing.assert_close(x, whole(split.images[y])[:, :, 1:6, 2:7])
            torch.testing.assert_close(x, centred(split.images[y]))


def test_the_normalizer_centre_crops_after_subtracting_the_mean():
    pixels = torch.from_numpy(random_images(3, (6, 9, 1)))
    mean = random_images(1, (6, 9, 1))[0].astype(np.float32)
    out = Normalizer("image", mean, 4)(pixels)
    assert out.shape == (3, 1, 4, 4) and out.is_contiguous()
    torch.testing.assert_close(out, Normalizer("image", mean)(pixels)[:, :, 1:5, 2:6])
    with pytest.raises(ValueError, match="larger than the images"):
        Normalizer("none", None, 7)(pixels)


def test_channels_last_batches():
    split = in_memory(8)
    x, _ = next(iter(plain(split, 4, channels_last=True)))
    assert x.is_contiguous(memory_format=torch.channels_last) and x.shape == (4, 3, 8, 10)
    x, _ = next(iter(plain(split, 4)))
    assert x.is_contiguous()


def test_head_gives_the_first_images(tmp_path):
    images = random_images(12)
    folder = make_dataset(tmp_path, {"train": images}, "png")
    for budget in (MEMORY, 0):
        head = load_split(folder, "train", budget).head(5)
        assert head.dtype == torch.uint8
        np.testing.assert_array_equal(head.numpy(), images[:5])



@pytest.mark.parametrize("read_bytes", [30 * 8 * 10 * 3, 1000, 7])
def test_a_raw_split_reads_back_exactly_in_one_read_or_several(tmp_path, monkeypatch, read_bytes):
    """A raw store is read in reads of at most ``READ_BYTES`` (256 MiB).
    Lowered here, so that the 7,200 bytes of pixels are one read (exactly
    ``READ_BYTES``), or several with a short last one (1000, 7 bytes)."""
    monkeypatch.setattr(data, "READ_BYTES", read_bytes)
    images = random_images(30)
    split = load_split(make_dataset(tmp_path, {"train": images}, "none"), "train", MEMORY)
    assert isinstance(split, SplitData)
    np.testing.assert_array_equal(split.images.numpy(), images)


@pytest.mark.parametrize("encoding", ["none", "png"])
def test_head_asks_for_more_images_than_the_split_has(tmp_path, encoding):
    """A network's data-dependent initialisation asks for the first
    ``INIT_FROM_DATA_IMAGES`` (5,000) images: a smaller split gives all it
    has, in memory and streamed, a larger one (the test above) the first."""
    images = random_images(12)
    folder = make_dataset(tmp_path, {"train": images}, encoding)
    for budget in (MEMORY, 0):
        np.testing.assert_array_equal(load_split(folder, "train", budget).head(INIT_FROM_DATA_IMAGES).numpy(), images)


def test_a_long_decode_says_how_far_it_is(tmp_path, monkeypatch, capsys):
    """Decoding by the pool prints its progress every ``STILL_WORKING_SECONDS``
    (lowered to 0 here), so the worker hears a job that decodes for minutes."""
    monkeypatch.setattr("trainer.data.STILL_WORKING_SECONDS", 0.0)
    load_split(make_dataset(tmp_path, {"train": random_images(1100)}, "png"), "train", MEMORY, processes=2)
    assert capsys.readouterr().out.splitlines() == ["decoding: 512 of 1100 images", "decoding: 1024 of 1100 images",
                                                    "decoding: 1100 of 1100 images"]
