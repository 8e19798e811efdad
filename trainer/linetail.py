"""Reading a file that another process appends lines to: each read returns
the complete lines added since the last one, never a half-written last line,
and never re-reads what was read before. The event log, the job's log and
the chart series all read their files this way."""

from __future__ import annotations

from pathlib import Path


class LineTail:
    """The complete new lines of a growing file.

    ``offset`` is where the next read starts (the end of the last complete
    line read); ``partial`` tells whether the last read stopped before a
    half-written line."""

    def __init__(self, path: Path | str, offset: int = 0) -> None:
        self.path = Path(path)
        self.offset = offset
        self.partial = False

    def read(self) -> bytes:
        """The complete lines added since the last read, as one block ending
        with its ``\\n`` (empty when the file does not exist yet)."""
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                block = handle.read()
        except FileNotFoundError:
            return b""
        complete = block.rfind(b"\n") + 1
        self.offset += complete
        self.partial = complete != len(block)
        return block[:complete]

    def lines(self) -> list[bytes]:
        """``read()`` cut into lines, without their line ends."""
        return self.read().splitlines()
