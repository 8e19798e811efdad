"""Detection sources in KITTI, Pascal VOC, COCO and YOLO are read into boxes in
continuous pixels (YOLO: fractions), from a folder and from a zip read in
place alike, and every bad file or line is reported by file, line and reason,
its image left out. Every source here is a few tiny hand-written files."""

from __future__ import annotations

import io
import json
import os
import time
import zipfile
from pathlib import Path

import pytest
from PIL import Image

from trainer.archives import Entry, list_members
from trainer.dataset_sources import SourceError
from trainer.detection.annotations import Box, Problem
from trainer.detection.common import ImportOptions
from trainer.detection.importer import FORMATS, guess_format, read_source
from trainer.detection.sourcefiles import ArchiveFiles, FolderFiles, SourceFiles, TooLarge


def png(width: int = 8, height: int = 6) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (40, 80, 120)).save(out, "PNG")
    return out.getvalue()


PNG = png()
Files = dict[str, bytes | str]


def make_folder(root: Path, files: Files) -> Path:
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)
    return root


def make_zip(path: Path, files: Files) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path


@pytest.fixture(params=["folder", "zip"])
def source(request, tmp_path):
    """Makes a source of the given files, as a server folder or as an uploaded zip read in place."""
    def made(files: Files) -> SourceFiles:
        if request.param == "folder":
            return FolderFiles(make_folder(tmp_path / "source", files))
        return ArchiveFiles(list_members(make_zip(tmp_path / "source.zip", files), tmp_path / "unpacked.tar"))
    return made


def read(files: SourceFiles, format: str, **options):
    return read_source(files, format, ImportOptions(**options))


def boxes(found) -> dict[str, list[Box]]:
    return {annotated.image: annotated.boxes for annotated in found.images}


def reasons(found) -> list[tuple[str, int | None, str]]:
    return [(p.file, p.line, p.reason) for p in found.problems]


# ---- Source files ---------------------------------------------------------------------------------


def test_names_are_sorted_relative_and_skip_dot_files_inside_a_wrapping_folder(source):
    files = source({"data/b/2.png": PNG, "data/a.txt": "x", "data/.hidden": "x", "data/.git/config": "x",
                    "data/b/1.png": PNG})
    assert files.names() == ["a.txt", "b/1.png", "b/2.png"]
    assert files.read("a.txt") == b"x"
    where = files.path_or_member("b/1.png")
    if isinstance(files, FolderFiles):
        assert Path(where).is_absolute() and Path(where).read_bytes() == PNG
    else:
        assert isinstance(where, Entry) and where.name == "data/b/1.png"


def test_a_wrapping_folder_the_formats_name_is_kept(source):
    assert source({"images/1.png": PNG}).names() == ["images/1.png"]


def test_a_label_file_over_the_limit_is_refused_before_it_is_read(source):
    files = source({"big.json": "x" * 2000})
    with pytest.raises(TooLarge, match="the file is 2,000 bytes, over the 1,000 bytes limit for a label file"):
        files.read("big.json", limit=1000)


def test_a_label_file_over_the_limit_is_reported(source):
    files = source({"images/1.png": PNG, "labels/1.txt": "x" * 101})
    found = read(files, "kitti", max_label_bytes=100)
    assert found.images == []
    assert reasons(found) == [("labels/1.txt", None, "the file is 101 bytes, over the 100 bytes limit for a label file")]


def test_links_that_leave_the_folder_are_refused_and_reported(tmp_path):
    root = make_folder(tmp_path / "source", {"images/1.png": PNG, "labels/1.txt": "0 0.5 0.5 0.5 0.5",
                                             "classes.txt": "cat"})
    (tmp_path / "secret.txt").write_text("secret")
    os.symlink(tmp_path / "secret.txt", root / "labels" / "2.txt")
    os.symlink(root / "images" / "1.png", root / "images" / "3.png")  # inside: kept
    os.symlink(tmp_path, root / "outside")
    files = FolderFiles(root)
    assert files.names() == ["classes.txt", "images/1.png", "images/3.png", "labels/1.txt"]
    found = read(files, "yolo")
    assert ("labels/2.txt", None, "a link to a file outside the folder; left out") in reasons(found)
    assert ("outside", None, "a link to a folder; it is not followed") in reasons(found)
    with pytest.raises(KeyError):
        files.read("labels/2.txt")


