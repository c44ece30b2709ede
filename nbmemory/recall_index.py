"""Recall's persistent index: what recall computed of an agent's messages, kept beside them.

An archive never changes once written, so its index is made once, by the first recall that
reads it, and every later process reads it instead of parsing the archive again. ``MEMORY.md``
grows: the index of its messages is kept too, and a new process reads it and indexes only the
messages appended since (``recall._Chained``); it is kept anew when the memory has doubled or
was compacted. On files they are ``agents/<name>/.recall-index/<archive name>.idx`` and
``MEMORY.md.idx``; on PostgreSQL rows of ``nbmemory_recall_index``.

An index is a compact binary: a line naming the format, a JSON line (what it was made of,
figures, speakers, where each section is and the type of its numbers, CRC-32s), then
little-endian arrays, each of the narrowest unsigned type that holds its numbers: the terms
(sorted UTF-8), each term's postings (messages, counts; how often a message holds a word of
the query is found there by bisection), each message's number of distinct words, lengths, text
lengths, flags and speakers; then what only passages need,
read when asked for (on a database, by parts of the row): the keys of the messages' vectors
(``text_key``), their texts and times. A query looks its terms up by bisection and
touches only their postings; nothing here imports numpy.

An index is trusted only for what it was made of: an archive file's size, inode, mtime and
ctime (which no one can set back), else (a copy, a restore) the BLAKE2b digest of its bytes;
an archive row's version and size; the digest of the first bytes of ``MEMORY.md`` it covers
(on a database, computed by the server), and the memory's inode (its compaction count on a
database). A stale or unreadable
index is rebuilt without a word; a damaged one, or one tampered with (every place and count
read from it is checked before it is used), is rebuilt with a ``MemoryWarning``; one that
cannot be written (a read-only folder or role) is used from RAM. The index of an archive that
is gone is removed when recall next looks at the archives. On files ``.recall-index`` is never
opened through a link. Nothing here changes ``MEMORY.md`` or an archive.
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import json
import operator
import os
import stat
import sys
import threading
import warnings
import zlib
from array import array
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from nbmemory.atomic import write_atomic
from nbmemory.errors import MemoryWarning, StoreError
from nbmemory.store import AgentDocs
from nbmemory.workspace import (
    ARCHIVE_DIR,
    MEMORY_FILE,
    RECALL_INDEX_DIR,
    open_index_folder,
    open_reader,
)

EMBEDDED_CHARS = 4_000
"""Characters of a message that are embedded (about 1,000 tokens, under every model's limit)."""


def text_key(text: str) -> bytes:
    """The key of a message's vector: a hash of what is embedded of it."""
    return hashlib.sha256(text[:EMBEDDED_CHARS].encode("utf-8", "surrogatepass")).digest()[:16]


MAGIC = b"nbmemory recall index 5\n"
_POSTINGS_KEPT = 256
"""Terms whose postings one index keeps decoded (a query has at most ``recall.QUERY_TERMS``)."""
_HASH_CHUNK = 2**20


@dataclass
class Built:
    """What recall made of one file's messages, in the order they were said: the text recall
    may return of each (``None``: never returned), its word counts, length, speaker (role),
    time, whether it says when, whether it asks, and its vector's key."""

    texts: list[str | None]
    terms: list[Any]
    lengths: list[int]
    roles: list[str]
    tellers: list[str]
    """Who says each message: the name its text opens with ("Maya: ..."), else its role."""
    timestamps: list[str]
    dated: list[bool]
    asks: list[bool]
    keys: list[bytes | None]
    blocks: list[str]
    """The key of each message's block (``provenance.message_key``: 32 hex digits)."""
    spoken: dict[str, int]
    documents: int
    words: int


# ----------------------------------------------------------------------------------------------
# Writing


_WIDTHS = "BHIQ"
"""Array type codes an index's numbers are kept in: each section in the narrowest that holds
its largest number, so that an index is read (from a file, or over a database connection)
in fewer bytes."""


def _packed(values: Any) -> tuple[str, bytes]:
    """Unsigned numbers as little-endian bytes in the narrowest type that holds them, with
    its type code."""
    numbers = array("Q", values)
    top = max(numbers, default=0)
    code = next(c for c in _WIDTHS if top < 1 << (8 * array(c).itemsize))
    found = array(code, numbers)
    if sys.byteorder != "little":
        found.byteswap()
    return code, found.tobytes()


def _joined(texts: Sequence[str]) -> tuple[bytes, list[int]]:
    """Texts as one UTF-8 blob and the offsets of each (``len(texts) + 1`` of them)."""
    encoded = [text.encode("utf-8", "surrogatepass") for text in texts]
    at, total = [0], 0
    for data in encoded:
        total += len(data)
        at.append(total)
    return b"".join(encoded), at


def encode(built: Built, source: dict[str, Any]) -> bytes:
    """The index of ``built`` for the archive ``source`` describes, as bytes."""
    vocabulary = sorted({term for counts in built.terms if counts for term in counts})
    encoded = [term.encode("utf-8", "surrogatepass") for term in vocabulary]
    order = sorted(range(len(encoded)), key=encoded.__getitem__)
    encoded = [encoded[n] for n in order]
    ids = {vocabulary[n]: k for k, n in enumerate(order)}
    postings: list[tuple[list[int], list[int]]] = [([], []) for _ in encoded]
    distinct: list[int] = []
    for i, counts in enumerate(built.terms):
        for term_id, count in sorted((ids[t], c) for t, c in (counts or {}).items()):
            postings[term_id][0].append(i)
            postings[term_id][1].append(count)
        distinct.append(len(counts or ()))
    post_at = [0]
    for docs, _ in postings:
        post_at.append(post_at[-1] + len(docs))
    roles = list(dict.fromkeys(zip(built.roles, built.tellers, strict=True)))
    role_ids = {role: n for n, role in enumerate(roles)}
    terms_blob, term_at = _joined([t.decode("utf-8", "surrogatepass") for t in encoded])
    texts_blob, text_at = _joined([text or "" for text in built.texts])
    times_blob, time_at = _joined(built.timestamps)
    types: dict[str, str] = {}

    def packed(name: str, values: Any) -> bytes:
        types[name], data = _packed(values)
        return data

    sections = {
        "term_at": packed("term_at", term_at),
        "terms": terms_blob,
        "post_at": packed("post_at", post_at),
        "post_docs": packed("post_docs", (i for docs, _ in postings for i in docs)),
        "post_counts": packed("post_counts", (c for _, counts in postings for c in counts)),
        "distinct": packed("distinct", distinct),
        "lengths": packed("lengths", built.lengths),
        "chars": packed("chars", (len(text or "") for text in built.texts)),
        "recallable": bytes(text is not None for text in built.texts),
        "dated": bytes(built.dated),
        "asks": bytes(built.asks),
        "roles": packed(
            "roles",
            (role_ids[who] for who in zip(built.roles, built.tellers, strict=True)),
        ),
        "text_at": packed("text_at", text_at),
        "time_at": packed("time_at", time_at),
        "blocks": b"".join(bytes.fromhex(key) for key in built.blocks),
        # what a query reads only for its passages (and for vectors): read when asked for
        "keys": b"".join(key or bytes(16) for key in built.keys),
        "texts": texts_blob,
        "times": times_blob,
    }
    body, places, lazy_from = bytearray(), {}, 0
    for name, data in sections.items():
        body += bytes(-len(body) % 8)  # each section aligned
        if name == "keys":
            lazy_from = len(body)
        places[name] = [len(body), len(data)]
        body += data
    head = {
        "source": source,
        "messages": len(built.texts),
        "terms": len(encoded),
        "documents": built.documents,
        "words": built.words,
        "speakers": roles,
        "spoken": built.spoken,
        "sections": places,
        "types": types,
        "lazy_from": lazy_from,
        "crc32": zlib.crc32(body[:lazy_from]),
        "crc32_rest": zlib.crc32(body[lazy_from:]),
    }
    line = json.dumps(head, ensure_ascii=True).encode() + b"\n"
    line += bytes(-(len(MAGIC) + len(line)) % 8)
    return MAGIC + line + bytes(body)


# ----------------------------------------------------------------------------------------------
# Reading


_NUMBERS = (
    "term_at",
    "post_at",
    "post_docs",
    "post_counts",
    "distinct",
    "lengths",
    "chars",
    "roles",
    "text_at",
    "time_at",
)
"""The sections that hold numbers, each of the type its index's header names."""
_SECTIONS = {
    *_NUMBERS,
    *("terms", "recallable", "dated", "asks", "blocks", "keys", "texts", "times"),
}
"""The sections every index has."""


class Damaged(ValueError):
    """An index that cannot be trusted: rebuilt. ``name`` is the index's, when it was found
    damaged during a query (see :func:`discard`)."""

    def __init__(self, message: str, name: str = "") -> None:
        super().__init__(message)
        self.name = name


class StoredIndex:
    """An index read from its bytes (a file read whole, or the head of a database row), with
    what recall asks of any index (see ``recall._FileIndex``)."""

    def __init__(
        self,
        data: Any,
        speaker_words: Callable[[str], frozenset[str]],
        fetch: Callable[[int, int], bytes] | None = None,
        name: str = "",
    ) -> None:
        """``data``: the index's bytes, or with ``fetch`` only its first :attr:`head_bytes`:
        ``fetch(start, length)`` reads the rest (the texts, times and keys) when asked for, in
        parts on a database, else whole, at once, and checked (``Damaged``, naming ``name``,
        if it is not what was written)."""
        self.name = name
        view = memoryview(data)
        if sys.byteorder != "little" or bytes(view[: len(MAGIC)]) != MAGIC:
            raise Damaged("not an index of this format")
        end = bytes(view[len(MAGIC) : len(MAGIC) + 2**20]).find(b"\n")
        if end < 0:
            raise Damaged("no header")
        try:
            head = json.loads(bytes(view[len(MAGIC) : len(MAGIC) + end]))
            if not head["sections"].keys() >= _SECTIONS:
                raise ValueError("a section is missing")
            start = len(MAGIC) + end + 1
            start += -start % 8
            lazy_from = _count(head["lazy_from"])
            self.head_bytes = start + lazy_from
            """Bytes a query needs before any passage: the header and the postings."""
            body = view[start:]
            if len(body) < lazy_from or zlib.crc32(body[:lazy_from]) != head["crc32"]:
                raise Damaged("its checksum does not match")
            if fetch is None and zlib.crc32(body[lazy_from:]) != head["crc32_rest"]:
                raise Damaged("its checksum does not match")
            n, terms = _count(head["messages"]), _count(head["terms"])
            sections: dict[str, Any] = {}
            rest = None
            if fetch is not None and not getattr(fetch, "in_parts", False):
                rest = _Rest(fetch, self.head_bytes, int(head["crc32_rest"]), name)
            for name, (at, size) in head["sections"].items():
                at, size = _count(at), _count(size)
                straddles = at < lazy_from < at + size
                if straddles or (fetch is None and at + size > len(body)):
                    raise Damaged(f"section {name} is cut short")
                if at >= lazy_from and rest is not None:
                    sections[name] = _Fetched(rest.read, at - lazy_from, size)
                elif at >= lazy_from and fetch is not None:
                    sections[name] = _Fetched(fetch, start + at, size)
                else:
                    sections[name] = body[at : at + size]
            self.source: dict[str, Any] = dict(head["source"])
            self.documents = _count(head["documents"])
            self.words = _count(head["words"])
            self.spoken: dict[str, int] = {str(k): _count(v) for k, v in head["spoken"].items()}
            if self.documents > n:
                raise ValueError("more documents than messages")
            roles = [(str(role), str(teller)) for role, teller in head["speakers"]]
            types = {name: str(head["types"][name]) for name in _NUMBERS}
            if not set(types.values()) <= set(_WIDTHS):
                raise ValueError("an unknown type of numbers")
        except (KeyError, TypeError, ValueError, AttributeError, ArithmeticError) as exc:
            raise Damaged(f"its header is damaged: {exc}") from None
        except RecursionError:
            raise Damaged("its header is damaged: nested too deep") from None
        self.count = n
        try:  # a section whose size is no multiple of its items', or that is no number's
            sections = {k: v.cast(types[k]) if k in types else v for k, v in sections.items()}
        except (TypeError, AttributeError):
            raise Damaged("a section has the wrong size") from None
        self._cast(sections)
        self._check(n, terms, sections, roles)
        self._roles = [role for role, _ in roles]
        self._speakers = [speaker_words(teller) for _, teller in roles]
        self.texts = _Texts(self)
        self._postings: dict[str, tuple[list[int], list[int]]] = {}
        self._ids: dict[str, int | None] = {}
        self._read: dict[tuple[str, int], str] = {}
        self._key_list: list[bytes | None] | None = None
        self._lock = threading.Lock()

    def _cast(self, sections: dict[str, Any]) -> None:
        self._term_at = sections["term_at"]
        self._terms = sections["terms"]
        self._post_at = sections["post_at"]
        self._post_docs = sections["post_docs"]
        self._post_counts = sections["post_counts"]
        self._distinct = sections["distinct"]
        self.lengths = sections["lengths"]
        self._chars = sections["chars"]
        self.recallable = sections["recallable"]
        self.dated = sections["dated"]
        self.asks = sections["asks"]
        self._role_ids = sections["roles"]
        self._text_at = sections["text_at"]
        self._time_at = sections["time_at"]
        self._blocks = sections["blocks"]
        self._keys = sections["keys"]
        self._texts = sections["texts"]
        self._times = sections["times"]

    def _check(
        self, n: int, terms: int, sections: dict[str, Any], roles: list[tuple[str, str]]
    ) -> None:
        sizes = {
            "term_at": terms + 1,
            "post_at": terms + 1,
            "distinct": n,
            "text_at": n + 1,
            "time_at": n + 1,
            "lengths": n,
            "chars": n,
            "roles": n,
            "recallable": n,
            "dated": n,
            "asks": n,
            "keys": 16 * n,
            "blocks": 16 * n,
        }
        for name, size in sizes.items():
            if len(sections[name]) != size:
                raise Damaged(f"section {name} has the wrong size")
        ends = (
            (self._term_at, self._terms),
            (self._post_at, self._post_docs),
            (self._text_at, self._texts),
            (self._time_at, self._times),
        )
        if any(at[-1] != len(blob) for at, blob in ends) or len(self._post_docs) != len(
            self._post_counts
        ):
            raise Damaged("its offsets do not match its sections")
        if max(self._role_ids, default=-1) >= len(roles):
            raise Damaged("its speakers do not match its messages")

    def __len__(self) -> int:
        return self.count

    def _term(self, k: int) -> bytes:
        return bytes(self._terms[self._term_at[k] : self._term_at[k + 1]])

    def _span(self, k: int) -> tuple[int, int]:
        """Where term ``k``'s postings start and end; ``Damaged`` if they lie outside them."""
        start, end = self._post_at[k], self._post_at[k + 1]
        if not start <= end <= len(self._post_docs):
            raise Damaged("a term's postings lie outside them", self.name)
        return start, end

    def _term_id(self, term: str) -> int | None:
        """The number of ``term`` in the index (``None`` if it holds none), found by bisection
        and remembered: a query asks it for each message it looks at."""
        try:
            return self._ids[term]
        except KeyError:
            pass
        wanted = term.encode("utf-8", "surrogatepass")
        count = len(self._term_at) - 1
        k = bisect.bisect_left(range(count), wanted, key=self._term)
        found = k if k < count and self._term(k) == wanted else None
        with self._lock:
            if len(self._ids) >= _POSTINGS_KEPT:
                self._ids.clear()
            self._ids[term] = found
        return found

    def postings(self, term: str) -> tuple[list[int], list[int]]:
        """The messages holding ``term`` and how often each does, in message order."""
        found = self._postings.get(term)
        if found is None:
            k = self._term_id(term)
            if k is None:
                found = ([], [])
            else:
                start, end = self._span(k)
                found = (self._post_docs[start:end].tolist(), self._post_counts[start:end].tolist())
                docs = found[0]
                if docs and (docs[-1] >= self.count or any(map(operator.ge, docs, docs[1:]))):
                    raise Damaged("a term's postings name no message", self.name)
            with self._lock:
                if len(self._postings) >= _POSTINGS_KEPT:
                    self._postings.clear()
                self._postings[term] = found
        return found

    def frequency(self, term: str) -> int:
        """How many messages hold ``term``, from where its postings start and end: feedback
        asks it of many words whose postings it never reads."""
        found = self._postings.get(term)
        if found is not None:
            return len(found[0])
        k = self._term_id(term)
        if k is None:
            return 0
        start, end = self._span(k)
        return end - start

    def asked(self, i: int, terms: Collection[str]) -> dict[str, int]:
        """How often each of ``terms`` is in message ``i`` (those it holds), found in each
        term's postings by bisection: no list of each message's terms is kept."""
        found = {}
        for term in terms:
            k = self._term_id(term)
            if k is None:
                continue
            start, end = self._span(k)
            at = bisect.bisect_left(self._post_docs, i, start, end)
            if at < end and self._post_docs[at] == i:
                found[term] = self._post_counts[at]
        return found

    def distinct(self, i: int) -> int:
        """How many different words message ``i`` holds (0 if recall never returns it)."""
        return self._distinct[i]

    def is_recallable(self, i: int) -> bool:
        return bool(self.recallable[i])

    def chars(self, i: int) -> int:
        """The length of message ``i``'s text, in characters."""
        return self._chars[i]

    def speaker(self, i: int) -> frozenset[str]:
        return self._speakers[self._role_ids[i]]

    def role(self, i: int) -> str:
        return self._roles[self._role_ids[i]]

    def timestamp(self, i: int) -> str:
        return self._said("times", self._times, self._time_at, i)

    def text(self, i: int) -> str | None:
        if not self.recallable[i]:
            return None
        return self._said("texts", self._texts, self._text_at, i)

    def _said(self, kind: str, blob: Any, at: Any, i: int) -> str:
        """Message ``i``'s text or time, remembered (a few): a query asks for those of its
        passages more than once, and on a database each is a round trip."""
        key = (kind, i)
        found = self._read.get(key)
        if found is None:
            data = bytes(blob[at[i] : at[i + 1]])
            try:
                found = data.decode("utf-8", "surrogatepass")
            except UnicodeDecodeError:  # the part no checksum covers, damaged
                found = data.decode("utf-8", "replace")
            with self._lock:
                if len(self._read) >= _POSTINGS_KEPT:
                    self._read.clear()
                self._read[key] = found
        return found

    def message_key(self, i: int) -> str:
        """The key of message ``i``'s block, as cell provenance records it."""
        return bytes(self._blocks[16 * i : 16 * i + 16]).hex()

    def keys(self) -> list[bytes | None]:
        """The key of each message's vector (``None`` for what recall never returns), made
        once: the index never changes."""
        with self._lock:
            if self._key_list is None:
                keys = bytes(self._keys[:])
                self._key_list = [
                    bytes(keys[16 * i : 16 * i + 16]) if self.recallable[i] else None
                    for i in range(self.count)
                ]
            return self._key_list


def _count(value: Any) -> int:
    """A count or place read from an index's header: a whole number from 0 (``ValueError``
    for anything else, ``OverflowError`` for infinity)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise ValueError(f"{value!r} is no count")
    if value < 0:
        raise ValueError(f"{value!r} is below 0")
    return int(value)


class _InParts:
    """Reads parts of an index kept in a database, each when asked for."""

    in_parts = True

    def __init__(self, db: Any, agent: str, name: str) -> None:
        self.db, self.agent, self.name = db, agent, name

    def __call__(self, start: int, length: int) -> bytes:
        return self.db.recall_index_part(self.agent, self.name, start, length)


class _Rest:
    """What a query reads of a file's index only for passages, read whole when first asked
    for and checked: what no checksum covered is never shown."""

    def __init__(self, fetch: Callable[[int, int], bytes], start: int, crc: int, name: str):
        self.fetch, self.start, self.crc, self.name = fetch, start, crc, name
        self.data: bytes | None = None

    def read(self, start: int, size: int) -> bytes:
        if self.data is None:
            data = self.fetch(self.start, 2**62)
            if zlib.crc32(data) != self.crc:
                raise Damaged("its checksum does not match", self.name)
            self.data = data
        return self.data[start : start + size]


class _Fetched:
    """A section of an index kept in a database, read when a part of it is asked for."""

    def __init__(self, fetch: Callable[[int, int], bytes], start: int, size: int) -> None:
        self.fetch, self.start, self.nbytes = fetch, start, size

    def __len__(self) -> int:
        return self.nbytes

    def __getitem__(self, part: slice) -> bytes:
        first, end, _ = part.indices(self.nbytes)
        if end <= first:
            return b""
        try:
            return self.fetch(self.start + first, end - first)
        except (OSError, StoreError):  # gone since: the text is missing, the query goes on
            return b""


class _Texts(Sequence[str | None]):
    """An index's texts, decoded when asked for."""

    def __init__(self, index: StoredIndex) -> None:
        self.index = index

    def __len__(self) -> int:
        return self.index.count

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self.index.text(k) for k in range(*i.indices(self.index.count))]
        if i < 0:
            i += self.index.count
        if not 0 <= i < self.index.count:
            raise IndexError(i)
        return self.index.text(i)

    def __iter__(self) -> Iterator[str | None]:
        return (self.index.text(i) for i in range(self.index.count))


