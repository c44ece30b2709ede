"""Recall's semantic side: an agent's messages embedded through litellm, any provider's model,
or by the offline word vectors (``word_vectors``, the default: made in RAM, never stored),
whose best are ranked again with their word pieces' vectors (``piece_vectors``).

A :class:`SemanticIndex` belongs to one agent and one embedding model. Messages are embedded
when recall runs, never when they are added: a recall first embeds the messages that have no
vector yet (newest first, ``BATCH`` texts a request, at most ``PER_RECALL`` messages, the query
in the first request), so ``add()`` never waits for a provider, nothing is sent for a memory
that is never searched, and the run that needs the vectors is the one that pays for them. Each
text is embedded once: vectors are keyed by the hash of what was embedded and the model, so a
message kept across a compaction, or said twice, is not embedded again.

Vectors are kept beside the memory: on files in ``agents/<name>/.embeddings/<model hash>.f32``
(a header line naming the model and the dimensions, then records of a 16-byte key and float32s,
appended under a lock of that file; a torn last record is cut off by the next writer, a file of
another format or dimension is replaced); on PostgreSQL in the ``nbmemory_embeddings`` table
(plain ``bytea`` vectors: pgvector is not needed, cosine is computed here). Either is an index:
deleted, it is rebuilt. Only an agent's recall writes it; the read model and the views never
do. Ranking is one matrix product over the vectors in RAM (numpy): fine for hundreds of
thousands of messages of a few hundred dimensions, about 1.5 KiB of RAM each at 384.

A failing provider (down, an error, a bad model, a timeout) leaves recall lexical: one
``MemoryWarning`` per agent and model in a process, then no call for ``RETRY_AFTER`` seconds.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

try:
    import fcntl
except ImportError:  # Windows: filelock takes over, as for MEMORY.md (store.folder_lock)
    fcntl = None  # type: ignore[assignment]

from nbmemory.errors import MemoryWarning, ModelError, StoreError
from nbmemory.models import llm
from nbmemory.recall import piece_vectors, word_vectors
from nbmemory.recall.stored_index import EMBEDDED_CHARS, text_key
from nbmemory.store.docs import AgentDocs
from nbmemory.store.folders import EMBEDDINGS_DIR, file_of, open_index_folder, open_into

BATCH = 128
"""Texts per embedding request (providers cap a request; OpenAI at 2,048 inputs)."""
PER_RECALL = 2_048
"""Messages one recall embeds at most, newest first: the rest are embedded by the next ones."""
RETRY_AFTER = 60.0
"""Seconds without embedding calls after one failed."""
DEFAULT_OPTIONS: Mapping[str, Any] = {"timeout": 30, "max_retries": 1}
GATHERED_BYTES = 16 * 2**20
"""Bytes of vectors, at most, an index keeps gathered in the order recall asks for them (the
offline word vectors of ``word_vectors.REACH`` messages take 4 MiB)."""
_KEY = len(text_key(""))
_MAGIC = b"nbmemory-embeddings 1 "
_warned: set[tuple[str, str, str]] = set()


def _warn_once(docs: AgentDocs, model: str, what: str, message: str) -> None:
    key = (str(docs.folder), model, what)
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, MemoryWarning, stacklevel=4)


class _Table:
    """Vectors in RAM, unit length, one row each, found by key."""

    def __init__(self, version: int = 0) -> None:
        self.rows: dict[bytes, int] = {}
        self.matrix = np.zeros((0, 0), dtype=np.float32)
        self.version = version
        """Counts the changes: a row found for a key holds while it is the same."""

    @property
    def dimensions(self) -> int | None:
        return self.matrix.shape[1] if self.rows else None

    def add(self, keys: Sequence[bytes], vectors: np.ndarray) -> None:
        if not len(keys):
            return
        self.version += 1
        if self.dimensions not in (None, vectors.shape[1]):
            self.__init__(self.version)  # the model's vectors changed shape: start again
        fresh = list({key: n for n, key in enumerate(keys) if key not in self.rows}.values())
        vectors = vectors[fresh]
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = vectors / np.where(norms == 0, 1, norms)
        count = len(self.rows)
        if count + len(fresh) > len(self.matrix) or not self.matrix.size:
            grown = np.zeros((max(64, 2 * (count + len(fresh))), vectors.shape[1]), np.float32)
            if count:
                grown[:count] = self.matrix[:count]
            self.matrix = grown
        self.matrix[count : count + len(fresh)] = vectors
        for n, i in enumerate(fresh):
            self.rows[keys[i]] = count + n

    def pairs(self) -> tuple[list[bytes], np.ndarray]:
        keys = list(self.rows)
        return keys, self.matrix[: len(keys)]


_FLAGS = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
"""Flags of every open of a vectors file, those the platform has: a link is not followed, a
child process does not inherit it, and Windows does not translate its bytes."""


class _FileVectors:
    """An agent's vectors of one model in ``.embeddings/<model hash>.f32``."""

    def __init__(self, folder: Path, model: str) -> None:
        self.model = model
        self.folder = folder
        self.name = f"{hashlib.sha256(model.encode()).hexdigest()[:16]}.f32"
        self.path = folder / EMBEDDINGS_DIR / self.name
        self._at: tuple[int, int] | None = None  # (inode, offset read up to)

    def _open(self, flags: int, mode: str, *, create: bool, buffering: int = -1) -> BinaryIO:
        """The vectors file, opened with ``flags`` as a file object of ``mode``: neither it
        nor ``.embeddings`` nor the folders above it through a link (``UnsafeFileError``),
        which could lead outside the workspace. ``create`` makes a missing ``.embeddings``."""
        folders: list[int] = []
        try:
            folder = open_index_folder(self.folder, EMBEDDINGS_DIR, into=folders, create=create)
            into: list[int] = []
            try:
                open_into(into, self.name, flags, dir_fd=folder)
                return file_of(into, mode, buffering)
            finally:
                for held in into:
                    os.close(held)
        finally:
            for held in folders:
                os.close(held)

    def _header(self, dimensions: int) -> bytes:
        return _MAGIC + json.dumps({"model": self.model, "dimensions": dimensions}).encode() + b"\n"

    def _parse_header(self, data: bytes) -> tuple[int, int] | None:
        """(header length, dimensions) if ``data`` starts with this model's header."""
        end = data.find(b"\n")
        if not data.startswith(_MAGIC) or end < 0:
            return None
        try:
            fields = json.loads(data[len(_MAGIC) : end])
            dimensions = int(fields["dimensions"])
        except (ValueError, KeyError, TypeError):
            return None
        if fields.get("model") != self.model or dimensions <= 0:
            return None
        return end + 1, dimensions

    def load(self, missing: Sequence[bytes] = ()) -> tuple[list[bytes], np.ndarray] | None:
        """The records written since the last load (all of them the first time, or when the
        file was replaced), or ``None`` if there are none or the file is not usable."""
        try:
            with self._open(os.O_RDONLY | _FLAGS, "rb", create=False) as file:
                inode = os.fstat(file.fileno()).st_ino
                head = file.read(4096)
                parsed = self._parse_header(head)
                if parsed is None:
                    return None
                start, dimensions = parsed
                record = _KEY + 4 * dimensions
                at = self._at[1] if self._at is not None and self._at[0] == inode else start
                if at > os.fstat(file.fileno()).st_size:  # rewritten in place: read it anew
                    at = start
                file.seek(at)
                data = file.read()
        except OSError:
            return None
        whole = len(data) // record * record
        self._at = (inode, at + whole)
        if not whole:
            return None
        records = np.frombuffer(data[:whole], dtype=np.uint8).reshape(-1, record)
        keys = [bytes(row) for row in records[:, :_KEY]]
        vectors = records[:, _KEY:].copy().view("<f4").astype(np.float32)
        return keys, vectors

    @contextlib.contextmanager
    def _locked(self, fd: int) -> Iterator[None]:
        """The file, open as ``fd``, locked against other writers (processes included)."""
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)  # released when the file is closed
            yield
            return
        import filelock

        with filelock.FileLock(f"{self.path}.lock"):
            yield

    def append(self, keys: Sequence[bytes], vectors: np.ndarray, table: _Table) -> None:
        """Append records under the file's lock; a new or unusable file gets every vector of
        ``table`` (the ones just made among them), so a deleted index is rebuilt from RAM."""
        dimensions = vectors.shape[1]
        flags = os.O_RDWR | os.O_CREAT | os.O_APPEND | _FLAGS
        opened = self._open(flags, "r+b", create=True, buffering=0)
        with opened as file, self._locked(file.fileno()):
            fd = file.fileno()
            size = os.fstat(fd).st_size
            parsed = self._parse_header(file.read(4096)) if size else None
            if parsed is None or parsed[1] != dimensions:
                os.ftruncate(fd, 0)
                file.write(self._header(dimensions))
                keys, vectors = table.pairs()
                self._at = None
            else:
                start, _ = parsed
                record = _KEY + 4 * dimensions
                torn = (size - start) % record
                if torn:  # a writer died mid-record: the whole records stay
                    os.ftruncate(fd, size - torn)
            little = np.ascontiguousarray(vectors, dtype="<f4")
            file.write(b"".join(key + row.tobytes() for key, row in zip(keys, little, strict=True)))


