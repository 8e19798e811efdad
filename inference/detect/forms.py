"""What Detect one takes (the page and ``POST /api/models/<id>/detect``):
one image and the snapshot, as Classify one takes them
(``inference.oneimage.OneImageForm``). No score threshold: the answer has
every box above the model server's floor, and the page filters them."""

from __future__ import annotations

from ..oneimage import OneImageForm


class DetectForm(OneImageForm):
    """The image (``image``, ``split`` and ``index``, or ``path``) and the ``snapshot``."""
