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

Schema versions: ``nbmemory_schema`` holds the version applied. The tables are created on first
use; a later version adds its statements to ``MIGRATIONS`` under the next number, and the first
process of the new version to connect applies the missing ones in one transaction, under an
advisory lock. A database of a newer version than this code is refused (``StoreSchemaError``).
"""

from __future__ import annotations

import contextlib
import datetime
import itertools
import logging
import os
import re
import select
import sys
import threading
import time
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NoReturn
from urllib.parse import unquote, unquote_to_bytes

from nbmemory.errors import (
    StoreConfigError,
    StoreError,
    StorePermissionError,
    StoreSchemaError,
    StoreUnavailableError,
)
from nbmemory.memory_file import archive_name
from nbmemory.workspace import ARCHIVE_DIR, COUNTS_FILE, validate_agent_name

SCHEMES = ("postgresql", "postgres")
SCHEMA_VERSION = 4
MIGRATIONS: dict[int, list[str]] = {
    1: [
        """CREATE TABLE nbmemory_agents (
            name text PRIMARY KEY,
            version bigint NOT NULL DEFAULT 0,
            epoch bigint NOT NULL DEFAULT 0,
            created timestamptz NOT NULL DEFAULT now()
        )""",
        """CREATE TABLE nbmemory_memory (
            agent text NOT NULL REFERENCES nbmemory_agents (name) ON DELETE CASCADE,
            seq bigint NOT NULL,
            data bytea NOT NULL,
            PRIMARY KEY (agent, seq)
        )""",
        """CREATE TABLE nbmemory_documents (
            agent text NOT NULL REFERENCES nbmemory_agents (name) ON DELETE CASCADE,
            name text NOT NULL,
            data bytea NOT NULL,
            version bigint NOT NULL,
            PRIMARY KEY (agent, name)
        )""",
        # An append in one round trip: lock and bump the agent, then read the memory's last
        # bytes (each statement of a function sees what committed before it) to start the block
        # on a line of its own, as memory_file does after text a crash left unfinished.
        """CREATE FUNCTION nbmemory_append(agent_name text, header bytea, block bytea)
        RETURNS bigint LANGUAGE plpgsql AS $$
        DECLARE
            v bigint;
            tail bytea;
        BEGIN
            UPDATE nbmemory_agents SET version = version + 1 WHERE name = agent_name
                RETURNING version INTO v;
            IF v IS NULL THEN
                INSERT INTO nbmemory_agents (name, version) VALUES (agent_name, 1)
                    ON CONFLICT (name) DO UPDATE SET version = nbmemory_agents.version + 1
                    RETURNING version INTO v;
            END IF;
            SELECT substring(data FROM greatest(length(data) - 1, 1)) INTO tail
                FROM nbmemory_memory WHERE agent = agent_name ORDER BY seq DESC LIMIT 1;
            INSERT INTO nbmemory_memory (agent, seq, data) VALUES (agent_name, v, CASE
                WHEN tail IS NULL THEN header
                WHEN length(tail) = 0 OR tail = '\\x0a0a'::bytea THEN ''::bytea
                WHEN get_byte(tail, length(tail) - 1) = 10 THEN '\\x0a'::bytea
                ELSE '\\x0a0a'::bytea
            END || block);
            RETURN v;
        END $$""",
    ],
    # Recall's vectors of an agent's messages, by embedding model and by the hash of what was
    # embedded: an index that recall rebuilds, so no version is bumped when it changes.
    2: [
        """CREATE TABLE nbmemory_embeddings (
            agent text NOT NULL REFERENCES nbmemory_agents (name) ON DELETE CASCADE,
            model text NOT NULL,
            hash bytea NOT NULL,
            vector bytea NOT NULL,
            PRIMARY KEY (agent, model, hash)
        )""",
    ],
    # Recall's index of each archive (``recall.kept_indexes``): rebuilt when missing or stale, so no
    # version is bumped either. Stored uncompressed, so that a part of it is read alone: a query
    # reads its ``head`` bytes (the postings), then only the texts of its passages.
    3: [
        """CREATE TABLE nbmemory_recall_index (
            agent text NOT NULL REFERENCES nbmemory_agents (name) ON DELETE CASCADE,
            source text NOT NULL,
            head integer NOT NULL,
            data bytea NOT NULL,
            PRIMARY KEY (agent, source)
        )""",
        "ALTER TABLE nbmemory_recall_index ALTER COLUMN data SET STORAGE EXTERNAL",
    ],
    # Appends to a document as rows of their own (``seq`` is the agent's version they made),
    # read after its ``data``; ``appended`` counts their bytes, for the document's size. A
    # write of the whole document deletes them, and they go with the document.
    4: [
        "ALTER TABLE nbmemory_documents ADD COLUMN appended bigint NOT NULL DEFAULT 0",
        """CREATE TABLE nbmemory_appends (
            agent text NOT NULL,
            name text NOT NULL,
            seq bigint NOT NULL,
            data bytea NOT NULL,
            PRIMARY KEY (agent, name, seq),
            FOREIGN KEY (agent, name) REFERENCES nbmemory_documents (agent, name)
                ON DELETE CASCADE ON UPDATE CASCADE
        )""",
    ],
}
_SCHEMA_LOCK = 0x6E626D656D  # the advisory lock held while the schema is created or migrated
CONNECT_TIMEOUT = 10


def is_database_url(url: str) -> bool:
    """Whether ``url`` names a PostgreSQL database (``postgresql://…`` or ``postgres://…``)."""
    scheme, separator, _ = url.partition("://")
    return bool(separator) and scheme.lower() in SCHEMES


def hide_password(text: str, url: str) -> str:
    """``text`` with every password that ``url`` may hold replaced by ``***``.

    Applied to whatever a message shows of the URL or quotes from psycopg, since libpq's errors
    can quote the connection string whole. It does not rely on the URL being valid: it hides
    the password of each way the URL could be read (its user information ending at the first
    ``@`` as libpq reads it, or at the last as a person who left an ``@`` of the password
    unencoded means it), every ``password=`` value of a query or a ``key=value`` string, each
    also percent-decoded (as UTF-8, as Latin-1, and as the bytes of escapes that are not UTF-8)
    and as ``repr()`` would escape it. Hiding too much is the safe side.
    """
    for secret in _secrets(url):
        text = text.replace(secret, "***")
    return text


def _secrets(url: str) -> list[str]:
    """The strings that ``hide_password`` hides for ``url``, longest first."""
    found: set[str] = set()
    rest = url.partition("://")[2] or url
    for end in (rest.find("@"), rest.rfind("@")):
        if end > 0:
            found.add(rest[:end].partition(":")[2])
    for match in _password_keys(url):
        tail = url[match.end() :]
        quoted = re.match(r"'((?:[^'\\]|\\.)*)'?", tail)
        if quoted:  # key=value style, quoted: 'a b\'c'
            found.update({quoted[0], quoted[1], re.sub(r"\\(.)", r"\1", quoted[1])})
        # up to a space (key=value), to the next parameter (a query), or to either
        for pattern in (r"\S*", r"[^&]*", r"[^&#\s]*"):
            found.add(re.match(pattern, tail)[0].rstrip())
    forms = set()
    for secret in found:
        # decoded as psycopg does, and as messages may quote escapes that are not UTF-8
        decoded = (
            unquote(secret),
            unquote(secret, "latin-1"),
            unquote(secret, errors="surrogateescape"),
        )
        for form in (secret, *decoded):
            forms.update({form, repr(form)[1:-1]})
        raw = unquote_to_bytes(secret.encode("utf-8", "surrogatepass"))
        forms.add(repr(raw)[2:-1])  # Qz7\xe9Kx9, as b'Qz7\xe9Kx9' shows it
    forms.discard("")
    return sorted(forms, key=len, reverse=True)


_KEY = re.compile(r"((?:\w|%[0-9A-Fa-f]{2})+)\s*=\s*")
"""A parameter's name and its ``=``: libpq percent-decodes names, so ``pass%77ord`` is one."""


def _password_keys(url: str) -> list[re.Match[str]]:
    """The ``password=`` (``sslpassword=``, …) of ``url``, however their names are written."""
    return [m for m in _KEY.finditer(url) if "password" in unquote(m[1], "latin-1").lower()]


def _without_password(url: str) -> str:
    """``url`` with its password replaced by ``***`` where it stands: the password of its user
    information (up to its last ``@``) and each ``password=`` value. Exact for a URL that
    ``PgStore`` accepts, where hiding every copy of a password such as ``postgres`` would also
    hide the scheme and the user; for one it refuses, ``hide_password`` then hides the rest."""
    head, separator, rest = url.partition("://")
    userinfo, _, where = rest.rpartition("@")
    user, colon, _ = userinfo.partition(":")
    if separator and colon:
        rest = f"{user}:***@{where}"
    url = head + separator + rest
    value = re.compile(r"'(?:[^'\\]|\\.)*'?|[^&\s]*")
    for key in reversed(_password_keys(url)):
        end = value.match(url, key.end()).end()
        url = f"{url[: key.end()]}***{url[end:]}"
    return url


def _hidden(url: str) -> str:
    """A URL that ``PgStore`` refuses, for its message: without anything that may be a part
    of its password."""
    return hide_password(_without_password(url), url)


def _ambiguous(url: str) -> bool:
    """Whether ``url`` has a password and an ``@`` or ``/`` before its last ``@``: a password
    with them unencoded. libpq would take part of it for the host or the database, and could
    show that part in its messages, where ``hide_password`` cannot tell it from a host name."""
    userinfo = url.partition("://")[2].rpartition("@")[0]
    return ":" in userinfo and ("@" in userinfo or "/" in userinfo)


def _named(setting: str) -> str:
    """A store setting that is not a database URL, for a message: quoted without its password
    if it looks like a URL (``scheme://…``), else not at all (it might be a password alone)."""
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", setting):
        return repr(_hidden(setting))
    return "the store setting"


def _shown(url: str) -> str:
    """The URL without its password, to name the database in messages: user, hosts, ports and
    database as libpq reads them (an unambiguous URL holds its password in none of them); or,
    if it cannot, the URL with its password hidden."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        parts = conninfo_to_dict(url)
    except Exception:
        return _hidden(url)
    hosts = parts.get("host", "localhost").split(",")
    ports = parts.get("port", "").split(",")
    if len(ports) == 1:  # one port for every host
        ports *= len(hosts)
    hosts = [f"[{h}]" if ":" in h else h for h in hosts]  # an IPv6 address
    pairs = itertools.zip_longest(hosts, ports, fillvalue="")
    where = ",".join(f"{h}:{p}" if p else h for h, p in pairs)
    user = f"{parts['user']}@" if parts.get("user") else ""
    return f"postgresql://{user}{where}/{parts.get('dbname', '')}"


class MaskedUrl(str):
    """A store URL whose ``repr()`` hides its password: what the ``store`` settings hold, so
    that ``%config NbMemoryMagics`` and ``%config NbMemoryMagics.store`` show it without the
    password in a notebook's outputs. It is the URL itself otherwise (``str()``, comparisons)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return repr(_without_password(str(self)))


def _raise(error: StoreError) -> NoReturn:
    """Raise ``error`` with no context: the psycopg exception it replaces may quote the URL."""
    try:
        raise error
    except StoreError:
        error.__context__ = None
        raise


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


class PgStore:
    """One PostgreSQL database holding every agent of a workspace.

    Connections come from a small pool made on first use (and made again in a forked child);
    the schema is created or migrated then too. Errors are ``StoreError`` subclasses that name
    the database and the fix.
    """

    def __init__(self, url: str) -> None:
        url = url.strip()
        if not is_database_url(url):
            raise StoreConfigError(
                f"{_named(url)} is not a PostgreSQL URL: write "
                "postgresql://USER:PASSWORD@HOST:PORT/DB (or leave the store unset to keep "
                "memories in files)"
            )
        if any(unicodedata.category(c) in ("Cc", "Cs") for c in url):
            # libpq ends the URL at a NUL, and cannot encode a lone surrogate (bytes that were
            # not UTF-8): refused before it reads a part of the password as something else
            raise StoreConfigError(
                f"{_named(url)} holds a control character or text that is not UTF-8: "
                "percent-encode it (a newline is %0A)"
            )
        if _ambiguous(url):
            raise StoreConfigError(
                f"{_hidden(url)} is ambiguous: write each @ and / of the password "
                "(and of the user name and parameters) percent-encoded, as %40 and %2F"
            )
        try:
            import psycopg
            from psycopg.conninfo import conninfo_to_dict
        except ImportError:
            raise StoreConfigError(
                "a PostgreSQL store needs psycopg: pip install 'nbmemory[postgres]'"
            ) from None
        problem = None
        try:
            conninfo_to_dict(url)
        except UnicodeDecodeError:  # its message quotes the bytes: said here without them
            problem = "its percent escapes decode to bytes that are not UTF-8 text"
        except (psycopg.Error, ValueError) as exc:
            problem = _first_line(exc)  # it may quote the URL: kept, raised outside this block
        if problem is not None:
            raise StoreConfigError(
                f"{_shown(url)} is not a usable URL: {hide_password(problem, url)}"
            )
        self.url = url
        self.shown = _shown(url)
        self._pool: Any = None
        self._pid = 0
        self._lock = threading.RLock()  # close() runs inside _get_pool when connecting fails
        self._local = threading.local()
        self._valid_names: set[str] = set()  # names appended to: not checked again

    def __repr__(self) -> str:
        return f"PgStore({self.shown!r})"

    # ------------------------------------------------------------------------------------------
    # Connections and errors

    @contextlib.contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        """Turn psycopg's failures into errors that say what failed and how to fix it, quoting
        psycopg's message without the password and leaving its exception out of theirs."""
        import psycopg
        from psycopg import errors
        from psycopg_pool import PoolTimeout

        try:
            yield
            return
        except (StoreError, GeneratorExit):
            raise  # GeneratorExit: a consumer stopped reading; the block gave back its connection
        except (errors.InsufficientPrivilege, errors.ReadOnlySqlTransaction) as exc:
            failure: StoreError = StorePermissionError(
                f"{self.shown}: could not {what}: {self._said(exc)}. Use a role that may "
                "SELECT, INSERT, UPDATE and DELETE on the nbmemory_* tables (and CREATE in the "
                "schema, the first time), on a primary server, not a read-only standby"
            )
        except (psycopg.OperationalError, PoolTimeout, psycopg.InterfaceError) as exc:
            # A pool that lost its server backs off before reconnecting: start afresh instead,
            # so the next call connects at once (and reports why not) when the server is back.
            self.close(timeout=1.0)
            failure = StoreUnavailableError(
                f"{self.shown}: could not {what}: {self._said(exc) or type(exc).__name__}. "
                "Check that the server is running and reachable and that $NBMEMORY_STORE (or "
                "--store, --store-file) names it; nothing unacknowledged was kept, so retry "
                "once it is back"
            )
        except psycopg.Error as exc:
            failure = StoreError(f"{self.shown}: could not {what}: {self._said(exc)}")
        except Exception as exc:
            interrupt = exc.__context__
            if not isinstance(interrupt, KeyboardInterrupt):
                raise
            # psycopg_pool's connection() raises UnboundLocalError when an interrupt comes
            # between taking a connection and starting its timer: the interrupt is what happened.
            self._abandon_pool()
            raise interrupt from None
        except BaseException:
            self._abandon_pool()
            raise
        _raise(failure)

    def _abandon_pool(self) -> None:
        """After an interrupt (``KeyboardInterrupt``, ``SystemExit``) anywhere in psycopg_pool's
        bookkeeping: the pool may have
        lost a connection for good (it counts it as lent, and after ``max_size`` such losses
        every call would wait ``CONNECT_TIMEOUT`` and fail), so it is closed, waiting at most
        a moment for its threads, and the next call makes a new one."""
        self.close(timeout=0.2)

    def _said(self, exc: BaseException) -> str:
        """The first line of psycopg's message, without the password."""
        return hide_password(_first_line(exc), self.url)

    def _get_pool(self) -> Any:
        from psycopg_pool import ConnectionPool

        with self._lock:
            if self._pool is None or self._pid != os.getpid():
                self._check_server()
                self._pool = ConnectionPool(
                    self.url,
                    min_size=1,
                    max_size=4,
                    timeout=CONNECT_TIMEOUT,
                    kwargs={"connect_timeout": CONNECT_TIMEOUT, "autocommit": True},
                    configure=_configure,
                    check=_check_connection,
                    open=True,
                    name=f"nbmemory {self.shown}",
                )
                self._pid = os.getpid()
                _quiet_on_interrupt()
            return self._pool

    def _check_server(self) -> None:
        """Connect once directly, so a wrong URL or a refused connection is reported with its
        cause (a pool would only time out), and create or migrate the schema."""
        import psycopg

        with (
            self._errors("connect"),
            psycopg.connect(self.url, connect_timeout=CONNECT_TIMEOUT) as conn,
        ):
            _configure(conn)
            _migrate(conn, self.shown)

    @contextlib.contextmanager
    def transaction(self, what: str) -> Iterator[Any]:
        """A connection in a transaction, committed when the block ends without an error.

        Inside :meth:`locked`, the locked transaction itself (so nothing waits on its own lock).
        """
        current = getattr(self._local, "conn", None)
        if current is not None:
            yield current
            return
        with self._errors(what), self._get_pool().connection() as conn, conn.transaction():
            yield conn

    @contextlib.contextmanager
    def statement(self, what: str) -> Iterator[Any]:
        """A connection whose every statement is a transaction of its own (one round trip), or
        the locked transaction inside :meth:`locked`."""
        current = getattr(self._local, "conn", None)
        if current is not None:
            yield current
            return
        with self._errors(what):
            # getconn and putconn, not the pool's connection(): one context manager less on
            # every statement (an append's Python side is a tenth of its time). An interrupt
            # between them leaves the connection lent: _errors then abandons the pool.
            pool = self._get_pool()
            conn = pool.getconn()
            try:
                yield conn
            finally:
                pool.putconn(conn)

    def close(self, timeout: float = 5.0) -> None:
        """Close this process's connections (the store reconnects when used again)."""
        with self._lock:
            if self._pool is not None and self._pid == os.getpid():
                self._pool.close(timeout=timeout)
            self._pool = None

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


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else ""


def _check_connection(conn: Any) -> None:
    """The pool's check of a connection it lends, without a round trip on a healthy one (an
    append is then one round trip, not two): a connection that the server closed (a restart,
    ``pg_terminate_backend``) has something to read, its last message or the end of the stream,
    and only then is it asked to answer, which finds it broken so that the pool replaces it."""
    from psycopg_pool import ConnectionPool

    fd = conn.fileno()
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        readable = bool(poller.poll(0))
    else:  # Windows: its select() takes any socket
        readable = bool(select.select([fd], [], [], 0)[0])
    if readable:
        ConnectionPool.check_connection(conn)


class _QuietOnInterrupt(logging.Filter):
    """Drops psycopg's warnings about the statement a Ctrl-C cut short (its rollback failed,
    its connection closed): nothing a person can act on, and, with no logging set up, as in a
    kernel, they would be printed under the interrupted cell. The connection is closed and the
    server rolls its transaction back; the interrupt itself still propagates."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.WARNING:
            return True
        exc = sys.exc_info()[1]
        while exc is not None:
            if isinstance(exc, KeyboardInterrupt):
                return False
            exc = exc.__context__
        return True


def _quiet_on_interrupt() -> None:
    """Put the filter on psycopg's loggers, once (a logger's filters see only its own records)."""
    for name in ("psycopg", "psycopg.pool", "psycopg.transaction"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _QuietOnInterrupt) for f in logger.filters):
            logger.addFilter(_QuietOnInterrupt())


def _configure(conn: Any) -> None:
    """Every connection commits durably, whatever the server's default."""
    conn.execute("SET synchronous_commit TO on")
    if not conn.autocommit:
        conn.commit()


def _migrate(conn: Any, shown: str) -> None:
    """Create the tables, or bring them to ``SCHEMA_VERSION``, under an advisory lock."""
    with conn.transaction():
        exists = conn.execute("SELECT to_regclass('nbmemory_schema')").fetchone()[0]
        version = 0
        if exists:
            row = conn.execute("SELECT max(version) FROM nbmemory_schema").fetchone()
            version = row[0] or 0
        if version == SCHEMA_VERSION:
            return
        if version > SCHEMA_VERSION:
            raise StoreSchemaError(
                f"{shown} holds nbmemory tables of schema version {version}, newer than this "
                f"nbmemory knows ({SCHEMA_VERSION}): upgrade nbmemory"
            )
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS nbmemory_schema "
            "(version integer PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())"
        )
        version = conn.execute("SELECT coalesce(max(version), 0) FROM nbmemory_schema").fetchone()[
            0
        ]
        for number in range(version + 1, SCHEMA_VERSION + 1):
            for statement in MIGRATIONS[number]:
                conn.execute(statement)
            conn.execute("INSERT INTO nbmemory_schema (version) VALUES (%s)", (number,))