class _NoVectors:
    """Where the offline word vectors are kept: nowhere, they are made again in each process."""

    def load(self, missing: Sequence[bytes] = ()) -> None:
        return None

    def append(self, keys: Sequence[bytes], vectors: np.ndarray, table: _Table) -> None:
        return None


class _DatabaseVectors:
    """An agent's vectors of one model in the ``nbmemory_embeddings`` table."""

    def __init__(self, docs: Any, model: str) -> None:
        self.db, self.name, self.model = docs.db, docs.name, model
        self._loaded = False

    def load(self, missing: Sequence[bytes] = ()) -> tuple[list[bytes], np.ndarray] | None:
        """All rows the first time; then those of ``missing`` (another process may have
        embedded them)."""
        if self._loaded and not missing:
            return None
        rows = self.db.embeddings(
            self.name, self.model, None if not self._loaded else list(missing)
        )
        self._loaded = True
        rows = [(key, vector) for key, vector in rows if len(vector) % 4 == 0 and vector]
        if not rows:
            return None
        width = max(len(vector) for _, vector in rows)
        rows = [(key, vector) for key, vector in rows if len(vector) == width]
        vectors = np.frombuffer(b"".join(v for _, v in rows), dtype="<f4").reshape(len(rows), -1)
        return [key for key, _ in rows], vectors.astype(np.float32)

    def append(self, keys: Sequence[bytes], vectors: np.ndarray, table: _Table) -> None:
        little = np.ascontiguousarray(vectors, dtype="<f4")
        rows = [(key, row.tobytes()) for key, row in zip(keys, little, strict=True)]
        self.db.add_embeddings(self.name, self.model, rows)


