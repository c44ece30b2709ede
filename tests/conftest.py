"""Shared fixtures: every test gets its own workspace and working folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).parent.parent


@pytest.fixture(autouse=True)
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ``$WORKSPACE_DIR`` and working folder for each test: no test touches real state."""
    root = tmp_path / "workspace"
    monkeypatch.setenv("WORKSPACE_DIR", str(root))
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return root


def run_python(code: str, *args: str, cwd: Path | None = None, check: bool = True, **popen):
    """Run ``code`` in a new Python process that imports this checkout of nbmemory."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), **popen.pop("env", {})}
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        env=env,
        check=check,
        capture_output=True,
        text=True,
        timeout=120,
        **popen,
    )


@pytest.fixture
def openai_server():
    """A loopback OpenAI-compatible server; script replies with ``reply()``, read ``requests``."""
    from fake_openai import FakeOpenAI

    with FakeOpenAI() as server:
        yield server
