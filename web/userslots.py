"""How many of one thing each user has under way in this web process at
once (live event streams, Classify one requests), so that one user cannot
take what all share: a ``Slots`` counts them per user, safely across the
threads that serve sync views."""

from __future__ import annotations

import threading
from collections import Counter
from types import TracebackType


class Slots:
    def __init__(self) -> None:
        self._held: Counter[int] = Counter()
        self._lock = threading.Lock()

    def take(self, user_id: int, limit: int) -> Slot | None:
        """A slot for one more of the user's, or None at the limit."""
        with self._lock:
            if self._held[user_id] >= limit:
                return None
            self._held[user_id] += 1
        return Slot(self, user_id)

    def _give_back(self, user_id: int) -> None:
        with self._lock:
            self._held[user_id] -= 1
            if not self._held[user_id]:
                del self._held[user_id]


class Slot:
    """One taken place; ``release`` (or leaving its ``with`` block) gives it back, once."""

    def __init__(self, slots: Slots, user_id: int) -> None:
        self.slots, self.user_id = slots, user_id
        self.held = True

    def release(self) -> None:
        if self.held:
            self.held = False
            self.slots._give_back(self.user_id)

    def __enter__(self) -> Slot:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.release()
