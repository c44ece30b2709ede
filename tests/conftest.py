"""Shared fixtures: every test gets its own workspace and working folder."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ``$WORKSPACE_DIR`` and working folder for each test: no test touches real state."""
    root = tmp_path / "workspace"
    monkeypatch.setenv("WORKSPACE_DIR", str(root))
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return root


@pytest.fixture
def openai_server():
    """A loopback OpenAI-compatible server; script replies with ``reply()``, read ``requests``."""
    from fake_openai import FakeOpenAI

    with FakeOpenAI() as server:
        yield server