# ---- KITTI ----------------------------------------------------------------------------------------


def kitti(kind: str, left: str, top: str, right: str, bottom: str, extra: str = "") -> str:
    return f"{kind} 0.00 0 -1.57 {left} {top} {right} {bottom} 1.5 1.6 3.9 1.0 2.0 3.0 -1.5{extra}\n"


KITTI_LABELS = (kitti("Car", "1.5", "2", "5", "6.25") + kitti("van", "0", "0", "3", "3", " 0.87")
                + kitti("Pedestrian", "2", "1", "4", "5") + kitti("DontCare", "6", "0", "8", "2")
                + kitti("Tram", "0", "0", "1", "1") + "\n")


def test_kitti_reads_boxes_merges_classes_and_keeps_dontcare_as_ignored_regions(source):
    files = source({"training/image_2/000001.png": PNG, "training/label_2/000001.txt": KITTI_LABELS,
                    "training/image_2/000002.png": PNG, "training/label_2/000002.txt": kitti("Tram", "0", "0", "2", "2")})
    found = read(files, "kitti", class_map={"Car": "car", "Van": "car", "Pedestrian": "person"})
    assert found.classes == ["car", "person"]
    first, second = found.images
    assert first.image == "image_2/000001.png" and first.label_file == "label_2/000001.txt" and not first.fractions
    assert first.boxes == [Box(1.5, 2, 5, 6.25, "car", line=1), Box(0, 0, 3, 3, "car", line=2),
                           Box(2, 1, 4, 5, "person", line=3)]
    assert first.ignore == [Box(6, 0, 8, 2, "DontCare", line=4)]
    assert second.boxes == []
    assert reasons(found) == [("label_2", None, "class 'Tram' is not in the class list; its 2 boxes are left out")]


def test_kitti_without_a_class_map_keeps_the_names_it_meets(source):
    found = read(source({"images/a.png": PNG, "labels/a.txt": KITTI_LABELS}), "kitti")
    assert found.classes == ["Car", "Pedestrian", "Tram", "van"]
    assert found.problems == []


def test_kitti_reports_every_bad_line_and_leaves_its_image_out(source):
    bad = (kitti("Car", "1", "1", "4", "4") + "Car 0 0 0 1 2 3\n" + kitti("Car", "1", "x", "4", "4")
           + kitti("Car", "40", "1", "10", "4") + kitti("Car", "1", "4", "5", "4") + kitti("Car", "-9", "-9", "-1", "3"))
    files = source({"image_2/1.png": PNG, "label_2/1.txt": bad, "image_2/2.png": PNG,
                    "label_2/2.txt": kitti("Car", "1", "1", "4", "4"), "label_2/3.txt": kitti("Car", "1", "1", "4", "4"),
                    "image_2/4.png": PNG, "label_2/5.txt": b"Car \xff\n", "image_2/5.png": PNG, "image_2/readme.md": "x"})
    found = read(files, "kitti")
    assert [a.image for a in found.images] == ["image_2/2.png"]
    assert reasons(found) == [
        ("image_2/4.png", None, "label missing: no label file label_2/4.txt for it; the image is left out"),
        ("label_2/1.txt", 2, "has 7 columns; a KITTI line has 15 (16 with a score)"),
        ("label_2/1.txt", 3, "top (column 6) 'x' is not a number"),
        ("label_2/1.txt", 4, "x2 (10) is left of x1 (40)"),
        ("label_2/1.txt", 5, "y2 (4) equals y1 (4): the box has no height"),
        ("label_2/1.txt", 6, "the box ends at x2 -1, y2 3, left of or above the image"),
        ("label_2/3.txt", None, "image missing: no image file image_2/3.* for it"),
        ("label_2/5.txt", 1, "not valid UTF-8 text (byte 0xff)"),
    ]
    assert str(found.problems[1]) == "label_2/1.txt, line 2: has 7 columns; a KITTI line has 15 (16 with a score)"


def test_kitti_images_without_any_label_folder_are_not_labelled_data(source):
    files = source({"training/image_2/1.png": PNG, "training/label_2/1.txt": kitti("Car", "1", "1", "4", "4"),
                    "testing/image_2/2.png": PNG})
    found = read(files, "kitti")
    assert list(boxes(found)) == ["training/image_2/1.png"]
    assert found.problems == []