# ----------------------------------------------------------------------------------------------
# Where indexes are kept


def index_name(archive: Path) -> str:
    """The name of an archive's index (a file in ``.recall-index/``, a row on a database)."""
    return f"{archive.name}.idx"


def _file_source(path: Path, st: os.stat_result, digest: str | None = None) -> dict[str, Any]:
    return {
        "name": path.name,
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ctime_ns": st.st_ctime_ns,
        "inode": st.st_ino,
        **({"digest": digest} if digest is not None else {}),
    }


def _digest(data: bytes) -> str:
    """The BLAKE2b digest of ``data``, as :func:`file_digest` gives a file's."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def file_digest(path: Path) -> str:
    """The BLAKE2b digest of a file's bytes."""
    digest = hashlib.blake2b(digest_size=16)
    with open_reader(path) as file:
        while chunk := file.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


_kept: dict[str, tuple[Any, StoredIndex]] = {}
"""Indexes read in this process, by archive, with what they were checked against."""
_kept_lock = threading.Lock()


def archive_indexes(
    docs: AgentDocs,
    archives: list[Path],
    build: Callable[[Path], Built | None],
    speaker_words: Callable[[str], frozenset[str]],
) -> list[StoredIndex | None]:
    """:func:`archive_index` of each of ``archives``; on a database, their stamps and their
    kept indexes are read in one query each, not one per archive."""
    _prune(docs, archives)
    if not docs.is_database or not archives:
        return [archive_index(docs, a, lambda a=a: build(a), speaker_words) for a in archives]
    db, name = docs.db, docs.name  # type: ignore[attr-defined]
    stamps = db.document_stamps(name, [docs.doc(archive) for archive in archives])
    missing = []
    for archive in archives:
        with _kept_lock:
            kept = _kept.get(f"{docs!r}\n{archive}")
        if kept is None or kept[0] != stamps.get(docs.doc(archive)):
            missing.append(index_name(archive))
    heads = db.recall_index_heads(name, missing) if missing else {}
    return [
        archive_index(
            docs,
            archive,
            lambda archive=archive: build(archive),
            speaker_words,
            stamps.get(docs.doc(archive)) or (),
            heads.get(index_name(archive)),
        )
        for archive in archives
    ]


