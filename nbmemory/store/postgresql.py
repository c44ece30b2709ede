"""Agents' memories in a PostgreSQL database: the documents of the file layout, in four tables
(and recall's vectors and archive indexes in ``nbmemory_embeddings`` and
``nbmemory_recall_index``, indexes recall rebuilds).

An agent's folder holds ``MEMORY.md``, ``NOTES.md``, ``settings.json`` and ``archive/*``. Here
``nbmemory_agents`` has one row per agent with a change counter (``version``) and a compaction
counter (``epoch``); ``nbmemory_memory`` holds ``MEMORY.md`` as its header and one row per
appended block, so an append is an insert and never rewrites anything; ``nbmemory_documents``
holds every other file under its path in the folder, and ``nbmemory_appends`` what was appended
to one of them since it was last written whole (``PROVENANCE.jsonl``'s lines), one row per
append, so that an append costs what it adds, not the document's size. Concatenating an agent's
memory rows gives the bytes its ``MEMORY.md`` would have (and a document's data and appends, the
bytes of its file), which is what keeps export and import lossless.

Every change is one transaction and takes the agent's row lock first, so appends of many
processes and hosts are serialised per agent (block order is commit order) and a compaction
(archive, new memory, record) is all or nothing. ``synchronous_commit`` is forced on, so a
change is durable when it returns.

The tables and their versions are in ``nbmemory.store.pg_schema``; connecting, and the errors
said plainly, in ``nbmemory.store.pg_connection``.
"""

from __future__ import annotations

import contextlib
import datetime
import itertools
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from nbmemory.errors import StoreError
from nbmemory.store.archives import archive_name
from nbmemory.store.folders import ARCHIVE_DIR, COUNTS_FILE, validate_agent_name
from nbmemory.store.pg_connection import PgConnection

SMALL_DOCUMENTS = ("settings.json", "NOTES.md", COUNTS_FILE)
"""The documents a listing reads for every agent (see :meth:`PgStore.snapshot`)."""
SMALL_BYTES = 2**20
"""The largest of them a listing reads with the others: a bigger one is read on its own."""
SLICE = 2**20
"""The most bytes of a memory :meth:`PgStore.memory_slices` sends at a time."""
_LISTED = (
    "EXISTS (SELECT 1 FROM nbmemory_memory m WHERE m.agent = a.name) OR EXISTS "
    "(SELECT 1 FROM nbmemory_documents d WHERE d.agent = a.name AND d.name LIKE 'archive/%%')"
)
"""What makes an agent of a row of ``nbmemory_agents a``: a memory or an archive."""


@dataclass
class _Agent:
    """An agent as a snapshot read it: its stamp, whether it is listed (it has a memory or an
    archive), and its documents' ``(version, size)``."""

    stamp: tuple[int, int]
    listed: bool
    documents: dict[str, tuple[int, int]] = field(default_factory=dict)
    index_bytes: int = 0
    """Bytes of its archive indexes (``nbmemory_recall_index``)."""


