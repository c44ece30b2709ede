"""What the read model works out from an agent's followed files: token counts and usage.

A followed file (``nbmemory.store.follow``) is read again only when it changes; the tokens of
its messages and the memory's part of a request are kept with that reading, so a view that
asks again costs a look-up. The next request's usage (:func:`usage_of`) is made of these, the
settings the agent last ran with, and its pinned notes. A memory too big to read whole for a
listing of agents is tallied from pieces instead (:func:`tallies`).
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Iterable
from typing import Any

from nbmemory.agent.request_parts import request_parts
from nbmemory.memory.notes import NOTES_FILE, Notes
from nbmemory.memory.preload import block_text, preload_tokens
from nbmemory.memory.run_settings import RunSettings, default_settings, read_settings
from nbmemory.memory.token_counts import KeptCounts
from nbmemory.models import llm
from nbmemory.store import follow as follow_module
from nbmemory.store.docs import AgentDocs
from nbmemory.store.folders import MEMORY_FILE
from nbmemory.store.follow import FollowedFile, follow
from nbmemory.store.memory_file import process_alive
from nbmemory.tokens import TokenCounter
from nbmemory.views.answers import Usage


@functools.lru_cache(maxsize=16)
def counter_for(model: str) -> TokenCounter:
    """The token counter of ``model``, one per process."""
    return TokenCounter(model)


@functools.cache  # one per agent and model, as follow keeps one per file
def notes_of(docs: AgentDocs, model: str) -> Notes:
    """Agent ``docs``'s pinned notes, counted for ``model``; one reader per agent and model."""
    return Notes(docs.unlisted(), model=model)  # kept: never one pass's listing


def settings_of(docs: AgentDocs) -> tuple[RunSettings, bool]:
    """The settings an agent last ran with, and whether they were recorded."""
    recorded = read_settings(docs)
    if recorded is not None:
        return recorded, True
    return default_settings(llm.default_model()), False


def message_counts(kept: KeptCounts, messages: Iterable[dict[str, Any]]) -> list[int]:
    """The tokens of each of ``messages`` as its model reads it in a request, unless ``kept``
    holds its count."""
    return kept.each(block_text(m) for m in messages)


def followed_block_tokens(
    followed: FollowedFile, kept: KeptCounts, first: int | None = None
) -> list[int]:
    """The tokens of each of the file's (first) messages as its model reads them, each
    message counted once per encoding, unless ``kept`` holds its count."""
    messages = followed.messages[:first]
    with followed.lock:
        counts = followed.per_message.setdefault(f"tokens:{kept.counter.encoding_name}", [])
        if len(counts) < len(messages):
            counts.extend(message_counts(kept, messages[len(counts) :]))
        return counts[: len(messages)]


def memory_tokens(followed: FollowedFile, kept: KeptCounts, first: int | None = None) -> int:
    """The memory's part of a request (or, given ``first``, the part its first messages would
    make)."""
    counts = followed_block_tokens(followed, kept, first)
    if not counts:
        return 0
    with followed.lock:  # counted once per reading and encoding, as the messages are
        key = f"preload:{kept.counter.encoding_name}"
        if key not in followed.cache:
            followed.cache[key] = preload_tokens(kept.counter, followed.header, kept)
        return followed.cache[key] + sum(counts)


def followed_memory(docs: AgentDocs) -> FollowedFile | None:
    """Agent ``docs``'s ``MEMORY.md`` as followed; ``None`` if there is none."""
    return follow(docs.path(MEMORY_FILE), docs)


def usage_of(docs: AgentDocs, followed: FollowedFile | None) -> Usage:
    """How full agent ``docs``'s next request is, its memory read as ``followed`` (``None``:
    it has none), with the settings it last ran with (the defaults if none are recorded)."""
    settings, recorded = settings_of(docs)
    counter = counter_for(settings.model)
    kept = KeptCounts(docs, counter)  # read only if something is to be counted
    memory = memory_tokens(followed, kept) if followed is not None else 0
    earlier = _earlier_sessions(followed, kept, settings.session, memory)
    notes = 0 if docs.missing(NOTES_FILE) else notes_of(docs, settings.model).tokens(kept)
    parts = request_parts(settings, notes, earlier, memory - earlier)
    return Usage.of_request(settings, parts, encoding=counter.encoding_name, recorded=recorded)


def tallies(agents: list[AgentDocs]) -> list[FollowedFile | None]:
    """The ``MEMORY.md`` of each of ``agents`` as a listing shows it, when it is too big to
    read whole for that and was not read yet (:func:`_tally`); else ``None``, and it is to be
    followed. The sizes of the memories on a database that are not followed already come from
    one query for all of them."""
    unread = [d for d in agents if d.is_database and not follow_module.followed(d)]
    sizes = unread[0].db.memory_sizes([d.name for d in unread]) if unread else {}
    return [_tally(docs, sizes.get(docs.name, 0)) for docs in agents]


def _tally(docs: AgentDocs, stored: int) -> FollowedFile | None:
    """Agent ``docs``'s ``MEMORY.md`` as a listing shows it, when it is too big to read
    whole for that and was not read yet (``follow.tally``, ``follow.tally_database``: the
    same figures, in memory that a piece of it bounds); else ``None``, and it is
    followed. ``stored``: its size on a database, if it is not followed."""
    if docs.is_database:
        if stored < follow_module.LARGE:
            return None
    else:
        path = docs.path(MEMORY_FILE)
        try:
            st = os.lstat(path)
        except OSError:
            return None
        if st.st_size < follow_module.LARGE or not stat.S_ISREG(st.st_mode):
            return None
        if follow_module.current(path, st):
            return None
    kept = KeptCounts(docs, counter_for(settings_of(docs)[0].model))
    key = f"tokens:{kept.counter.encoding_name}"
    count = functools.partial(message_counts, kept)
    if docs.is_database:
        return follow_module.tally_database(docs, key, count, ready=kept.read)
    return follow_module.tally(path, key, count)


def _earlier_sessions(
    followed: FollowedFile | None,
    kept: KeptCounts,
    session: tuple[int, int, int] | None,
    memory: int,
) -> int:
    """The memory's tokens that the agent's running process preloaded (all of them when no
    process of the agent runs; none when it compacted the file it preloaded)."""
    if followed is None or session is None or not process_alive(session[0]):
        return memory
    if followed.identity[1] != session[1]:
        return 0
    return memory_tokens(followed, kept, session[2])
