"""A private PostgreSQL server for the tests: its own data folder, a free port on 127.0.0.1.

The binaries are ``$NBMEMORY_PG_BIN``, else Debian's newest ``/usr/lib/postgresql/*/bin``
(``.ci/run`` installs the ``postgresql`` package), else those bundled by the ``pgserver`` wheel
of the test extra, so the README's test command needs no root. PostgreSQL refuses to run as
root: as root, the server runs as the ``postgres`` user (or ``nobody``) through ``runuser``.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path


def binaries() -> Path:
    """The folder of ``initdb`` and ``postgres``."""
    if os.environ.get("NBMEMORY_PG_BIN"):
        return Path(os.environ["NBMEMORY_PG_BIN"])
    debian = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/postgres"), key=lambda p: int(p.parts[-3])
    )
    if debian:
        return debian[-1].parent
    try:
        import pgserver
    except ImportError:
        raise RuntimeError(
            "the database tests need PostgreSQL's programs: install Debian's postgresql package "
            "(apt-get install postgresql), or set $NBMEMORY_PG_BIN to a folder with initdb, "
            "pg_ctl and postgres (the pgserver wheel that brings them has none for this Python)"
        ) from None
    return Path(pgserver.__file__).parent / "pginstall" / "bin"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _exists(user: str) -> bool:
    try:
        pwd.getpwnam(user)
    except KeyError:
        return False
    return True


class PostgresServer:
    """A server made in a temporary folder; ``url`` is its ``postgres`` database as superuser
    ``nbmemory``. ``stop()`` and ``start()`` take it down and up again on the same port."""

    def __init__(self) -> None:
        self.user = None
        if os.geteuid() == 0:
            self.user = "postgres" if _exists("postgres") else "nobody"
        self.bin = binaries()
        self.top = Path(tempfile.mkdtemp(prefix="nbmemory-pg-"))
        self.data, self.sockets = self.top / "data", self.top / "sockets"
        self.log = self.top / "server.log"
        self.port = _free_port()
        self.url = f"postgresql://nbmemory@127.0.0.1:{self.port}/postgres"
        self.env = {**os.environ, "LC_ALL": "C.UTF-8", "TZ": "UTC"}
        self.process: subprocess.Popen | None = None

    def _as_owner(self, command: list[str]) -> list[str]:
        return ["runuser", "-u", self.user, "--", *command] if self.user else command

    def __enter__(self) -> PostgresServer:
        self.data.mkdir()
        self.sockets.mkdir()
        if self.user:
            self.top.chmod(0o755)
            for folder in (self.data, self.sockets):
                shutil.chown(folder, self.user)
        initdb = [str(self.bin / "initdb"), "-D", str(self.data), "-U", "nbmemory"]
        initdb += ["-A", "trust", "-E", "UTF8", "--no-sync"]
        subprocess.run(self._as_owner(initdb), check=True, capture_output=True, env=self.env)
        self.start()
        return self

    def start(self) -> None:
        command = [str(self.bin / "postgres"), "-D", str(self.data), "-p", str(self.port)]
        command += ["-k", str(self.sockets), "-c", "listen_addresses=127.0.0.1"]
        command += ["-c", "max_connections=200", "-c", "shared_buffers=32MB"]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                self._as_owner(command), stdout=subprocess.DEVNULL, stderr=log, env=self.env
            )
        self._wait_ready()

    def stop(self) -> None:
        """A fast shutdown (clients are cut off), through ``pg_ctl`` as the server's owner."""
        if self.process is not None:
            command = [str(self.bin / "pg_ctl"), "-D", str(self.data), "stop", "-m", "fast", "-w"]
            subprocess.run(self._as_owner(command), capture_output=True, env=self.env)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
        shutil.rmtree(self.top, ignore_errors=True)

    def _wait_ready(self) -> None:
        import psycopg

        deadline = time.monotonic() + 60
        while True:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"PostgreSQL stopped: {self.log.read_text(errors='replace')}")
            try:
                psycopg.connect(self.url, connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """Start a server for the block; yields its URL (see :class:`PostgresServer`)."""
    with PostgresServer() as server:
        yield server.url


def new_database(url: str, name: str) -> str:
    """Create database ``name`` on the server of ``url``; its URL."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return url.rsplit("/", 1)[0] + f"/{name}"
