"""A job's output folder built so that a half-built one never looks
finished: the files go into ``<name>.partial`` beside it and move into
place only when the build succeeds; an error, or an abort (SIGTERM),
removes them."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from trainer.datastore import replace_folder
from trainer.jobmain import removed_on_abort


@contextmanager
def building(final: Path) -> Iterator[Path]:
    """The folder to build ``final`` in; moved into ``final`` (kept files
    there that the build does not write stay) when the block ends well."""
    work = final.with_name(f"{final.name}.partial")
    with removed_on_abort(work):
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        try:
            yield work
            final.mkdir(exist_ok=True)
            replace_folder(work, final)
        finally:
            shutil.rmtree(work, ignore_errors=True)
