"""Shared fixtures: every test gets its own workspace and working folder."""

from __future__ import annotations

import asyncio
import itertools
import os
import warnings
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import pytest

from support import close_litellm_clients


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """With ``$NBMEMORY_TEST_STORE=postgresql``, skip the tests marked ``files``, giving the
    reason each was marked with: what they test exists only on files. A mark without its
    reason is refused in either mode."""
    on_database = os.environ.get("NBMEMORY_TEST_STORE") == "postgresql"
    for item in items:
        marker = item.get_closest_marker("files")
        if marker is None:
            continue
        if not marker.args:
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.files needs its reason")
        if on_database:
            item.add_marker(pytest.mark.skip(reason=f"files only: {marker.args[0]}"))


@pytest.fixture(autouse=True)
def no_store_left_behind() -> Iterator[None]:
    """After each test (and after its monkeypatches are undone), no store and no server root
    in the environment: a server extension started in the test's process exports both for its
    kernels, unpatched."""
    yield
    os.environ.pop("NBMEMORY_STORE", None)
    os.environ.pop("NBMEMORY_SERVER_ROOT", None)


@pytest.fixture(autouse=True)
def workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Path:
    """A fresh ``$WORKSPACE_DIR`` and working folder for each test: no test touches real state.

    Agents are files, unless a test asks for ``database``, or ``$NBMEMORY_TEST_STORE`` is
    ``postgresql`` (every test on a fresh database: to try the suite on the database store).
    """
    root = tmp_path / "workspace"
    monkeypatch.setenv("WORKSPACE_DIR", str(root))
    monkeypatch.delenv("NBMEMORY_STORE", raising=False)
    if os.environ.get("NBMEMORY_TEST_STORE") == "postgresql":
        request.getfixturevalue("database")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return root


@pytest.fixture(autouse=True)
def litellm_clients_closed() -> Iterator[None]:
    """After each test, close the connections litellm kept open to the test's model server."""
    yield
    close_litellm_clients()


@pytest.fixture(autouse=True, scope="session")
def main_event_loop_closed() -> Iterator[None]:
    """At the end, close the main thread's event loop, which litellm's logging and
    jupyter_client's blocking API make with ``asyncio.get_event_loop()`` and leave open."""
    yield
    policy = asyncio.get_event_loop_policy()
    with warnings.catch_warnings(), suppress(RuntimeError):  # Python 3.14 makes none
        warnings.simplefilter("ignore", DeprecationWarning)  # 3.12 and 3.13 warn making one
        policy.get_event_loop().close()
    policy.set_event_loop(None)


@pytest.fixture
def openai_server():
    """A loopback OpenAI-compatible server; script replies with ``reply()``, read ``requests``."""
    from fake_openai import FakeOpenAI

    with FakeOpenAI() as server:
        yield server


@pytest.fixture(scope="session")
def postgres() -> Iterator[str]:
    """A private PostgreSQL server for the session (see ``tests/pg_server.py``): its URL."""
    from pg_server import postgres_server

    with postgres_server() as url:
        yield url


_database_numbers = itertools.count(1)
"""Numbers the session's databases: test names cut to fit PostgreSQL's 63 bytes can clash."""


@pytest.fixture
def database_url(postgres: str, request: pytest.FixtureRequest) -> str:
    """A fresh, empty database on the test server, for one test."""
    from pg_server import new_database

    name = "t_" + "".join(c if c.isalnum() else "_" for c in request.node.name.lower())[:50]
    return new_database(postgres, f"{name}_{next(_database_numbers)}")


@pytest.fixture
def database(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The workspace's store is a fresh database (``$NBMEMORY_STORE``): its URL."""
    from nbmemory.store.workspace import database_at

    monkeypatch.setenv("NBMEMORY_STORE", database_url)
    yield database_url
    database_at(database_url).close()


@pytest.fixture(params=["files", "postgresql"])
def on_store(request: pytest.FixtureRequest) -> str:
    """The test's workspace on files, then on a fresh database: ``files`` or ``postgresql``.
    In a run with every test on the database, the files case is skipped (its twin runs)."""
    if request.param == "postgresql":
        request.getfixturevalue("database")
    elif os.environ.get("NBMEMORY_TEST_STORE") == "postgresql":
        pytest.skip("files only: the postgresql case of this test runs on the database")
    return request.param