_seen: dict[str, frozenset[str]] = {}
"""The names of the indexes of each agent's archives when last looked at in this process: the
indexes kept are looked through again only when the archives change."""


def _prune(docs: AgentDocs, archives: list[Path]) -> None:
    """Remove the kept indexes of archives that are gone (deleted by a person): an index holds
    its archive's text, which goes with it."""
    wanted = frozenset(index_name(archive) for archive in archives)
    with _kept_lock:
        if _seen.get(repr(docs)) == wanted:
            return
        _seen[repr(docs)] = wanted
    try:
        if docs.is_database:
            kept = docs.db.recall_index_names(docs.name)  # type: ignore[attr-defined]
        elif docs.missing(RECALL_INDEX_DIR):
            return
        else:
            with _folder(docs, create=False) as folder:
                kept = os.listdir(folder)
        for name in kept:
            if not name.endswith(".md.idx") or name == MEMORY_INDEX or name in wanted:
                continue
            if docs.stamp(f"{ARCHIVE_DIR}/{name.removesuffix('.idx')}") is None:
                discard(docs, name)
    except (OSError, StoreError):
        pass


def archive_index(
    docs: AgentDocs,
    archive: Path,
    build: Callable[[], Built | None],
    speaker_words: Callable[[str], frozenset[str]],
    stamp: tuple[int, ...] | None = None,
    head: bytes | None = None,
) -> StoredIndex | None:
    """The index of one of agent ``docs``'s archives: kept in this process, else read from
    beside the memory, else made by ``build()`` (``None``: the archive is gone) and kept. On a
    database, ``stamp`` is the archive's if it was read already (``()``: it is gone), ``head``
    the start of its kept index."""
    if docs.is_database:
        stamp = docs.stamp(archive) if stamp is None else stamp or None
        if stamp is None:
            return None
        source: dict[str, Any] = {"name": archive.name, "version": stamp[0], "size": stamp[1]}
        check: Any = tuple(stamp)
    else:
        try:
            st = os.lstat(archive)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        check = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    key = f"{docs!r}\n{archive}"
    with _kept_lock:
        kept = _kept.get(key)
    if kept is not None and kept[0] == check:
        return kept[1]
    if not docs.is_database:
        source = _file_source(archive, st)
    found = _read(docs, archive, source, speaker_words, head)
    if found is None:
        built = build()
        if built is None:
            return None
        if not docs.is_database:
            source["digest"] = file_digest(archive)
        data = encode(built, source)
        found = StoredIndex(data, speaker_words)
        _store(docs, index_name(archive), data, found.head_bytes)
    with _kept_lock:
        _kept[key] = (check, found)
    return found


