"""What an instance segmentation dataset's job-page section adds
(``taskpages``): its objects per split (images, objects, images with crowd
regions), per class its colour, objects, images and share of the objects'
pixels, histograms of the objects per image and of their sizes, and the
objects per class for the chart. Everything from ``services.statistics``,
which reads ``trainer.instances.targets.Instances.statistics``."""

from __future__ import annotations

from typing import Any

from jobs.models import Job

from . import services
from .detection_pages import bin_label

LAYOUTS = {"voc": "Pascal VOC (SegmentationObject and SegmentationClass)", "coco": "COCO JSON (polygons and RLEs)"}
HISTOGRAMS = (("per_image", "Objects per image", False), ("sides", "Object size (√area, px)", True))


def section_context(job: Job, info: dict[str, Any]) -> dict[str, Any]:
    """The section's ``object_splits``, ``object_rows`` ([label, count a
    split]), ``class_rows`` ([name, colour, [(objects, images, share) a
    split]]), ``histograms`` ([{title, rows: [bin, count a split]}]),
    ``object_chart`` (per class, the objects of each split) and ``layout``."""
    found = services.statistics(job, info)
    colours = services.class_colours(info)
    rows = [("Images", [s["images"] for s in found.values()]),
            ("Objects", [s["objects"] for s in found.values()]),
            ("Objects per image (mean)", [f"{s['objects'] / s['images']:.2f}" if s["images"] else "—"
                                          for s in found.values()]),
            ("Images with crowd regions", [s["crowd_images"] for s in found.values()])]
    class_rows = [(name, colours[index], [(s["per_class"][index]["objects"], s["per_class"][index]["images"],
                                           f"{s['per_class'][index]['share']:.1%}") for s in found.values()])
                  for index, name in enumerate(info["classes"])]
    histograms = []
    for key, title, continuous in HISTOGRAMS:
        per_split = [s[key] for s in found.values()]
        edges = per_split[0]["edges"] if per_split else []
        histograms.append({"title": title, "rows": [
            (bin_label(edges, n, continuous), [h["counts"][n] for h in per_split]) for n in range(len(edges))]})
    chart = {"classes": info["classes"],
             "series": [{"name": split, "y": [c["objects"] for c in s["per_class"]]} for split, s in found.items()]}
    layout = LAYOUTS.get((info.get("labelling") or {}).get("layout"), "—")
    return {"object_splits": list(found), "object_rows": rows, "class_rows": class_rows, "histograms": histograms,
            "object_chart": chart, "layout": layout}
