"""What a compaction did, kept beside its archive: when, tokens before and after, what it lost.

A summary keeps what its summarizer chose. The record of a compaction lists the names, numbers,
dates and identifiers of the transcript that are neither in the summary nor in the pinned
notes, so a person (and the inspector) can see what the active memory no longer holds; the
archive still does. ``archive/history_<stamp>.md`` gets ``archive/history_<stamp>.json``.
"""

from __future__ import annotations

import datetime
import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from nbmemory.memory.notes import Notes
from nbmemory.memory.search import content_text
from nbmemory.store.docs import AgentDocs
from nbmemory.terms import missing_terms


@dataclass(frozen=True)
class Compaction:
    """One compaction: its archive, the next request's tokens before and after, messages kept
    word for word, and the salient terms of the transcript that the summary and the notes do
    not contain. The tokens are ``None`` when whoever compacted did not know the whole request
    (a bare ``Conversation`` has no tools, notes budget or reply room): readers reckon them."""

    archive: Path | None
    tokens_before: int | None
    tokens_after: int | None
    kept_messages: int = 0
    missing: list[str] = field(default_factory=list)
    time: str = field(default_factory=lambda: datetime.datetime.now().isoformat(timespec="seconds"))


def compaction_of(
    docs: AgentDocs, archive: Path, summary: str, ignore: Iterable[str] = ()
) -> Compaction:
    """What compacting agent ``docs``'s memory into ``archive`` did, as its documents tell: the
    terms of the archived transcript (every process's messages) that ``summary`` and the pinned
    notes leave out, but for the words ``ignore`` and the roles. The request's tokens are left
    to readers: the documents do not say what tools, notes budget or reply room it had."""
    archived = docs.messages(archive)
    transcript = "\n".join(content_text(m["content"]) for m in archived)
    return Compaction(
        archive=archive,
        tokens_before=None,
        tokens_after=None,
        missing=missing_terms(
            transcript,
            f"{summary}\n{Notes(docs).text()}",
            ignore=[*ignore, *(m["role"] for m in archived)],
        ),
    )


def record_path(archive: str | os.PathLike[str]) -> Path:
    """Where the record of the compaction that wrote ``archive`` is kept."""
    return Path(archive).with_suffix(".json")


def write_record(docs: AgentDocs, archive: str | os.PathLike[str], compaction: Compaction) -> Path:
    """Keep ``compaction`` beside its archive, in the agent's documents ``docs`` (atomically,
    ``0600``)."""
    data = {**asdict(compaction), "archive": Path(archive).name}
    return docs.write(record_path(archive), json.dumps(data, indent=2) + "\n", durable=False)


def read_record(docs: AgentDocs, archive: str | os.PathLike[str]) -> Compaction | None:
    """The record kept beside ``archive``, or ``None`` (a manual compaction, a damaged file)."""
    try:
        data = json.loads(docs.read(record_path(archive)))
        data["archive"] = Path(archive)
        return Compaction(**data)
    except (OSError, ValueError, TypeError):
        return None