def _trusted(docs: AgentDocs, archive: Path, kept: dict[str, Any], now: dict[str, Any]) -> bool:
    """Whether an index made for ``kept`` is one of the archive as it is now (``now``)."""
    if docs.is_database:
        return kept == now
    if kept.get("name") != now["name"] or kept.get("size") != now["size"]:
        return False
    if all(kept.get(field) == now[field] for field in ("mtime_ns", "ctime_ns", "inode")):
        return True
    try:  # copied or restored: the same bytes?
        return kept.get("digest") == file_digest(archive)
    except OSError:
        return False


def _read(
    docs: AgentDocs,
    archive: Path,
    source: dict[str, Any],
    speaker_words: Callable[[str], frozenset[str]],
    head: bytes | None = None,
) -> StoredIndex | None:
    """The kept index of ``archive``, if there is one that can be trusted."""
    found = _load(docs, index_name(archive), speaker_words, head)
    return found if found is not None and _trusted(docs, archive, found.source, source) else None


def _load(
    docs: AgentDocs,
    name: str,
    speaker_words: Callable[[str], frozenset[str]],
    head: bytes | None = None,
) -> StoredIndex | None:
    """The index kept under ``name``, if it is one (whatever it was made of); on a database,
    ``head`` is the start of it if it was read already."""
    try:
        if docs.is_database:
            db, agent = docs.db, docs.name  # type: ignore[attr-defined]
            data = head if head is not None else db.recall_index(agent, name)
            if data is None:
                return None
            if not data.startswith(MAGIC):  # an index of another version: made anew
                return None
            return StoredIndex(data, speaker_words, _InParts(db, agent, name), name)
        # The postings now, the texts when a passage needs them; no file kept open: a
        # process may follow thousands of archives.
        with _folder(docs, create=False) as folder, _open(docs, folder, name) as file:
            data = file.read(_FIRST_READ)
            if not data.startswith(MAGIC):
                return None
            head = head_size(data)
            if head > os.fstat(file.fileno()).st_size:
                raise Damaged("its header names more bytes than it holds")
            if head > len(data):
                data += file.read(head - len(data))
        return StoredIndex(
            data[:head], speaker_words, lambda start, size: _pread(docs, name, start, size), name
        )
    except Damaged as exc:
        warn_damaged(docs, name, exc)
        return None
    except (OSError, StoreError):
        return None


