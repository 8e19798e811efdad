"""How many live event streams each user holds open in this web process, so
that one user (or a page opened in a loop) cannot take every connection:
``SSE_STREAMS_PER_USER`` at once, the next one is refused with 429."""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import AsyncGenerator, AsyncIterator

_open: Counter[int] = Counter()


class Slot:
    def __init__(self, user_id: int) -> None:
        self.user_id = user_id
        self.held = True
        _open[user_id] += 1

    def release(self) -> None:
        if self.held:
            self.held = False
            _open[self.user_id] -= 1
            if not _open[self.user_id]:
                del _open[self.user_id]


def take(user_id: int, limit: int) -> Slot | None:
    """A slot for one more stream of the user's, or None at the limit."""
    return Slot(user_id) if _open[user_id] < limit else None


def open_streams(user_id: int) -> int:
    return _open[user_id]


def holding(slot: Slot, stream: AsyncGenerator[str, None]) -> AsyncIterator[str]:
    """``stream``, giving the slot back when it ends, is closed (the browser
    went away), or is dropped without ever being started. Closing it closes
    ``stream`` at once too, so what that holds (a job's feed) is let go then,
    not whenever the garbage collector gets to it."""

    async def relay() -> AsyncIterator[str]:
        try:
            async for chunk in stream:
                yield chunk
        finally:
            slot.release()
            await stream.aclose()

    relayed = relay()
    weakref.finalize(relayed, slot.release)
    return relayed
