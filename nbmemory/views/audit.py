"""An agent's compactions audited: what each archived, the summary that replaced it, and
what that summary dropped, as :meth:`ReadModel.compactions` answers.

A compaction writes a record beside its archive; one made by an nbmemory older than its
records, or by swarms, has none, and what it dropped is worked out from the files. Both are
kept with the archive's reading (``nbmemory.store.follow``), so while the files stay the same
nothing is read or worked out again.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from pathlib import Path

from nbmemory.memory.compactions import Compaction, read_record, record_path
from nbmemory.memory.search import content_text
from nbmemory.memory.token_counts import KeptCounts
from nbmemory.store.archives import archive_time
from nbmemory.store.docs import AgentDocs
from nbmemory.store.follow import EMPTY, FollowedFile, follow
from nbmemory.terms import left_out, salient_terms
from nbmemory.views.answers import MAX_DROPPED, SUMMARY_CHARS, CompactionInfo
from nbmemory.views.figures import (
    counter_for,
    followed_memory,
    memory_tokens,
    notes_of,
    settings_of,
    usage_of,
)


def audit(docs: AgentDocs) -> list[CompactionInfo]:
    """Agent ``docs``'s compactions, oldest first (see :class:`CompactionInfo`), each answer
    bounded (``MAX_DROPPED``, ``SUMMARY_CHARS``). The requests' figures a record does not
    hold are its memory's plus what the rest of a request costs now."""
    model = settings_of(docs)[0].model
    counter = counter_for(model)
    archives, in_memory = KeptCounts(None, counter), KeptCounts(docs, counter)
    notes = notes_of(docs, model).text()
    archived = [(path, follow(path, docs)) for path in docs.archives()]
    archived = [(path, followed) for path, followed in archived if followed is not None]
    memory = followed_memory(docs)
    usage = usage_of(docs, memory)
    rest = usage.tokens - usage.memory_tokens  # prompt, notes, tools, reply room: now
    afterwards = [followed for _, followed in archived[1:]] + [memory or EMPTY]
    afterwards = afterwards[: len(archived)]
    found = []
    for (path, followed), after in zip(archived, afterwards, strict=True):
        record = _record(docs, path, followed)
        kept = record.kept_messages if record is not None else 0
        following = after.messages[: 1 + kept]
        summary = content_text(following[0]["content"]) if following else ""
        speakers = [docs.name, *_speakers(followed)]
        if record is not None:
            dropped = left_out(record.missing, "", ignore=speakers)
        else:
            dropped = _worked_out(followed, f"{summary}\n{notes}", speakers)
        before = memory_tokens(followed, archives)
        kept_after = in_memory if after is memory else archives
        after_tokens = memory_tokens(after, kept_after, len(following))
        found.append(
            CompactionInfo(
                archive=path.name,
                time=archive_time(path),
                messages=len(followed.messages),
                tokens_before=before,
                tokens_after=after_tokens,
                kept_messages=kept,
                summary=summary[:SUMMARY_CHARS],
                dropped=dropped[:MAX_DROPPED],
                recorded=record is not None,
                request_before=_recorded_or_now(
                    record.tokens_before if record else None, before + rest
                ),
                request_after=_recorded_or_now(
                    record.tokens_after if record else None, after_tokens + rest
                ),
                dropped_total=len(dropped),
                summary_length=len(summary),
            )
        )
    return found


def _record(docs: AgentDocs, archive: Path, followed: FollowedFile) -> Compaction | None:
    """The record beside ``archive``, read again only when it changed (it can hold tens of
    thousands of terms); kept with the archive's reading."""
    stamp = docs.stamp(record_path(archive))
    with followed.lock:
        cached = followed.cache.get("record")
    if cached is not None and cached[0] == stamp:
        return cached[1]
    record = read_record(docs, archive) if stamp is not None else None
    with followed.lock:
        followed.cache["record"] = (stamp, record)
    return record


def _speakers(followed: FollowedFile) -> set[str]:
    """The roles that speak in a file: the labels of its transcript, never a dropped term."""
    with followed.lock:
        if "speakers" not in followed.cache:
            followed.cache["speakers"] = {str(m.get("role", "")) for m in followed.messages}
        return followed.cache["speakers"]


@dataclass
class _Unrecorded:
    """What an archive without a record dropped, worked out for one summary and notes."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    salient: list[str] | None = None
    key: bytes = b""
    dropped: list[str] = field(default_factory=list)


def _worked_out(followed: FollowedFile, kept: str, speakers: list[str]) -> list[str]:
    """The terms of an archive without a record that ``kept`` (its summary and the notes now)
    leaves out, worked out once and kept with the archive's reading, which a changed archive
    never shares. Its salient terms are found once; the dropped ones again only when the
    summary or the notes changed. One reader works them out while the others wait for it."""
    key = hashlib.blake2b(kept.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    with followed.lock:
        work = followed.cache.setdefault("unrecorded", _Unrecorded())
    with work.lock:
        if work.salient is None:
            transcript = "\n".join(content_text(m["content"]) for m in followed.messages)
            work.salient = salient_terms(transcript)
        if work.key != key:
            work.key, work.dropped = key, left_out(work.salient, kept, ignore=speakers)
        return work.dropped


def _recorded_or_now(recorded: int | None, reckoned: int) -> int:
    """A figure as recorded at the time, or as reckoned now when none was recorded."""
    return reckoned if recorded is None else recorded
