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
    """The folder of ``initdb``, ``pg_ctl`` and ``postgres``."""
    if os.environ.get("NBMEMORY_PG_BIN"):
        return Path(os.environ["NBMEMORY_PG_BIN"])
    debian = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/postgres"), key=lambda p: int(p.parts[-3])
    )
    if debian:
        return debian[-1].parent
    import pgserver

    return Path(pgserver.__file__).parent / "pginstall" / "bin"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _as_owner(command: list[str], user: str | None) -> list[str]:
    return ["runuser", "-u", user, "--", *command] if user else command


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """Start a server; yields the URL of its ``postgres`` database as superuser ``nbmemory``."""
    user = None
    if os.geteuid() == 0:
        user = "postgres" if _exists("postgres") else "nobody"
    bin_dir = binaries()
    top = Path(tempfile.mkdtemp(prefix="nbmemory-pg-"))
    data, sockets = top / "data", top / "sockets"
    data.mkdir()
    sockets.mkdir()
    if user:
        top.chmod(0o755)
        for folder in (data, sockets):
            shutil.chown(folder, user)
    port = _free_port()
    env = {**os.environ, "LC_ALL": "C.UTF-8", "TZ": "UTC"}
    subprocess.run(
        _as_owner(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                "nbmemory",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
            user,
        ),
        check=True,
        capture_output=True,
        env=env,
    )
    log = top / "server.log"
    server = subprocess.Popen(
        _as_owner(
            [
                str(bin_dir / "postgres"),
                "-D",
                str(data),
                "-p",
                str(port),
                "-k",
                str(sockets),
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "max_connections=200",
                "-c",
                "shared_buffers=32MB",
            ],
            user,
        ),
        stdout=subprocess.DEVNULL,
        stderr=open(log, "wb"),  # noqa: SIM115 (closed with the process)
        env=env,
    )
    url = f"postgresql://nbmemory@127.0.0.1:{port}/postgres"
    try:
        _wait_ready(url, server, log)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        shutil.rmtree(top, ignore_errors=True)


def _exists(user: str) -> bool:
    try:
        pwd.getpwnam(user)
    except KeyError:
        return False
    return True


def _wait_ready(url: str, server: subprocess.Popen, log: Path) -> None:
    import psycopg

    deadline = time.monotonic() + 60
    while True:
        if server.poll() is not None:
            raise RuntimeError(f"PostgreSQL stopped: {log.read_text(errors='replace')}")
        try:
            psycopg.connect(url, connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def new_database(url: str, name: str) -> str:
    """Create database ``name`` on the server of ``url``; its URL."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return url.rsplit("/", 1)[0] + f"/{name}"