def warn_damaged(docs: AgentDocs, name: str, exc: Damaged) -> None:
    """Say that the index kept as ``name`` was found damaged (or tampered with), and is made
    again from the messages: once per index, as the one made is kept in its place."""
    warnings.warn(
        f"{docs.path(f'{RECALL_INDEX_DIR}/{name}')}: a damaged recall index ({exc}); "
        "made again from the messages",
        MemoryWarning,
        stacklevel=2,
    )


@contextlib.contextmanager
def _folder(docs: AgentDocs, *, create: bool) -> Iterator[int]:
    """The agent's ``.recall-index`` folder, open, never through a link (``UnsafeFileError``)."""
    into: list[int] = []
    try:
        yield open_index_folder(docs.folder, RECALL_INDEX_DIR, into=into, create=create)
    finally:
        for held in into:
            os.close(held)


def _open(docs: AgentDocs, folder: int, name: str) -> BinaryIO:
    """The index file ``name`` in ``folder``, open to read, if it is a regular file."""
    return open_reader(name, dir_fd=folder, shown=docs.path(f"{RECALL_INDEX_DIR}/{name}"))


_FIRST_READ = 2**20
"""Bytes of an index file read at once: a header, and the postings of a small archive."""


def head_size(data: bytes) -> int:
    """How many bytes of an index a query needs (see :attr:`StoredIndex.head_bytes`), from
    its first bytes (which start with :data:`MAGIC`); ``Damaged`` if its header is not one."""
    end = data.find(b"\n", len(MAGIC))
    if end < 0:
        raise Damaged("no header")
    try:
        lazy_from = _count(json.loads(data[len(MAGIC) : end])["lazy_from"])
    except (KeyError, TypeError, ValueError, ArithmeticError, RecursionError):
        raise Damaged("its header is damaged") from None
    start = end + 1
    return start + -start % 8 + lazy_from