def test_kitti_folders_can_be_named_in_the_options(source):
    files = source({"pics/a.png": PNG, "boxes/a.txt": kitti("Car", "1", "1", "4", "4")})
    with pytest.raises(SourceError, match="No KITTI folders found"):
        read(files, "kitti")
    found = read(files, "kitti", image_folder="pics", label_folder="boxes")
    assert boxes(found) == {"pics/a.png": [Box(1, 1, 4, 4, "Car", line=1)]}


def test_class_names_mapped_twice_are_refused(source):
    with pytest.raises(SourceError, match="maps 'CAR' twice"):
        read(source({"images/a.png": PNG, "labels/a.txt": ""}), "kitti", class_map={"car": "car", "CAR": "auto"})


# ---- Pascal VOC -----------------------------------------------------------------------------------


def voc(filename: str, *objects: str, size: str = "<size><width>8</width><height>6</height><depth>3</depth></size>") -> str:
    return f"<annotation><folder>VOC2012</folder><filename>{filename}</filename>{size}{''.join(objects)}</annotation>"


def voc_object(name: str, xmin: str, ymin: str, xmax: str, ymax: str, difficult: str = "0") -> str:
    return (f"<object><name>{name}</name><difficult>{difficult}</difficult><bndbox><xmin>{xmin}</xmin>"
            f"<ymin>{ymin}</ymin><xmax>{xmax}</xmax><ymax>{ymax}</ymax></bndbox></object>")


def test_voc_converts_one_based_inclusive_pixels_and_keeps_difficult(source):
    files = source({
        "VOC2012/Annotations/a.xml": voc("a.jpg", voc_object("dog", "1", "1", "8", "6"),
                                         voc_object("cat", "3", "2", "3", "4", "1")),
        "VOC2012/JPEGImages/a.jpg": PNG,
        "VOC2012/Annotations/b.xml": voc("wrong-name.jpg", voc_object("dog", "2", "2", "4", "4")),
        "VOC2012/JPEGImages/b.png": PNG,
    })
    found = read(files, "voc")
    assert found.classes == ["cat", "dog"]
    assert boxes(found) == {"JPEGImages/a.jpg": [Box(0, 0, 8, 6, "dog"), Box(2, 1, 3, 4, "cat", difficult=True)],
                            "JPEGImages/b.png": [Box(1, 1, 4, 4, "dog")]}
    assert found.problems == []


def test_voc_reads_xml_files_next_to_their_images(source):
    files = source({"photos/a.png": PNG, "photos/a.xml": voc("a.png", voc_object("Dog", "2", "3", "4", "5"))})
    found = read(files, "voc", class_map={"dog": "animal"})
    assert boxes(found) == {"a.png": [Box(1, 2, 4, 5, "animal")]}  # "photos" wraps it all


def test_voc_reports_bad_objects_and_files(source):
    files = source({
        "Annotations/bad.xml": voc("bad.jpg", voc_object("dog", "40", "1", "10", "4"), voc_object("dog", "1", "1", "2", "2"),
                                   voc_object("dog", "9", "1", "12", "4"), "<object><name>cat</name></object>",
                                   voc_object("cat", "1", "one", "2", "2"), voc_object("", "1", "1", "2", "2")),
        "JPEGImages/bad.jpg": PNG,
        "Annotations/broken.xml": "<annotation>\n<object>\n</annotation>", "JPEGImages/broken.jpg": PNG,
        "Annotations/other.xml": "<svg></svg>", "JPEGImages/other.jpg": PNG,
        "Annotations/lost.xml": voc("lost.jpg"),
        "JPEGImages/alone.jpg": PNG,
        "Annotations/good.xml": voc("good.jpg", voc_object("dog", "1", "1", "2", "2")), "JPEGImages/good.jpg": PNG,
    })
    found = read(files, "voc")
    assert list(boxes(found)) == ["JPEGImages/good.jpg"]
    assert reasons(found) == [
        ("Annotations/bad.xml", None, "object 1 (dog): xmax (10) is left of xmin (40)"),
        ("Annotations/bad.xml", None, "object 3 (dog): the box starts at x1 8, y1 0, outside the 8×6 image"),
        ("Annotations/bad.xml", None, "object 4 (cat): has no <bndbox>"),
        ("Annotations/bad.xml", None, "object 5 (cat): ymin 'one' is not a number"),
        ("Annotations/bad.xml", None, "object 6: has no <name>"),
        ("Annotations/broken.xml", 3, "not valid XML (mismatched tag)"),
        ("Annotations/lost.xml", None, "image missing: neither its <filename> (lost.jpg) nor an image of the same "
                                       "name is in the folder JPEGImages"),
        ("Annotations/other.xml", None, "not a Pascal VOC annotation: its root element is <svg>, not <annotation>"),
        ("JPEGImages/alone.jpg", None, "label missing: no annotation file Annotations/alone.xml for it; the image is left out"),
    ]


