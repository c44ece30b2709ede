import json

import nbmemory
from support import run_python

HEAVY = [
    "litellm",
    "IPython",
    "anywidget",
    "jupyter_server",
    "tornado",
    "tiktoken",
    "yaml",
    "mcp",
    "numpy",
]
LATER = [
    "nbmemory.store.postgresql",
    "nbmemory.store.pg_connection",
    "nbmemory.store.pg_schema",
    "psycopg",
    "logging",
    "uuid",
    "secrets",
]
"""Imported when first used (a database, a log line, an id), not by ``import nbmemory``."""


def test_import_pulls_in_no_heavy_library_and_creates_nothing(tmp_path):
    tmp_path = tmp_path / "empty"
    tmp_path.mkdir()
    code = (
        "import json, sys, nbmemory; "
        f"print(json.dumps([m for m in {HEAVY + LATER!r} if m in sys.modules]))"
    )
    result = run_python(code, cwd=tmp_path, env={"WORKSPACE_DIR": str(tmp_path / "ws")})
    assert json.loads(result.stdout) == []
    assert list(tmp_path.iterdir()) == []


def test_the_public_api_is_small_and_importable():
    assert "Conversation" in nbmemory.__all__
    for name in nbmemory.__all__:
        assert hasattr(nbmemory, name)
