"""Shared fixtures: every test gets its own workspace and working folder."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import pytest

from support import close_litellm_clients


@pytest.fixture(autouse=True)
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ``$WORKSPACE_DIR`` and working folder for each test: no test touches real state."""
    root = tmp_path / "workspace"
    monkeypatch.setenv("WORKSPACE_DIR", str(root))
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
