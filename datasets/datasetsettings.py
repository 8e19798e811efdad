"""A dataset job's settings as users see them: the options of the New
dataset form, without the server's paths (the allowed roots, where an upload
was kept) — ``JobKind.public_params`` and ``JobKind.settings``."""

from __future__ import annotations

from typing import Any

from jobs.kinds import SettingsGroup, without
from jobs.models import Job

# The params the build needs that are the server's business, not the user's.
_public = without("roots", "archive_limits")


def public_params(params: dict[str, Any]) -> dict[str, Any]:
    """The params users see: an uploaded archive named by the user's own
    file name only, not where the server keeps it."""
    shown = _public(params)
    source = shown.get("source")
    if isinstance(source, dict) and source.get("type") == "archive":
        shown["source"] = {key: value for key, value in source.items() if key != "path"}
    return shown


def public_manifest(info: dict[str, Any] | None) -> dict[str, Any] | None:
    """A built dataset's manifest as the API gives it: the options it was
    built with as ``public_params`` shows them."""
    return info and {**info, "options": public_params(info.get("options", {}))}


def applied(params: dict[str, Any]) -> dict[str, Any]:
    """The options that had a say in the build: a JPEG quality only for
    JPEG; a split's percentage only when no separate folder or list gave the
    split (a folder source names its own; lists of validation or test images
    replace both percentages); a separate folder's per-class limits only
    with that folder. The archive's own folders are not known here."""
    source = params.get("source") or {}
    left_out = set() if params.get("encoding") == "jpeg" else {"quality"}
    if source.get("type") == "folder":
        for split in ("val", "test"):
            left_out |= {f"{split}_percent"} if source.get(split) else {f"{split}_min_per_class", f"{split}_max_per_class"}
    elif source.get("type") == "lists" and (source.get("val") or source.get("test")):
        left_out |= {"val_percent", "test_percent"}
    return {key: value for key, value in params.items() if key not in left_out}


def _text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"  # 25, not 25.0
    return "—" if value in (None, "", []) else str(value)


def settings_table(job: Job) -> list[SettingsGroup]:
    p = applied(public_params(job.params))
    source = p.get("source") or {}
    kind = source.get("type")
    if kind == "archive":
        source_rows = [("Source", "uploaded archive"), ("Archive", _text(source.get("name"))),
                       ("Archive kept", "no" if p.get("keep_upload") is False else "yes")]
    else:
        source_rows = [("Source", {"folder": "server folder", "lists": "text lists"}.get(kind, _text(kind)))]
        source_rows += [(key.replace("_", " ").capitalize(), _text(value)) for key, value in source.items() if key != "type"]
    return [
        ("Source", source_rows),
        ("Images", [("Size", f"{p.get('width')}×{p.get('height')}"),
                    ("Colour", "grayscale" if p.get("channels") == 1 else "colour"),
                    ("Resize", _text(p.get("resize_mode")))]),
        *_label_rows(p),
        ("Split", [*_rows(p, ("Validation %", "val_percent"), ("Test %", "test_percent")),
                   *([("Images per class", f"{_text(p.get('min_per_class'))} to {_text(p.get('max_per_class'))}")]
                     if "min_per_class" in p else []),
                   ("Seed", _text(p.get("seed")))]),
        ("Storage", [("Encoding", _text(p.get("encoding"))), *_rows(p, ("Quality", "quality")),
                     ("Mean image", "yes" if p.get("mean") else "no")]),
    ]


def _label_rows(params: dict[str, Any]) -> list[SettingsGroup]:
    """The labels group of a dataset read with label files (detection's
    ``label_format``, ``class_map``, ``placing``); none for the others."""
    if "label_format" not in params:
        return []
    placing = params.get("placing") or {}
    mapped = params.get("class_map")
    padding = placing.get("pad_width")
    return [("Labels", [
        ("Format", _text(params["label_format"])),
        ("Classes", "all, as named" if not mapped else ", ".join(k if k == v else f"{k} → {v}" for k, v in mapped.items())),
        ("Padding", f"{padding}×{placing.get('pad_height')}" if padding else "none"),
        ("Minimum box size", f"{_text(placing.get('min_box_size'))} px"),
    ])]


def _rows(params: dict[str, Any], *labelled: tuple[str, str]) -> list[tuple[str, str]]:
    """A row for each of the labelled params that applied (``applied`` keeps it)."""
    return [(label, _text(params[key])) for label, key in labelled if key in params]
