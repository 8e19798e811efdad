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


def _text(value: Any) -> str:
    return "—" if value in (None, "", []) else str(value)


def settings_table(job: Job) -> list[SettingsGroup]:
    p = public_params(job.params)
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
        ("Split", [("Validation %", _text(p.get("val_percent"))), ("Test %", _text(p.get("test_percent"))),
                   ("Images per class", f"{_text(p.get('min_per_class'))} to {_text(p.get('max_per_class'))}"),
                   ("Seed", _text(p.get("seed")))]),
        ("Storage", [("Encoding", _text(p.get("encoding"))), ("Quality", _text(p.get("quality"))),
                     ("Mean image", "yes" if p.get("mean") else "no")]),
    ]
