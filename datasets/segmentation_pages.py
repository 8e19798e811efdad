"""What a semantic segmentation dataset's job-page section adds
(``taskpages``): how its label images were read (``labelling`` of the
manifest, the build's guess among it), the pixels per split, and per class
its colour, its share of the labelled pixels and the images showing it,
per split, with the chart of the shares. Everything from
``services.statistics``, which reads ``trainer.segmentation.targets.Masks.statistics``."""

from __future__ import annotations

from typing import Any

from jobs.models import Job

from . import services

LABEL_TYPES = {"values": "values (palette indices or gray levels)", "colours": "colours, by the colour map",
               "shapes": "COCO polygons and RLEs, drawn (crowd regions ignored)"}
LAYOUTS = {"voc": "Pascal VOC", "folders": "folders", "coco": "COCO JSON"}


def section_context(job: Job, info: dict[str, Any]) -> dict[str, Any]:
    """The section's ``mask_splits``, ``pixel_rows`` ([label, value a split]),
    ``class_rows`` ([name, colour, [(share, images) a split]]),
    ``share_chart`` (per class, the share of each split) and ``labelling``
    (rows of how the labels were read, and the build's ``guess``)."""
    found = services.statistics(job, info)
    colours = services.class_colours(info)
    rows = [("Images", [s["images"] for s in found.values()]),
            ("Pixels", [s["pixels"] for s in found.values()]),
            ("Ignored pixels", [f"{s['ignored'] / s['pixels']:.1%}" if s["pixels"] else "—" for s in found.values()])]
    class_rows = [(name, colours[index], [(f"{s['per_class'][index]['share']:.1%}", s["per_class"][index]["images"])
                                          for s in found.values()])
                  for index, name in enumerate(info["classes"])]
    chart = {"classes": info["classes"], "colours": colours,
             "series": [{"name": split, "y": [c["share"] for c in s["per_class"]]} for split, s in found.items()]}
    labelling = info.get("labelling") or {}
    read = [("Layout", LAYOUTS.get(labelling.get("layout"), "folders")),
            ("Label images hold", LABEL_TYPES.get(labelling.get("label_type"), "—")),
            ("Ignored", labelling.get("ignore") or "nothing")]
    if labelling.get("binary"):
        read.append(("0 and 255", "background and foreground"))
    return {"mask_splits": list(found), "pixel_rows": rows, "class_rows": class_rows, "share_chart": chart,
            "labelling_rows": read, "labelling_guess": labelling.get("guess") or ""}