class PgStore(PgConnection):
    """One PostgreSQL database holding every agent of a workspace.

    Connections come from a small pool made on first use (and made again in a forked child);
    the schema is created or migrated then too. Errors are ``StoreError`` subclasses that name
    the database and the fix.
    """

    def __repr__(self) -> str:
        return f"PgStore({self.shown!r})"

    # ------------------------------------------------------------------------------------------
    # Agents

    def agents(self) -> list[str]:
        """Names of the agents that have a memory or an archive, sorted (as stored: a row
        written by hand may hold a name that ``validate_agent_name`` refuses)."""
        listing = self._listing()
        if listing is not None:
            return [name for name, agent in listing.items() if agent.listed]
        with self.statement("list the agents") as conn:
            rows = conn.execute(
                f'SELECT a.name FROM nbmemory_agents a WHERE {_LISTED} ORDER BY a.name COLLATE "C"'
            ).fetchall()
        return [name for (name,) in rows]

    def _agent(self, conn: Any, name: str, *, create: bool) -> tuple[int, int] | None:
        """Lock the agent's row for this transaction and bump its version: ``(version, epoch)``
        after the bump, or ``None`` if there is no such agent and ``create`` is false."""
        validate_agent_name(name)
        row = conn.execute(
            "UPDATE nbmemory_agents SET version = version + 1 WHERE name = %s "
            "RETURNING version, epoch",
            (name,),
        ).fetchone()
        if row is None and create:
            row = conn.execute(
                "INSERT INTO nbmemory_agents (name, version) VALUES (%s, 1) "
                "ON CONFLICT (name) DO UPDATE SET version = nbmemory_agents.version + 1 "
                "RETURNING version, epoch",
                (name,),
            ).fetchone()
        return row

    @contextlib.contextmanager
    def locked(self, name: str) -> Iterator[None]:
        """Hold the agent's row lock for a read-modify-write (such as editing the notes): the
        reads and writes made inside, in this thread, are one transaction."""
        if getattr(self._local, "conn", None) is not None:
            yield
            return
        with self.transaction(f"lock {name}") as conn:
            self._agent(conn, name, create=True)
            self._local.conn = conn
            try:
                yield
            finally:
                self._local.conn = None

    def stamp(self, name: str) -> tuple[int, int] | None:
        """``(epoch, version)`` of the agent: it changes with every change to any of its
        documents (``None`` if there is no such agent)."""
        listing = self._listing()
        if listing is not None and name in listing:
            return listing[name].stamp
        with self.statement(f"read {name}") as conn:
            row = conn.execute(
                "SELECT epoch, version FROM nbmemory_agents WHERE name = %s", (name,)
            ).fetchone()
        return tuple(row) if row else None

    def has_agent(self, name: str) -> bool:
        """Whether the agent has a memory or an archive: one of :meth:`agents`."""
        listing = self._listing()
        if listing is not None:
            return name in listing and listing[name].listed
        with self.statement(f"read {name}") as conn:
            row = conn.execute(
                f"SELECT 1 FROM nbmemory_agents a WHERE a.name = %s AND ({_LISTED})", (name,)
            ).fetchone()
        return row is not None

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """Answer this thread's reads of agents, stamps and document lists from one query made
        now, and its reads of ``settings.json``, ``NOTES.md`` and the kept token counts from
        one more made when the first is asked for: listing thousands of agents costs a few
        queries, not several per agent. Memories and archives are still read from the tables
        (followers read only what changed since the stamps). Inside another snapshot, that one
        is used."""
        if self._listing() is not None:
            yield
            return
        self._local.listing = self._overview()
        try:
            yield
        finally:
            self._local.listing = self._local.small = None

    def _listing(self) -> dict[str, _Agent] | None:
        return getattr(self._local, "listing", None)

    def _overview(self) -> dict[str, _Agent]:
        with self.statement("list the agents") as conn:
            rows = conn.execute(
                "WITH sizes AS (SELECT agent, sum(octet_length(data)) AS size "
                "FROM nbmemory_recall_index GROUP BY agent) "
                "SELECT a.name, a.epoch, a.version, "
                "EXISTS (SELECT 1 FROM nbmemory_memory m WHERE m.agent = a.name), "
                "d.name, d.version, length(d.data) + d.appended, coalesce(s.size, 0) "
                "FROM nbmemory_agents a LEFT JOIN nbmemory_documents d ON d.agent = a.name "
                'LEFT JOIN sizes s ON s.agent = a.name ORDER BY a.name COLLATE "C"'
            ).fetchall()
        listing: dict[str, _Agent] = {}
        for name, epoch, version, memory, doc, doc_version, size, indexed in rows:
            agent = listing.get(name)
            if agent is None:
                agent = listing[name] = _Agent((epoch, version), memory, index_bytes=int(indexed))
            if doc is not None:
                agent.documents[doc] = (doc_version, size)
                agent.listed = agent.listed or doc.startswith(f"{ARCHIVE_DIR}/")
        return listing

    def _snapshot_read(self, listing: dict[str, _Agent], name: str, doc: str) -> bytes | None:
        """A small document of the snapshot: the first asked for reads every agent's (those of
        at most ``SMALL_BYTES`` and nothing appended); ``None`` if it is not among them."""
        small = getattr(self._local, "small", None)
        if small is None:
            with self.statement("read the agents' settings and notes") as conn:
                rows = conn.execute(
                    "SELECT agent, name, data FROM nbmemory_documents "
                    "WHERE name = ANY(%s) AND length(data) <= %s AND appended = 0",
                    (list(SMALL_DOCUMENTS), SMALL_BYTES),
                ).fetchall()
            small = self._local.small = {(agent, doc): bytes(data) for agent, doc, data in rows}
        return small.get((name, doc))

    # ------------------------------------------------------------------------------------------
    # MEMORY.md

    def ensure(self, name: str, header: bytes) -> None:
        """Create the agent with a memory holding only ``header``, if it has no memory yet."""
        validate_agent_name(name)
        with self.statement(f"read {name}") as conn:
            if conn.execute(
                "SELECT 1 FROM nbmemory_memory WHERE agent = %s LIMIT 1", (name,)
            ).fetchone():
                return  # nothing to write: a read-only role may open an existing agent
        with self.transaction(f"create {name}") as conn:
            version, _ = self._agent(conn, name, create=True)
            conn.execute(
                "INSERT INTO nbmemory_memory (agent, seq, data) SELECT %s, %s, %s "
                "WHERE NOT EXISTS (SELECT 1 FROM nbmemory_memory WHERE agent = %s)",
                (name, version, header, name),
            )

    def append(self, name: str, header: bytes, data: bytes) -> None:
        """Append one block to the agent's memory (created with ``header`` if it has none),
        durably, all or nothing."""
        if name not in self._valid_names:
            validate_agent_name(name)
            self._valid_names.add(name)
        with self.statement(f"add a message to {name}") as conn:
            self._local.sent_by = conn.info.backend_pid  # see ends_with()
            row = conn.execute("SELECT nbmemory_append(%s, %s, %s)", (name, header, data))
            self._appended_rows()[name] = row.fetchone()[0]  # committed, and known to be
            self._local.sent_by = None

    def appended(self, name: str) -> int:
        """The row the last :meth:`append` of this thread wrote to the agent's memory (-1 for
        none): see :meth:`ends_with`."""
        return self._appended_rows().get(name, -1)

    def _appended_rows(self) -> dict[str, int]:
        rows = getattr(self._local, "appended", None)
        if rows is None:
            rows = self._local.appended = {}
        return rows

    def ends_with(self, name: str, data: bytes, after: int) -> bool:
        """Whether one of the agent's last memory rows after row ``after`` ends with ``data``:
        after an interrupt cut :meth:`append` short, whether its block was committed (``after``
        being :meth:`appended` before it, so that an earlier block with the same bytes, the same
        text said twice in one second, is not taken for it). On a connection of its own with
        short timeouts (the pool may have been given up, and the server may be what did not
        answer): ``False`` if the server does not answer at once."""
        import psycopg

        sent_by, self._local.sent_by = getattr(self._local, "sent_by", None), None
        try:
            with psycopg.connect(self.url, connect_timeout=2, autocommit=True) as conn:
                conn.execute("SET statement_timeout TO 2000")
                # An interrupt after psycopg sent the append, before its answer: the server
                # runs it all the same, on a connection given up since (the pool closes it).
                # Its backend leaves once it has read and run what was sent, so it is waited
                # for (at most two seconds), and then the memory tells.
                deadline = time.monotonic() + 2
                while sent_by is not None and time.monotonic() < deadline:
                    alive = conn.execute(
                        "SELECT 1 FROM pg_stat_activity WHERE pid = %s", (sent_by,)
                    ).fetchone()
                    if alive is None:
                        break
                    time.sleep(0.005)
                rows = conn.execute(
                    "SELECT data FROM nbmemory_memory WHERE agent = %s AND seq > %s "
                    "ORDER BY seq DESC LIMIT 8",
                    (name, after),
                ).fetchall()
        except psycopg.Error:
            return False
        return any(bytes(row).endswith(data) for (row,) in rows)

    def memory(self, name: str) -> bytes | None:
        """The agent's ``MEMORY.md`` as bytes, or ``None`` if it has none."""
        return self.memory_since(name, None)[2]

    def memory_since(
        self, name: str, known: tuple[int, int] | None
    ) -> tuple[tuple[int, int] | None, bool, bytes | None]:
        """What changed in the memory since stamp ``known``: ``(stamp, appended, data)``.

        ``appended`` true means ``data`` is only the blocks appended since ``known`` (same
        epoch); otherwise ``data`` is the whole memory (``None`` if there is none).
        """
        listing = self._listing()
        if listing is not None and name in listing and listing[name].stamp == known:
            return known, True, b""
        epoch, since = known if known is not None else (-1, -1)
        with self.statement(f"read {name}") as conn:
            rows = conn.execute(
                "SELECT a.epoch, a.version, m.data FROM nbmemory_agents a "
                "LEFT JOIN nbmemory_memory m ON m.agent = a.name "
                "AND m.seq > (CASE WHEN a.epoch = %s THEN %s ELSE -1 END) "
                "WHERE a.name = %s ORDER BY m.seq",
                (epoch, since, name),
            ).fetchall()
        if not rows:
            return None, False, None
        stamp = (rows[0][0], rows[0][1])
        appended = known is not None and known[0] == stamp[0]
        chunks = [bytes(data) for _, _, data in rows if data is not None]
        if not appended and not chunks:
            return stamp, False, None
        return stamp, appended, b"".join(chunks)

    def memory_digest(self, name: str, size: int) -> str | None:
        """The SHA-256 (hex) of the first ``size`` bytes of the agent's memory, computed here,
        so that what a client kept of them is checked without reading them; ``None`` if the
        memory is shorter."""
        with self.statement(f"read {name}") as conn:
            row = conn.execute(
                "SELECT octet_length(head), sha256(head) FROM (SELECT substring(coalesce("
                "string_agg(data, ''::bytea ORDER BY seq), '') FROM 1 FOR %s) AS head FROM "
                "(SELECT seq, data, sum(octet_length(data)) OVER (ORDER BY seq) "
                "- octet_length(data) AS before FROM nbmemory_memory WHERE agent = %s) AS m "
                "WHERE before < %s) AS prefix",
                (size, name, size),
            ).fetchone()
        if row is None or row[0] != size:
            return None
        return bytes(row[1]).hex()

    @contextlib.contextmanager
    def memory_slices(
        self, name: str, known: tuple[int, int] | None
    ) -> Iterator[tuple[tuple[int, int] | None, bool, Iterator[bytes]]]:
        """:meth:`memory_since` with the memory streamed as the server sends it, not joined:
        ``(stamp, appended, slices)``, ``slices`` being its bytes in order, at most
        ``SLICE`` at a time (none when there is no memory). What is held at once is a
        slice, not the memory, nor one of its rows (an import's are megabytes)."""
        epoch, since = known if known is not None else (-1, -1)
        with self.statement(f"read {name}") as conn:
            rows = conn.cursor(binary=True).stream(  # binary: bytea not doubled in hex
                "SELECT a.epoch, a.version, substring(m.data FROM s.start FOR %s) "
                "FROM nbmemory_agents a LEFT JOIN nbmemory_memory m ON m.agent = a.name "
                "AND m.seq > (CASE WHEN a.epoch = %s THEN %s ELSE -1 END) "
                "LEFT JOIN LATERAL generate_series(1, octet_length(m.data), %s) AS s(start) "
                "ON true WHERE a.name = %s ORDER BY m.seq, s.start",
                (SLICE, epoch, since, SLICE, name),
            )
            try:
                first = next(rows, None)
                if first is None:
                    yield None, False, iter(())
                    return
                stamp = (first[0], first[1])
                appended = known is not None and known[0] == stamp[0]
                yield stamp, appended, (row[2] for row in itertools.chain([first], rows) if row[2])
            finally:
                rows.close()  # as in memories_since: a reader that stops early

    def memory_sizes(self, names: list[str]) -> dict[str, int]:
        """The size in bytes of each of ``names``' memories (those that have one), from the
        stored lengths: no memory is read."""
        with self.statement("measure the agents' memories") as conn:
            rows = conn.execute(
                "SELECT agent, sum(octet_length(data)) FROM nbmemory_memory "
                "WHERE agent = ANY(%s) GROUP BY agent",
                (names,),
            ).fetchall()
        return {name: int(size) for name, size in rows}

    def memories_since(
        self, known: dict[str, tuple[int, int] | None]
    ) -> Iterator[tuple[str, tuple[int, int], bool, bytes | None]]:
        """:meth:`memory_since` for many agents in one query: ``(name, stamp, appended, data)``
        of each agent of ``known`` whose stamp is no longer the one given, one agent at a time
        as its rows arrive (what is held at once is one agent's memory, not all of them)."""
        names = list(known)
        epochs = [stamp[0] if stamp else -1 for stamp in known.values()]
        versions = [stamp[1] if stamp else -1 for stamp in known.values()]
        with self.statement("read the agents' memories") as conn:
            rows = conn.cursor().stream(
                "SELECT a.name, a.epoch, a.version, m.data "
                "FROM unnest(%s::text[], %s::bigint[], %s::bigint[]) AS k(name, epoch, since) "
                "JOIN nbmemory_agents a ON a.name = k.name "
                "LEFT JOIN nbmemory_memory m ON m.agent = a.name "
                "AND m.seq > (CASE WHEN a.epoch = k.epoch THEN k.since ELSE -1 END) "
                "WHERE (a.epoch, a.version) <> (k.epoch, k.since) ORDER BY a.name, m.seq",
                (names, epochs, versions),
            )
            try:
                for name, group in itertools.groupby(rows, key=lambda row: row[0]):
                    chunks, stamp = [], None
                    for _, epoch, version, data in group:
                        stamp = (epoch, version)
                        if data is not None:
                            chunks.append(data)
                    assert stamp is not None
                    appended = known[name] is not None and known[name][0] == stamp[0]
                    data = b"".join(chunks) if appended or chunks else None
                    del chunks
                    yield name, stamp, appended, data
            finally:
                # A consumer that stops early: the query still running is cancelled and its
                # rows drained here, so the connection goes back to the pool idle (left
                # running, it would make the pool's rollback wait for ever).
                rows.close()

    def compact(self, name: str, new: bytes, keep: Callable[[bytes], bool]) -> str | None:
        """Archive the memory and replace it with ``new``, in one transaction.

        ``keep(old_bytes)`` says whether the old memory is worth an archive (it holds messages).
        Returns the archive's document name, or ``None`` if none was written.
        """
        with self.transaction(f"compact {name}") as conn:
            version, _ = self._agent(conn, name, create=True)
            chunks = conn.execute(
                "SELECT data FROM nbmemory_memory WHERE agent = %s ORDER BY seq", (name,)
            ).fetchall()
            old = b"".join(bytes(chunk) for (chunk,) in chunks)
            archive = None
            if keep(old):
                archive = self._new_archive(conn, name, old, version)
            conn.execute("DELETE FROM nbmemory_memory WHERE agent = %s", (name,))
            conn.execute(
                "INSERT INTO nbmemory_memory (agent, seq, data) VALUES (%s, %s, %s)",
                (name, version, new),
            )
            conn.execute("UPDATE nbmemory_agents SET epoch = epoch + 1 WHERE name = %s", (name,))
        return archive

    def _new_archive(self, conn: Any, name: str, data: bytes, version: int) -> str:
        moment = datetime.datetime.now()
        n = 1
        while True:
            doc = f"{ARCHIVE_DIR}/{archive_name(moment, n)}"
            inserted = conn.execute(
                "INSERT INTO nbmemory_documents (agent, name, data, version) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (name, doc, data, version),
            ).rowcount
            if inserted:
                return doc
            n += 1

    # ------------------------------------------------------------------------------------------
    # Other documents

    def read(self, name: str, doc: str) -> bytes | None:
        """A document of the agent (``NOTES.md``, ``archive/…``), or ``None`` if absent: its
        data and what was appended to it since, in one query."""
        listing = self._listing()
        if listing is not None and name in listing:
            found = listing[name].documents.get(doc)
            if found is None:
                return None
            if doc in SMALL_DOCUMENTS and found[1] <= SMALL_BYTES:
                data = self._snapshot_read(listing, name, doc)
                if data is not None:
                    return data
        with self.statement(f"read {doc} of {name}") as conn:
            rows = conn.execute(
                "SELECT 0 AS seq, data FROM nbmemory_documents WHERE agent = %s AND name = %s "
                "UNION ALL SELECT seq, data FROM nbmemory_appends WHERE agent = %s AND name = %s "
                "ORDER BY seq",
                (name, doc, name, doc),
            ).fetchall()
        return b"".join(bytes(data) for _, data in rows) if rows else None

    def document_stamp(self, name: str, doc: str) -> tuple[int, int] | None:
        """``(version, size)`` of a document, changed by every write; ``None`` if absent."""
        return self.document_stamps(name, [doc]).get(doc)

    def document_stamps(self, name: str, docs: list[str]) -> dict[str, tuple[int, int]]:
        """:meth:`document_stamp` of each of ``docs`` that exists, in one query."""
        listing = self._listing()
        if listing is not None and name in listing:
            known = listing[name].documents
            return {doc: known[doc] for doc in docs if doc in known}
        with self.statement(f"read the documents of {name}") as conn:
            rows = conn.execute(
                "SELECT name, version, length(data) + appended FROM nbmemory_documents "
                "WHERE agent = %s AND name = ANY(%s)",
                (name, docs),
            ).fetchall()
        return {doc: (version, size) for doc, version, size in rows}

    def write(self, name: str, doc: str, data: bytes) -> None:
        """Write a whole document, replacing the old one (and what was appended to it)
        atomically."""
        with self.transaction(f"write {doc} of {name}") as conn:
            version, _ = self._agent(conn, name, create=True)
            conn.execute(
                "INSERT INTO nbmemory_documents (agent, name, data, version) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (agent, name) "
                "DO UPDATE SET data = excluded.data, version = excluded.version, appended = 0",
                (name, doc, data, version),
            )
            conn.execute("DELETE FROM nbmemory_appends WHERE agent = %s AND name = %s", (name, doc))

    def append_document(self, name: str, doc: str, data: bytes) -> None:
        """Add ``data`` at the end of a document (created with it if absent); inside
        :meth:`locked`, a failure undoes this alone (a savepoint), not what came before.

        ``data`` becomes a row of ``nbmemory_appends``, and the document's row only gets its new
        version and size: the cost is that of ``data``, however long the document is."""
        what = f"write {doc} of {name}"
        with self.transaction(what) as conn, self._errors(what), conn.transaction():
            version, _ = self._agent(conn, name, create=True)
            conn.execute(
                "WITH doc AS (INSERT INTO nbmemory_documents (agent, name, data, version, "
                "appended) VALUES (%(agent)s, %(doc)s, '', %(version)s, %(size)s) "
                "ON CONFLICT (agent, name) DO UPDATE SET version = excluded.version, "
                "appended = nbmemory_documents.appended + excluded.appended RETURNING 1) "
                "INSERT INTO nbmemory_appends (agent, name, seq, data) "
                "SELECT %(agent)s, %(doc)s, %(version)s, %(data)s FROM doc",
                {"agent": name, "doc": doc, "version": version, "size": len(data), "data": data},
            )

    def remove(self, name: str, doc: str) -> None:
        """Delete a document (nothing happens if it is absent)."""
        with self.transaction(f"remove {doc} of {name}") as conn:
            if self._agent(conn, name, create=False) is not None:
                conn.execute(
                    "DELETE FROM nbmemory_documents WHERE agent = %s AND name = %s", (name, doc)
                )

    def documents(self, name: str, folder: str = "") -> list[str]:
        """Names of the agent's documents in ``folder`` (``""`` for all of them), sorted."""
        prefix = f"{folder.rstrip('/')}/" if folder else ""
        listing = self._listing()
        if listing is not None and name in listing:
            return sorted(doc for doc in listing[name].documents if doc.startswith(prefix))
        with self.statement(f"list the documents of {name}") as conn:
            rows = conn.execute(
                "SELECT name FROM nbmemory_documents WHERE agent = %s AND starts_with(name, %s) "
                'ORDER BY name COLLATE "C"',
                (name, prefix),
            ).fetchall()
        return [doc for (doc,) in rows]

    # ------------------------------------------------------------------------------------------
    # Recall's vectors

    def embeddings(
        self, name: str, model: str, hashes: list[bytes] | None = None
    ) -> list[tuple[bytes, bytes]]:
        """``(hash, vector)`` of the agent's messages embedded by ``model``: all of them, or
        those of ``hashes``. A vector is little-endian float32s."""
        query = "SELECT hash, vector FROM nbmemory_embeddings WHERE agent = %s AND model = %s"
        params: tuple[Any, ...] = (name, model)
        if hashes is not None:
            query += " AND hash = ANY(%s)"
            params = (name, model, hashes)
        with self.statement(f"read the embeddings of {name}") as conn:
            rows = conn.execute(query, params).fetchall()
        return [(bytes(key), bytes(vector)) for key, vector in rows]

    def add_embeddings(self, name: str, model: str, rows: list[tuple[bytes, bytes]]) -> None:
        """Keep ``(hash, vector)`` rows for the agent and ``model`` (rows already kept stay as
        they are). The agent's version is not bumped: vectors are an index, not a document."""
        with self.transaction(f"write the embeddings of {name}") as conn:
            known = conn.execute("SELECT 1 FROM nbmemory_agents WHERE name = %s", (name,))
            if known.fetchone() is None:
                return
            with conn.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO nbmemory_embeddings (agent, model, hash, vector) "
                    "VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                    [(name, model, key, vector) for key, vector in rows],
                )

    # ------------------------------------------------------------------------------------------
    # Recall's archive indexes

    def recall_index(self, name: str, source: str) -> bytes | None:
        """The first bytes (its ``head``) of the index recall keeps of one of the agent's
        archives (``source``), or ``None``."""
        with self.statement(f"read the recall index of {name}") as conn:
            row = conn.execute(
                "SELECT substring(data FROM 1 FOR head) FROM nbmemory_recall_index "
                "WHERE agent = %s AND source = %s",
                (name, source),
                binary=True,  # bytea as it is, not in hex: half the bytes, nothing to decode
            ).fetchone()
        return bytes(row[0]) if row else None

    def recall_index_heads(self, name: str, sources: list[str]) -> dict[str, bytes]:
        """:meth:`recall_index` of each of ``sources`` that is kept, in one query."""
        with self.statement(f"read the recall index of {name}") as conn:
            rows = conn.execute(
                "SELECT source, substring(data FROM 1 FOR head) FROM nbmemory_recall_index "
                "WHERE agent = %s AND source = ANY(%s)",
                (name, sources),
                binary=True,
            ).fetchall()
        return {source: bytes(data) for source, data in rows}

    def recall_index_part(self, name: str, source: str, start: int, length: int) -> bytes:
        """``length`` bytes of an index from byte ``start`` (``b""`` if it is gone)."""
        with self.statement(f"read the recall index of {name}") as conn:
            row = conn.execute(
                "SELECT substring(data FROM %s FOR %s) FROM nbmemory_recall_index "
                "WHERE agent = %s AND source = %s",
                (start + 1, length, name, source),
                binary=True,
            ).fetchone()
        return bytes(row[0]) if row else b""

    def put_recall_index(self, name: str, source: str, data: bytes, head: int) -> None:
        """Keep (or replace) the index of one of the agent's archives, whose first ``head``
        bytes every query reads; the agent's version is not bumped: an index is no document."""
        with self.statement(f"write the recall index of {name}") as conn:
            conn.execute(
                "INSERT INTO nbmemory_recall_index (agent, source, head, data) "
                "SELECT %s, %s, %s, %s WHERE EXISTS "
                "(SELECT 1 FROM nbmemory_agents WHERE name = %s) ON CONFLICT (agent, source) "
                "DO UPDATE SET head = excluded.head, data = excluded.data",
                (name, source, head, data, name),
            )

    def remove_recall_index(self, name: str, source: str) -> None:
        """Remove one of the agent's recall indexes (found damaged: it is rebuilt)."""
        with self.statement(f"remove a recall index of {name}") as conn:
            conn.execute(
                "DELETE FROM nbmemory_recall_index WHERE agent = %s AND source = %s",
                (name, source),
            )

    def recall_index_names(self, name: str) -> list[str]:
        """The names (``source``) of the agent's recall indexes."""
        with self.statement(f"list the recall indexes of {name}") as conn:
            rows = conn.execute(
                "SELECT source FROM nbmemory_recall_index WHERE agent = %s", (name,)
            ).fetchall()
        return [source for (source,) in rows]

    def recall_index_size(self, name: str) -> int:
        """Bytes of the agent's archive indexes (in a snapshot, from its one query)."""
        listing = self._listing()
        if listing is not None and name in listing:
            return listing[name].index_bytes
        with self.statement(f"read the size of the recall index of {name}") as conn:
            row = conn.execute(
                "SELECT coalesce(sum(octet_length(data)), 0) FROM nbmemory_recall_index "
                "WHERE agent = %s",
                (name,),
            ).fetchone()
        return int(row[0])

    # ------------------------------------------------------------------------------------------
    # Whole agents, for import and export

    def load_agents(
        self, names: list[str], documents: Iterable[tuple[str, str, Iterable[bytes]]]
    ) -> None:
        """Create agents ``names`` from their documents, each ``(agent, document, pieces)``
        (``MEMORY.md`` included), in one transaction; refuses, writing nothing, if any of them
        exists already. ``MEMORY.md``'s pieces become rows of the memory as they come, so an
        import never holds a whole memory; another document's are joined into its row."""
        with self.transaction("import") as conn:
            for name in names:
                validate_agent_name(name)
            taken = conn.execute(
                "SELECT name FROM nbmemory_agents WHERE name = ANY(%s)", (names,)
            ).fetchall()
            if taken:
                listed = ", ".join(sorted(n for (n,) in taken))
                raise StoreError(
                    f"{self.shown} already has {listed}: nothing was imported (export them and "
                    "remove them first, or import into another database)"
                )
            for name in names:
                conn.execute("INSERT INTO nbmemory_agents (name, version) VALUES (%s, 1)", (name,))
            rows: dict[str, int] = {}
            for name, doc, pieces in documents:
                if doc != "MEMORY.md":
                    conn.execute(
                        "INSERT INTO nbmemory_documents (agent, name, data, version) "
                        "VALUES (%s, %s, %s, 1)",
                        (name, doc, b"".join(pieces)),
                    )
                    continue
                for piece in pieces:
                    rows[name] = rows.get(name, 0) + 1
                    conn.execute(
                        "INSERT INTO nbmemory_memory (agent, seq, data) VALUES (%s, %s, %s)",
                        (name, rows[name], piece),
                    )
            for name, last in rows.items():  # an append's row comes after the last one
                conn.execute(
                    "UPDATE nbmemory_agents SET version = %s WHERE name = %s", (last, name)
                )