def test_voc_refuses_dtds_and_entities_quickly(source):
    laughs = ('<?xml version="1.0"?>\n<!DOCTYPE lolz [\n <!ENTITY lol "lol">\n'
              + "".join(f' <!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10 if i else "&lol;" * 10}">\n' for i in range(9))
              + "]>\n<annotation><filename>a.png</filename><object><name>&lol8;</name></object></annotation>")
    files = source({"Annotations/a.xml": laughs, "JPEGImages/a.png": PNG, "JPEGImages/b.png": PNG,
                    "Annotations/b.xml": '<!doctype annotation SYSTEM "file:///etc/passwd"><annotation/>'})
    started = time.monotonic()
    found = read(files, "voc")
    assert time.monotonic() - started < 1
    assert found.images == []
    assert [(p.file, p.reason.split(",")[0]) for p in found.problems] == [
        ("Annotations/a.xml", "declares a DTD or an entity (<!DOCTYPE or <!ENTITY)"),
        ("Annotations/b.xml", "declares a DTD or an entity (<!DOCTYPE or <!ENTITY)")]


# ---- COCO -----------------------------------------------------------------------------------------

CATEGORIES = [{"id": 3, "name": "person"}, {"id": 1, "name": "bicycle"}]


def coco(images: list, annotations: list, categories: list = CATEGORIES) -> str:
    return json.dumps({"images": images, "annotations": annotations, "categories": categories}, indent=1)


def image(id: int, file_name: str, width: int = 8, height: int = 6) -> dict:
    return {"id": id, "file_name": file_name, "width": width, "height": height}


def annotation(id: int, image_id: int, category_id: int, bbox: list, iscrowd: int = 0) -> dict:
    return {"id": id, "image_id": image_id, "category_id": category_id, "bbox": bbox, "iscrowd": iscrowd}


def test_coco_reads_boxes_categories_in_id_order_and_splits_by_file(source, capsys):
    files = source({
        "annotations/instances_train2017.json": coco(
            [image(1, "1.png"), image(2, "2.png")],
            [annotation(10, 1, 3, [1, 2, 3.5, 4]), annotation(11, 1, 1, [0, 0, 8, 6], iscrowd=1)]),
        "annotations/instances_val2017.json": coco([image(5, "1.png")], [annotation(12, 5, 1, [2, 2, 1, 1])]),
        "images/train2017/1.png": PNG, "images/train2017/2.png": PNG, "images/val2017/1.png": PNG,
    })
    found = read(files, "coco")
    assert found.classes == ["bicycle", "person"]
    assert [(a.image, a.split, a.boxes) for a in found.images] == [
        ("images/train2017/1.png", "train", [Box(1, 2, 4.5, 6, "person", line=10), Box(0, 0, 8, 6, "bicycle", True, 11)]),
        ("images/train2017/2.png", "train", []),
        ("images/val2017/1.png", "val", [Box(2, 2, 3, 3, "bicycle", line=12)]),
    ]
    assert found.problems == []
    assert capsys.readouterr().out == ""


def test_coco_with_one_json_at_the_top_maps_classes(source):
    labels = coco([image(1, "a.png")], [annotation(1, 1, 3, [1, 1, 2, 2]), annotation(2, 1, 1, [1, 1, 2, 2])])
    files = source({"labels.json": labels, "a.png": PNG})
    found = read(files, "coco", class_map={"Person": "human"})
    assert found.classes == ["human"]
    assert [(a.image, a.split, a.boxes) for a in found.images] == [("a.png", None, [Box(1, 1, 3, 3, "human", line=1)])]
    assert reasons(found) == [("labels.json", None, "class 'bicycle' is not in the class list; its 1 box is left out")]


