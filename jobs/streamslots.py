"""How many live event streams each user holds open in this web process, so
that one user (or a page opened in a loop) cannot take every connection:
``SSE_STREAMS_PER_USER`` at once, the next one is refused with 429."""

from __future__ import annotations

import weakref
from collections.abc import AsyncGenerator, AsyncIterator

from web.userslots import Slot, Slots

_streams = Slots()


def take(user_id: int, limit: int) -> Slot | None:
    """A slot for one more stream of the user's, or None at the limit."""
    return _streams.take(user_id, limit)


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