def _pread(docs: AgentDocs, name: str, start: int, size: int) -> bytes:
    """Bytes of index file ``name`` from ``start``, as many as there are up to ``size``."""
    with _folder(docs, create=False) as folder, _open(docs, folder, name) as file:
        file.seek(start)
        return file.read(size if size < 2**40 else -1)


def discard(docs: AgentDocs, name: str) -> None:
    """Forget the indexes of agent ``docs`` read in this process and remove the one kept as
    ``name``, found damaged during a query: the next query rebuilds it."""
    with _kept_lock:
        for key in [key for key in _kept if key.startswith(f"{docs!r}\n")]:
            del _kept[key]
    try:
        if docs.is_database:
            docs.db.remove_recall_index(docs.name, name)  # type: ignore[attr-defined]
        else:
            with _folder(docs, create=False) as folder:
                os.unlink(name, dir_fd=folder)
    except (OSError, StoreError):
        pass


def _store(docs: AgentDocs, name: str, data: bytes, head: int) -> None:
    """Keep an index under ``name`` (a failure only costs the next process a rebuild)."""
    try:
        if docs.is_database:
            docs.db.put_recall_index(docs.name, name, data, head)  # type: ignore[attr-defined]
        else:
            with _folder(docs, create=True) as folder:
                write_atomic(name, data, durable=False, dir_fd=folder)
    except (OSError, StoreError):
        pass


