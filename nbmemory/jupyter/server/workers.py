"""The threads for reads whose cost grows with an agent's history, apart from every other request's.

The server answers every request in a worker thread, so its event loop never waits on a disk.
A read such as ``/compactions`` may take long on a long history: it gets its own few threads and
each user's turn, so a burst of them waits behind itself, never in front of another request.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor

HEAVY_WORKERS = 2
"""Threads for reads whose cost grows with an agent's history (see :class:`HeavyReads`)."""


class HeavyReads:
    """Threads for the reads whose cost grows with an agent's history, apart from the pool every
    other request uses: at most ``workers`` of them run at once, and at most ``per_user`` for
    one user (the rest of that user's wait, costing no thread), so neither a slow read nor a
    user's burst of them can hold up anyone else's requests.

    A client that signs in with the server's token and keeps no cookie is a new anonymous user
    at every request: ``workers`` still bounds it."""

    def __init__(self, workers: int = HEAVY_WORKERS, per_user: int = 1) -> None:
        self.pool = ThreadPoolExecutor(workers, thread_name_prefix="nbmemory-heavy")
        self.per_user = per_user
        self._turns: dict[str, tuple[asyncio.Semaphore, list[int]]] = {}

    def __len__(self) -> int:
        """How many users have a heavy read running or waiting."""
        return len(self._turns)

    @contextlib.asynccontextmanager
    async def turn(self, user: str) -> AsyncIterator[None]:
        """Wait for one of ``user``'s turns (on the event loop's thread); a user's entry is
        dropped once nothing of theirs runs or waits."""
        semaphore, holders = self._turns.setdefault(user, (asyncio.Semaphore(self.per_user), [0]))
        holders[0] += 1
        try:
            async with semaphore:
                yield
        finally:
            holders[0] -= 1
            if not holders[0]:
                del self._turns[user]

    def shutdown(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
