"""A task's target format in the store: classification's class labels."""

from pathlib import Path

import numpy as np
import pytest

from trainer.datastore import RawSplitWriter, SplitReader, open_slots
from trainer.targets import ClassLabels
from trainer.tasks import task_of


def test_class_labels_keep_the_targets_of_the_images_stored_in_store_order(tmp_path):
    labels = ClassLabels()
    writer = labels.writer(Path("unused"), "train", 5)
    for slot, label in enumerate([3, 1, 4, 1, 5]):
        writer.put(slot, label)
    writer.save(tmp_path, "val", np.array([0, 2, 4]))  # slots 1 and 3 were skipped
    stored = labels.read(tmp_path, "val")
    assert stored.dtype == np.int32 and stored.tolist() == [3, 4, 5]
    assert (tmp_path / labels.file("val")).is_file()
    assert labels.images_of_class(stored, 4).tolist() == [1]
    assert labels.classes_of(stored, 2) == [5]
    assert labels.shown(stored, 2) == [{"class": 5}]


def test_class_labels_count_their_images_per_class_as_the_manifest_does():
    labels = np.array([2, 0, 2, 2], dtype=np.int32)
    assert ClassLabels().statistics(labels, ["a", "b", "c"]) == {
        "images": 4, "per_class": [{"name": "a", "images": 1}, {"name": "b", "images": 0}, {"name": "c", "images": 3}]}
    with pytest.raises(ValueError, match="class 2 of 2 classes"):
        ClassLabels().statistics(labels, ["a", "b"])


def test_a_raw_split_with_a_skipped_image_reads_back_each_image_with_its_own_label(tmp_path):
    targets = task_of({}).targets
    writer = RawSplitWriter(tmp_path, "train", (2, 2, 1), 3, targets)
    images = open_slots(writer.slots())
    for slot, label in ((0, 7), (2, 9)):  # slot 1 is a file that could not be decoded
        images[slot] = slot + 1
        writer.mark(slot, label)
    images.flush()
    del images
    writer.close()
    reader = SplitReader(tmp_path, "train", "none", (2, 2, 1), targets)
    assert len(reader) == 2 and reader.targets.tolist() == [7, 9]
    assert reader.image(1).max() == 3
