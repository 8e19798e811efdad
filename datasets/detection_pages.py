"""What a detection dataset's job-page section adds (``taskpages``): its box
statistics per split as table rows, its histograms with their bins named,
the boxes per class for the chart, and the boxes its build left out
(``target_counts``). Everything from ``services.statistics``, which reads
``trainer.detection.targets.Boxes.statistics``."""

from __future__ import annotations

from typing import Any

from jobs.models import Job

from . import services

# The manifest's target_counts as the page names them; a count not named
# here is shown by its key.
LEFT_OUT = {"small_boxes": "Boxes left out as smaller than the minimum box size"}
HISTOGRAMS = (("boxes_per_image", "Boxes per image", False), ("width", "Box width (px)", True),
              ("height", "Box height (px)", True))


def section_context(job: Job, info: dict[str, Any]) -> dict[str, Any]:
    """The section's ``box_rows`` ([label, count a split]), ``box_splits``,
    ``histograms`` ([{title, rows: [bin, count a split]}]), ``box_chart``
    (per class, the boxes of each split) and ``left_out`` ([label, count])."""
    found = services.statistics(job, info)
    splits = list(found)
    rows = [("Images", [s["images"] for s in found.values()]),
            ("Boxes", [s["boxes"] for s in found.values()]),
            ("Boxes per image (mean)", [f"{s['boxes_per_image']['mean']:.2f}" for s in found.values()]),
            ("Boxes per image (most)", [s["boxes_per_image"]["max"] for s in found.values()]),
            ("Images without boxes", [s["images_without_boxes"] for s in found.values()]),
            ("Difficult boxes", [s["difficult"] for s in found.values()]),
            ("Ignore regions", [s["ignore_regions"] for s in found.values()])]
    histograms = []
    for key, title, continuous in HISTOGRAMS:
        per_split = [s[key]["histogram"] if key == "boxes_per_image" else s[key] for s in found.values()]
        edges = per_split[0]["edges"] if per_split else []
        histograms.append({"title": title, "rows": [
            (bin_label(edges, n, continuous), [h["counts"][n] for h in per_split]) for n in range(len(edges))]})
    chart = {"classes": info["classes"],
             "series": [{"name": split, "y": [c["boxes"] for c in s["per_class"]]} for split, s in found.items()]}
    left_out = [(LEFT_OUT.get(key, key.replace("_", " ")), count)
                for key, count in (info.get("target_counts") or {}).items()]
    return {"box_splits": splits, "box_rows": rows, "histograms": histograms, "box_chart": chart, "left_out": left_out}


def bin_label(edges: list[int], n: int, continuous: bool) -> str:
    """A histogram bin by its edges: whole counts ``5–9``, lengths ``8–16``
    (from the edge up to the next), the last open-ended (``100+``)."""
    low = edges[n]
    if n + 1 == len(edges):
        return f"{low}+"
    high = edges[n + 1] if continuous else edges[n + 1] - 1
    return str(low) if high == low else f"{low}–{high}"
