"""Text from a job's process as users see it: no server paths.

A traceback names files of the app's checkout, of the Python installation
and of the job's own folder. Users see each relative to where it lies
(``tests/sleeper.py``, ``json/decoder.py``, ``checkpoints/last.pt``): what
they need to read it, and nothing of how the server is laid out."""

from __future__ import annotations

import functools
import os
import sysconfig
from pathlib import Path

from django.conf import settings


@functools.cache
def _install_roots() -> tuple[str, ...]:
    """The Python installation's library folders and the checkout, both as
    named and resolved (the virtual environment may be a link), deepest
    first, so a package's file is named from its library, not the checkout."""
    paths = sysconfig.get_paths()
    roots = [paths[name] for name in ("purelib", "platlib", "platstdlib", "stdlib")]
    roots += [str(settings.BASE_DIR), str(settings.DATA_DIR)]
    named = {root.rstrip("/") for root in roots} | {os.path.realpath(root) for root in roots}
    return tuple(sorted(named, key=len, reverse=True))


def shown(text: str, job_folder: Path) -> str:
    """``text`` with every server path made relative: to the job's folder
    first, then to the Python installation or the checkout."""
    folder = str(job_folder).rstrip("/")
    for root in (folder, os.path.realpath(folder), *_install_roots()):
        text = text.replace(root + "/", "")
    return text