MEMORY_INDEX = "MEMORY.md.idx"
"""The name of the index kept of ``MEMORY.md``'s first messages."""


def _memory_digest(docs: AgentDocs, size: int) -> str | None:
    """The digest of the first ``size`` bytes of ``MEMORY.md`` (``None`` if it is shorter):
    on a database, its SHA-256 computed by the server, the memory not read again."""
    if docs.is_database:
        return docs.db.memory_digest(docs.name, size)  # type: ignore[attr-defined]
    with open_reader(docs.path(MEMORY_FILE)) as file:
        data = file.read(size)
    return _digest(data) if len(data) == size else None


def kept_memory(
    docs: AgentDocs,
    identity: tuple[int, int],
    messages: int,
    speaker_words: Callable[[str], frozenset[str]],
) -> StoredIndex | None:
    """The index kept of ``MEMORY.md``'s first messages, if it was made of the memory as it is
    now (``identity``: its inode, or its compaction count on a database; ``messages``: how
    many it holds now): the same memory, whose first bytes have the digest it was made of."""
    found = _load(docs, MEMORY_INDEX, speaker_words)
    if found is None:
        return None
    source = found.source
    try:
        if source.get("name") != MEMORY_FILE or source.get("identity") != list(identity):
            return None
        if found.count > messages:
            return None
        digest = _memory_digest(docs, int(source["bytes"]))
    except (OSError, StoreError, KeyError, TypeError, ValueError):
        return None
    return found if digest is not None and digest == source.get("digest") else None


def keep_memory(docs: AgentDocs, built: Built, identity: tuple[int, int], size: int) -> None:
    """Keep the index of ``MEMORY.md``'s messages ``built`` from its first ``size`` bytes."""
    try:
        digest = _memory_digest(docs, size)
    except (OSError, StoreError):
        return
    if digest is None:
        return
    source = {"name": MEMORY_FILE, "identity": list(identity), "bytes": size, "digest": digest}
    encoded = encode(built, source)
    _store(docs, MEMORY_INDEX, encoded, StoredIndex(encoded, lambda role: frozenset()).head_bytes)


def index_size(docs: AgentDocs) -> int:
    """Bytes of the indexes kept of an agent's archives, for the views (only sizes are read;
    the vectors of ``embeddings`` are not counted)."""
    if docs.is_database:
        return docs.db.recall_index_size(docs.name)  # type: ignore[attr-defined]
    total = 0
    if docs.missing(RECALL_INDEX_DIR):
        return 0
    try:
        with _folder(docs, create=False) as folder, os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_size
    except OSError:  # missing, or a link: no index of this agent's
        pass
    return total
