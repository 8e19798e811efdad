"""Detect one: a detector's boxes on one image, from the warm model server.
``views`` is the page (``/models/<id>/detect``, whose script calls the API
and filters the boxes itself), ``api`` is ``POST /api/models/<id>/detect``,
``forms`` what a request takes, ``services`` the asking and its refusals.
What it shares with Classify one is in ``inference.oneimage``."""
