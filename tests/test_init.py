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


def test_the_swarms_imports_and_the_packages_public_names_work():
    from nbmemory.agent import Agent
    from nbmemory.compressor import ContextCompressor
    from nbmemory.conversation import (
        PRELOAD_MARKER,
        SUMMARY_MARKER,
        ChangeEvent,
        Conversation,
        TokenUsage,
        preload_text,
        preloaded_messages,
    )
    from nbmemory.store import memory_path

    assert Agent is nbmemory.Agent and Conversation is nbmemory.Conversation
    assert ChangeEvent is nbmemory.ChangeEvent and TokenUsage is nbmemory.TokenUsage
    assert preloaded_messages(preload_text("", "")) == [] and PRELOAD_MARKER
    assert ContextCompressor is nbmemory.ContextCompressor
    assert SUMMARY_MARKER == "[Compressed Memory Summary]" and callable(memory_path)


def entry_points() -> list[object]:
    from nbmemory.agent import Agent
    from nbmemory.recall import find, recall
    from nbmemory.views import ReadModel

    agent = [Agent, Agent.run, Agent.compact, Agent.compact_preview, Agent.from_memory]
    reads = [getattr(ReadModel, n) for n in vars(ReadModel) if not n.startswith("_")]
    return [*agent, recall, find, ReadModel, *(r for r in reads if callable(r))]


def test_the_public_entry_points_document_their_arguments_and_results():
    import inspect

    missing = []
    for entry in entry_points():
        doc = inspect.getdoc(entry) or ""
        target = entry.__init__ if inspect.isclass(entry) else entry
        takes = [p for p in inspect.signature(target).parameters if p not in ("self", "cls")]
        sections = ["Args:"] * bool(takes) + ["Returns:"] * (not inspect.isclass(entry))
        missing += [f"{entry.__qualname__}: {s}" for s in sections if s not in doc]
        args = doc.partition("Args:")[2].partition("Returns:")[0]
        missing += [
            f"{entry.__qualname__}: {p}"
            for p in takes
            if f"{p}:" not in args and f"**{p}:" not in args
        ]
    assert not missing