def test_coco_reports_bad_annotations_and_leaves_their_images_out(source):
    files = source({
        "annotations/train.json": coco(
            [image(1, "1.png"), image(2, "2.png"), image(3, "3.png"), image(4, "gone.png"), {"file_name": "x.png"}],
            [annotation(1, 1, 3, [1, 1, 0, 2]), annotation(2, 1, 7, [1, 1, 2, 2]), annotation(3, 2, 3, [9, 1, 2, 2]),
             annotation(4, 9, 3, [1, 1, 2, 2]), annotation(5, 3, 3, [1, 1, 2, 2]), annotation(6, 2, 3, [1, "2", 2, 2])]),
        "annotations/val.json": '{"images": [\n  {"id": 1,}\n]}',
        "images/1.png": PNG, "images/2.png": PNG, "images/3.png": PNG,
    })
    found = read(files, "coco")
    assert [(a.image, a.boxes) for a in found.images] == [("images/3.png", [Box(1, 1, 3, 3, "person", line=5)])]
    assert reasons(found) == [
        ("annotations/train.json", None, "image 4 of the images list needs a whole-number id and a file_name"),
        ("annotations/train.json", None, "annotation 4: image id 9 is not in the images list"),
        ("annotations/train.json", None, "annotation 1: width (0) is not positive"),
        ("annotations/train.json", None, "annotation 2: category id 7 is not in the categories"),
        ("annotations/train.json", None, "annotation 3: the box starts at x1 9, y1 1, outside the 8×6 image"),
        ("annotations/train.json", None, 'annotation 6: bbox [1, "2", 2, 2] is not [x, y, width, height] numbers'),
        ("annotations/train.json", None, "image 4 (gone.png): image missing: it is not in the source"),
        ("annotations/val.json", 2, "not valid JSON (Expecting property name enclosed in double quotes)"),
    ]


def test_coco_that_is_not_an_annotation_file_is_reported(source):
    found = read(source({"a.json": "[1, 2]", "a.png": PNG}), "coco")
    assert reasons(found) == [("a.json", None, "not a COCO annotation file: it needs 'images' and 'categories' lists "
                                                "(and 'annotations')")]


def test_coco_json_nested_too_deeply_for_the_parser_is_reported_not_raised(source):
    found = read(source({"a.json": "[" * 200_000 + "]" * 200_000, "a.png": PNG}), "coco")
    assert reasons(found) == [("a.json", None, "not a COCO file: its JSON is nested too deeply")]


# ---- YOLO -----------------------------------------------------------------------------------------


def test_yolo_keeps_fractions_splits_and_empty_label_files(source):
    files = source({
        "data.yaml": "path: .\nnames:\n  0: cat\n  1: dog\n",
        "images/train/a.png": PNG, "labels/train/a.txt": "1 0.5 0.5 0.5 0.25\n0 0.25 0.75 0.5 0.5\n",
        "images/val/b.png": PNG, "labels/val/b.txt": "",
    })
    found = read(files, "yolo")
    assert found.classes == ["cat", "dog"]
    assert [(a.image, a.split, a.fractions, a.boxes) for a in found.images] == [
        ("images/train/a.png", "train", True, [Box(0.25, 0.375, 0.75, 0.625, "dog", line=1), Box(0, 0.5, 0.5, 1, "cat", line=2)]),
        ("images/val/b.png", "val", True, []),
    ]
    assert found.problems == []


def test_a_yolo_data_yaml_with_aliases_is_refused_before_it_is_expanded(source):
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nnames: [*b, *b, *b, *b]\n"
    files = source({"data.yaml": bomb, "images/a.png": PNG, "labels/a.txt": "0 0.5 0.5 1 1\n"})
    with pytest.raises(SourceError, match="data.yaml: line 1, column 4: YAML anchors"):
        read(files, "yolo")


@pytest.mark.parametrize("listing", ["classes.txt", "obj.names", "labels/classes.txt"])
def test_yolo_reads_classes_txt_or_obj_names_and_maps_classes(source, listing):
    files = source({listing: "Cat\nDog\n\n", "train/images/a.png": PNG, "train/labels/a.txt": "0 0.5 0.5 1 1\n1 0.5 0.5 1 1\n"})
    found = read(files, "yolo", class_map={"cat": "pet"})
    assert found.classes == ["pet"]
    assert boxes(found) == {"train/images/a.png": [Box(0, 0, 1, 1, "pet", line=1)]}
    assert reasons(found) == [("train/labels", None, "class 'Dog' is not in the class list; its 1 box is left out")]


