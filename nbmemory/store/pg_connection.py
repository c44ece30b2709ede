"""A connection to a PostgreSQL store: the URL checked, a pool of connections made on first use
(again in a forked child), the schema brought up to date then, and psycopg's failures turned
into ``StoreError`` subclasses that name the database and the fix, without its password.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import sys
import threading
import unicodedata
from collections.abc import Iterator
from typing import Any, NoReturn

from nbmemory.errors import (
    StoreConfigError,
    StoreError,
    StorePermissionError,
    StoreUnavailableError,
)
from nbmemory.store.masked_url import (
    hidden_url,
    hide_password,
    is_ambiguous,
    is_database_url,
    named_setting,
    shown_url,
)
from nbmemory.store.pg_schema import migrate

CONNECT_TIMEOUT = 10


def _raise(error: StoreError) -> NoReturn:
    """Raise ``error`` with no context: the psycopg exception it replaces may quote the URL."""
    try:
        raise error
    except StoreError:
        error.__context__ = None
        raise


class PgConnection:
    """Connections to one PostgreSQL database, and the errors they raise said plainly: what
    :class:`~nbmemory.store.postgresql.PgStore` runs its statements on."""

    def __init__(self, url: str) -> None:
        url = url.strip()
        if not is_database_url(url):
            raise StoreConfigError(
                f"{named_setting(url)} is not a PostgreSQL URL: write "
                "postgresql://USER:PASSWORD@HOST:PORT/DB (or leave the store unset to keep "
                "memories in files)"
            )
        if any(unicodedata.category(c) in ("Cc", "Cs") for c in url):
            # libpq ends the URL at a NUL, and cannot encode a lone surrogate (bytes that were
            # not UTF-8): refused before it reads a part of the password as something else
            raise StoreConfigError(
                f"{named_setting(url)} holds a control character or text that is not UTF-8: "
                "percent-encode it (a newline is %0A)"
            )
        if is_ambiguous(url):
            raise StoreConfigError(
                f"{hidden_url(url)} is ambiguous: write each @ and / of the password "
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
                f"{shown_url(url)} is not a usable URL: {hide_password(problem, url)}"
            )
        self.url = url
        self.shown = shown_url(url)
        self._pool: Any = None
        self._pid = 0
        self._lock = threading.RLock()  # close() runs inside _get_pool when connecting fails
        self._local = threading.local()
        self._valid_names: set[str] = set()  # names appended to: not checked again

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
            migrate(conn, self.shown)

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
