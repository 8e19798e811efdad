"""What Segment one takes (the page and ``POST /api/models/<id>/segment``):
one image and the snapshot, as Classify one takes them
(``inference.oneimage.OneImageForm``)."""

from __future__ import annotations

from ..oneimage import OneImageForm


class SegmentForm(OneImageForm):
    """The image (``image``, ``split`` and ``index``, or ``path``) and the ``snapshot``."""
