"""Classify one: a model's answer for one image, from the warm model server.
``views`` is the page (``/models/<id>/classify``, whose script calls the
API), ``api`` is ``POST /api/models/<id>/classify``, ``forms`` what a
request takes, ``services`` the asking and its refusals, ``gallery`` the
dataset images the page offers to pick. Classify many is an evaluation
job (``inference.evaluate``)."""
