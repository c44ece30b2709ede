"""Recall's index of one file as bytes: how it is written, and read back.

An index is a compact binary: a line naming the format, a JSON line (what it was made of,
figures, speakers, where each section is and the type of its numbers, CRC-32s), then
little-endian arrays, each of the narrowest unsigned type that holds its numbers: the terms
(sorted UTF-8), each term's postings (messages, counts; how often a message holds a word of
the query is found there by bisection), each message's number of distinct words, lengths, text
lengths, flags and speakers; then what only passages need,
read when asked for (on a database, by parts of the row): the keys of the messages' vectors
(``text_key``), their texts and times. A query looks its terms up by bisection and
touches only their postings; nothing here imports numpy.

Every place and count read from an index is checked before it is used: one damaged, or
tampered with, raises ``Damaged`` (and is made again: ``kept_indexes``).
"""

from __future__ import annotations

import bisect
import hashlib
import json
import operator
import sys
import threading
import zlib
from array import array
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from nbmemory.errors import StoreError

EMBEDDED_CHARS = 4_000
"""Characters of a message that are embedded (about 1,000 tokens, under every model's limit)."""


def text_key(text: str) -> bytes:
    """The key of a message's vector: a hash of what is embedded of it."""
    return hashlib.sha256(text[:EMBEDDED_CHARS].encode("utf-8", "surrogatepass")).digest()[:16]


MAGIC = b"nbmemory recall index 7\n"
_POSTINGS_KEPT = 256
"""Terms whose postings one index keeps decoded (a query has at most ``ranking.QUERY_TERMS``)."""


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
    what recall asks of any index (see ``exchanges.Index``)."""

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
        """How many messages hold ``term``, from where its postings start and end: ranking
        asks it of every word of a query, and reads the postings of the rare ones only."""
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