def test_yolo_reports_every_bad_line_and_leaves_its_image_out(source):
    files = source({
        "classes.txt": "cat\ndog\n",
        "images/a.png": PNG, "labels/a.txt": "0 0.5 0.5 0.2 0.2\n2 0.5 0.5 0.2 0.2\n0 1.5 0.5 0.2 0.2\n0 0.5 0.5 0.2\n"
                                             "x 0.5 0.5 0.2 0.2\n0 0.5 0.5 0 0.2\n0 0.5 nan 0.2 0.2\n",
        "images/b.png": PNG, "images/c.png": PNG, "labels/c.txt": "0 0.5 0.5 1 1", "labels/d.txt": "",
    })
    found = read(files, "yolo")
    assert list(boxes(found)) == ["images/c.png"]
    assert reasons(found) == [
        ("images/b.png", None, "label missing: no label file labels/b.txt for it; the image is left out"),
        ("labels/a.txt", 2, "class 2 is beyond the classes file (classes.txt lists 2: 0 to 1)"),
        ("labels/a.txt", 3, "cx (1.5) is outside [0, 1]: YOLO values are fractions of the image's size"),
        ("labels/a.txt", 4, "has 4 columns; a YOLO line is 'class cx cy w h' (5)"),
        ("labels/a.txt", 5, "class 'x' is not a whole number"),
        ("labels/a.txt", 6, "width is 0: the box has no width"),
        ("labels/a.txt", 7, "cy 'nan' is not a number"),
        ("labels/d.txt", None, "image missing: no image file images/d.* for it"),
    ]


def test_yolo_without_a_classes_file_is_refused(source):
    with pytest.raises(SourceError, match="No YOLO classes file found"):
        read(source({"images/a.png": PNG, "labels/a.txt": ""}), "yolo")


# ---- Guessing the format, and what all formats share ----------------------------------------------


@pytest.mark.parametrize(("files", "expected"), [
    ({"image_2/1.png": PNG, "label_2/1.txt": ""}, "kitti"),
    ({"images/1.png": PNG, "labels/1.txt": kitti("Car", "1", "1", "2", "2")}, "kitti"),
    ({"Annotations/1.xml": "", "JPEGImages/1.jpg": PNG}, "voc"),
    ({"pics/1.xml": "", "pics/1.jpg": PNG}, "voc"),
    ({"annotations/instances_val2017.json": "{}", "val2017/1.jpg": PNG}, "coco"),
    ({"images/1.png": PNG, "labels/1.txt": "", "obj.names": "cat"}, "yolo"),
    ({"images/1.png": PNG, "labels/1.txt": "\n0 0.5 0.5 0.1 0.1\n"}, "yolo"),
    ({"cats/1.png": PNG, "dogs/2.png": PNG}, None),
])
def test_guess_format_recognises_each_layout(source, files, expected):
    assert guess_format(source(files)) == expected


def test_an_image_labelled_twice_keeps_its_first_labels(source):
    files = source({"annotations/a_train.json": coco([image(1, "1.png")], [annotation(1, 1, 3, [1, 1, 2, 2])]),
                    "annotations/b_val.json": coco([image(1, "1.png")], []), "images/1.png": PNG})
    found = read(files, "coco")
    assert [(a.image, a.split, len(a.boxes)) for a in found.images] == [("images/1.png", "train", 1)]
    assert reasons(found) == [("annotations/b_val.json", None, "labels the image images/1.png again (first in "
                                                               "annotations/a_train.json); these labels are left out")]


def test_an_unknown_format_is_refused(source):
    with pytest.raises(SourceError, match="Unknown detection format 'csv': expected one of kitti, voc, coco, yolo"):
        read(source({"a.png": PNG}), "csv")
    assert set(FORMATS) == {"kitti", "voc", "coco", "yolo"}


def test_problems_name_files_as_the_source_does():
    assert str(Problem("label_2/1.txt", None, "x")) == "label_2/1.txt: x"
