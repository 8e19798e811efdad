"""The former name of ``datasets.services``, kept only while ``inference/``
(being restructured on its own branch) still imports ``datasets.store``.
Import ``datasets.services`` everywhere else; remove this module once no
module of ``inference/`` names it."""

from .services import SPLITS, manifest, reader

__all__ = ["SPLITS", "manifest", "reader"]
