"""The errors of inference, with messages shown to users as they are."""

from __future__ import annotations


class InferenceError(Exception):
    """A request that cannot be answered: a bad image, an unreadable or
    mismatched snapshot. ``str(exc)`` is a message for the user; nothing was
    changed."""


class ModelNotFound(InferenceError):
    """The model's job folder, dataset or snapshot is gone (the web answers 404)."""