class SemanticIndex:
    """The vectors of one agent's messages for one embedding model (any litellm model name;
    ``options`` go to ``litellm.embedding``: ``api_base``, ``api_key``, ``timeout``,
    ``max_retries``, ``dimensions``…). Made by an agent for its recall tool."""

    def __init__(
        self, docs: AgentDocs, model: str, options: Mapping[str, Any] | None = None
    ) -> None:
        self.docs = docs
        self.model = model
        self.options = {**DEFAULT_OPTIONS, **(options or {})}
        self.local = model == word_vectors.MODEL
        self.weight = word_vectors.WEIGHT if self.local else 1.0
        """What recall's fusion gives a place in this ranking (a place by words gives 1)."""
        self.reach = word_vectors.REACH if self.local else None
        """How many of the newest messages recall ranks by meaning (``None``: all)."""
        self._per_recall = self.reach or PER_RECALL  # words: all they rank, at once
        self._floor = word_vectors.FLOOR if self.local else 0.0
        dimensions = self.options.get("dimensions")
        tag = f"{model}@{dimensions}" if dimensions else model  # what the vectors are tagged with
        self._store: Any = (
            _NoVectors()
            if self.local
            else _DatabaseVectors(docs, tag)
            if docs.is_database
            else _FileVectors(docs.folder, tag)
        )
        self._table = _Table()
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._pieces: dict[bytes, np.ndarray] = {}
        """The word pieces' vectors of the local model's best texts, by key (``_with_pieces``):
        1 KiB each, at most twice ``word_vectors.REACH`` of them."""
        self._rows: tuple[tuple[bytes | None, ...], int, np.ndarray, Any] | None = None
        """The last keys ranked, the version of the vectors then, their rows, and their
        vectors gathered (``_rows_of``, ``_gathered``)."""
        self._paused_until = 0.0
        self._lock = threading.Lock()
        self.requests = 0
        """Embedding requests made (for tests and benchmarks)."""

    def __repr__(self) -> str:
        return f"SemanticIndex({self.docs!r}, {self.model!r})"

    def ranked(
        self, query: str, keys: Sequence[bytes | None], texts: Sequence[str | None], count: int
    ) -> list[tuple[float, int]] | None:
        """The ``count`` texts nearest ``query`` by cosine, nearest first, as ``(cosine,
        position)`` (``keys[n]`` is the key of ``texts[n]``, oldest first; ties go to the
        later); ``None`` if the provider failed (warned once). Up to ``PER_RECALL`` texts with
        no vector are embedded first, newest first; one not embedded yet, or with a cosine of
        0 or less (``word_vectors.FLOOR`` for the word vectors), is not ranked. The word
        vectors' best ``count`` are ranked again with their word pieces (``_with_pieces``)."""
        scores = self.similarities(query, keys, texts)
        if scores is None:
            return None
        if self.local and piece_vectors.installed():
            # The best by their words ranked again with their pieces: the cosines joined.
            found = np.flatnonzero(~np.isnan(scores))
            if len(found) > count:
                found = found[np.argpartition(-scores[found], count)[:count]]
            joined = self._with_pieces(query, keys, texts, found, scores[found])
            if joined is None:
                return None
            scores = np.full(len(keys), np.nan, dtype=np.float32)
            scores[found] = joined
        found = np.flatnonzero(scores > self._floor)  # NaN (no vector) is left out too
        if len(found) > count:
            found = found[np.argpartition(-scores[found], count)[:count]]
        best = scores[found]
        order = np.lexsort((found, best))[::-1]  # by cosine, then the later, as tuples sort
        return list(zip(best[order].tolist(), found[order].tolist(), strict=True))

    def _with_pieces(
        self,
        query: str,
        keys: Sequence[bytes | None],
        texts: Sequence[str | None],
        found: np.ndarray,
        words: np.ndarray,
    ) -> np.ndarray | None:
        """The cosines of the texts at ``found`` (``words``: by their words' vectors) by their
        words' and pieces' vectors joined (``word_vectors.joined``); ``None`` if the pieces
        could not be read (warned once). A text's pieces' vector is made once, kept by key."""
        with self._lock:
            if len(self._pieces) + len(found) > 2 * word_vectors.REACH:
                self._pieces.clear()  # messages gone out of reach: made again if they come back
            missing = [n for n in found.tolist() if keys[n] not in self._pieces]
            inputs = [query, *((texts[n] or "")[:EMBEDDED_CHARS] for n in missing)]
            made = self._offline(piece_vectors.encode, inputs)
            if made is None:
                return None
            for n, vector in zip(missing, made[1:], strict=True):
                self._pieces[keys[n]] = vector  # type: ignore[index]
            rows = np.array([self._pieces[keys[n]] for n in found.tolist()])  # type: ignore[index]
        pieces = rows @ made[0] if len(rows) else np.zeros(0, np.float32)
        asked = self._queries.get(query)
        query_words = float(asked is not None and bool(asked.any()))
        return word_vectors.joined(words, pieces, query_words, float(made[0].any()))

    def similarities(
        self, query: str, keys: Sequence[bytes | None], texts: Sequence[str | None]
    ) -> np.ndarray | None:
        """The cosine of ``query`` to each text (NaN for one not embedded yet), as
        :meth:`ranked` embeds them; ``None`` if the provider failed."""
        with self._lock:
            self._load(())
            rows = self._rows_of(keys)
            missing = [] if rows is not None else self._missing(keys)
            if missing:
                self._load([keys[n] for n in missing])
                missing = self._missing(keys)
            found = self._embed(query, [keys[n] for n in missing], [texts[n] for n in missing])
            if found is None:
                return None
            if rows is None:
                rows = self._rows_of(keys, made=True)
            scores = np.full(len(keys), np.nan, dtype=np.float32)
            present = rows >= 0
            if present.any() and found.shape[0] == self._table.dimensions:
                scores[present] = self._gathered(keys, rows, present) @ found
            return scores

    def _gathered(self, keys: Sequence[bytes | None], rows: np.ndarray, present: Any) -> Any:
        """The vectors of ``keys`` that have one, in order: kept with their rows (up to
        ``GATHERED_BYTES``), since every query of a memory asks for the same."""
        kept = self._rows
        if kept is not None and kept[0] is keys and kept[2] is rows and kept[3] is not None:
            return kept[3]
        gathered = self._table.matrix[rows[present]]
        if kept is not None and kept[2] is rows and gathered.nbytes <= GATHERED_BYTES:
            self._rows = (*kept[:3], gathered)
        return gathered

    def _rows_of(self, keys: Sequence[bytes | None], *, made: bool = False) -> np.ndarray | None:
        """The row of each key's vector (-1 for none), or ``None`` unless they were worked out
        for this very tuple of keys (``made``: work them out) as the vectors are now, when
        every key had one: recall asks with the same keys at every query of a memory."""
        kept = self._rows
        if kept is not None and kept[0] is keys and kept[1] == self._table.version:
            return kept[2]
        if not made:
            return None
        rows = np.fromiter((self._table.rows.get(k, -1) for k in keys), np.int64, len(keys))
        if isinstance(keys, tuple) and np.count_nonzero(rows >= 0) == len(keys) - keys.count(None):
            self._rows = (keys, self._table.version, rows, None)
        return rows

    def _missing(self, keys: Sequence[bytes | None]) -> list[int]:
        """Positions of keys with no vector, newest first, each key once, at most
        ``PER_RECALL`` (a ``None`` key is a text that is never embedded)."""
        seen: set[bytes] = set()
        missing = []
        rows = self._table.rows
        for n in range(len(keys) - 1, -1, -1):
            key = keys[n]
            if key is not None and key not in rows and key not in seen:
                seen.add(key)
                missing.append(n)
                if len(missing) == self._per_recall:
                    break
        return missing

    def _load(self, missing: Sequence[bytes]) -> None:
        try:
            loaded = self._store.load(missing)
        except (OSError, StoreError) as exc:
            _warn_once(self.docs, self.model, "read", f"recall could not read its vectors: {exc}")
            return
        if loaded is not None:
            self._table.add(*loaded)

    def _embed(self, query: str, keys: list[bytes], texts: list[str]) -> np.ndarray | None:
        """Embed ``texts`` (kept under ``keys``) and the query: the query's unit vector."""
        wanted = self._queries.get(query)
        if wanted is not None and not keys and wanted.shape[0] == self._table.dimensions:
            self._queries.move_to_end(query)
            return wanted
        if time.monotonic() < self._paused_until:
            return None
        inputs = [query, *(text[:EMBEDDED_CHARS] for text in texts)]
        made: Any = []
        if self.local:
            made = self._offline(word_vectors.encode, inputs)
            if made is None:
                return None
            self._keep(keys, made[1:])
            return self._remember(query, made[0])
        try:
            for start in range(0, len(inputs), BATCH):
                self.requests += 1
                made += llm.embed(self.model, inputs[start : start + BATCH], **self.options)
        except ModelError as exc:
            self._paused_until = time.monotonic() + RETRY_AFTER
            self._keep(keys[: max(0, len(made) - 1)], made[1:])
            _warn_once(
                self.docs,
                self.model,
                "embed",
                f"recall of {self.docs.name} is lexical only: embedding with {self.model} "
                f"failed ({exc})",
            )
            return None
        self._keep(keys, made[1:])
        return self._remember(query, made[0])

    def _offline(
        self, encode: Callable[[Sequence[str]], np.ndarray], inputs: Sequence[str]
    ) -> np.ndarray | None:
        """``encode(inputs)`` with the offline vectors; ``None`` if a file of theirs is
        missing or damaged (warned once, then tried again after ``RETRY_AFTER``)."""
        try:
            return encode(inputs)
        except (OSError, ValueError) as exc:
            self._paused_until = time.monotonic() + RETRY_AFTER
            message = f"recall of {self.docs.name} is lexical only: {self.model}: {exc}"
            _warn_once(self.docs, self.model, "embed", message)
            return None

    def _remember(self, query: str, made: Any) -> np.ndarray:
        """The query's vector, unit length, kept for the next recall of the same query."""
        vector = np.asarray(made, dtype=np.float32)
        vector /= np.linalg.norm(vector) or 1.0
        self._queries[query] = vector
        if len(self._queries) > 64:
            self._queries.popitem(last=False)
        return vector

    def _keep(self, keys: list[bytes], vectors: list[Any]) -> None:
        if not keys:
            return
        matrix = np.asarray(vectors, dtype=np.float32)
        self._table.add(keys, matrix)
        try:
            self._store.append(keys, matrix, self._table)
        except (OSError, StoreError) as exc:
            _warn_once(self.docs, self.model, "write", f"recall could not keep its vectors: {exc}")


SHARED = 16
"""Agents whose :func:`shared` index a process keeps (the least recently used goes first)."""
_shared: OrderedDict[tuple[AgentDocs, str], SemanticIndex] = OrderedDict()
_shared_lock = threading.Lock()


def shared(docs: AgentDocs, model: str) -> SemanticIndex:
    """The process's index of ``docs`` for ``model``, for callers that keep none of their own
    (``recall.recall`` called alone, the MCP server): the vectors one recall made serve the
    next, so only the first recall of an agent in a process pays for them."""
    with _shared_lock:
        found = _shared.pop((docs, model), None)
        if found is None:
            found = SemanticIndex(docs, model)
        _shared[docs, model] = found
        while len(_shared) > SHARED:
            _shared.popitem(last=False)
        return found
