"""The folder layout as the way in and out of a database: lossless both ways."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from pg_server import new_database

from nbmemory import Agent, cli, store
from nbmemory.errors import StoreConfigError, StoreError
from nbmemory.layout import export_layout, import_layout
from nbmemory.read_model import ReadModel
from support import FIXTURES, run_python


def tree(folder: Path) -> dict[str, bytes]:
    """Every file below ``folder`` by its relative path."""
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def file_workspace(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace written on files: an agent with notes, settings, two compactions (one by
    the compressor, with its record) and a folder swarms 16 wrote."""
    monkeypatch.setenv("WORKSPACE_DIR", str(root))
    agent = Agent(
        agent_name="Scout",
        model_name="nbmemory/offline",
        persistent_memory=True,
        context_length=1500,
        context_compression=True,
    )
    agent.notes.add("The budget is 40k EUR.")
    for i in range(12):
        agent.run(f"Order PO-{7700 + i} ships from Lyon on day {i}.")
    agent.short_memory.compact("By hand: orders PO-7700 to PO-7711 were discussed.")
    agent.run("Which depot?")
    swarms = root / "agents" / "SwarmsAgent"
    swarms.mkdir(parents=True)
    shutil.copy(FIXTURES / "swarms_16_memory.md", swarms / "MEMORY.md")
    assert len(list((root / "agents" / "Scout" / "archive").glob("*.json"))) >= 1
    return root


def test_export_import_export_gives_the_same_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, postgres: str
):
    files = file_workspace(tmp_path / "files", monkeypatch)
    first, second = (new_database(postgres, f"layout_{n}_{os.getpid()}") for n in (1, 2))
    monkeypatch.setenv("WORKSPACE_DIR", str(tmp_path / "unused"))
    try:
        assert cli.main(["--store", first, "import", str(files)]) == 0
        assert cli.main(["--store", first, "export", "--layout", str(tmp_path / "a")]) == 0
        assert cli.main(["--store", second, "import", str(tmp_path / "a")]) == 0
        assert cli.main(["--store", second, "export", "--layout", str(tmp_path / "b")]) == 0
        on_database = ReadModel().agent("Scout")
    finally:
        for url in (first, second):
            store.use(url)
            store.database().close()
    original = tree(files / "agents")
    assert tree(tmp_path / "a" / "agents") == original
    assert tree(tmp_path / "b" / "agents") == original
    assert {p.split("/")[0] for p in original} == {"Scout", "SwarmsAgent"}
    assert any(p.startswith("Scout/archive/") and p.endswith(".json") for p in original)
    assert "Scout/NOTES.md" in original and "Scout/settings.json" in original
    monkeypatch.setenv("WORKSPACE_DIR", str(files))
    monkeypatch.delenv("NBMEMORY_STORE")
    assert on_database.messages == ReadModel().agent("Scout").messages
    assert not (tmp_path / "unused").exists()


def test_import_loads_nothing_if_one_agent_is_there_already(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, database: str
):
    source = tmp_path / "source" / "agents"
    for name in ("Alpha", "Beta"):
        (source / name).mkdir(parents=True)
        shutil.copy(FIXTURES / "spec_memory.md", source / name / "MEMORY.md")
    import_layout(tmp_path / "source")
    shutil.rmtree(source / "Alpha")
    (source / "Gamma").mkdir()
    shutil.copy(FIXTURES / "spec_memory.md", source / "Gamma" / "MEMORY.md")
    with pytest.raises(StoreError, match="already has Beta: nothing was imported"):
        import_layout(tmp_path / "source")
    assert store.agents() == ["Alpha", "Beta"]


def test_export_never_overwrites_and_import_needs_a_database(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture
):
    (workspace / "agents" / "Scout").mkdir(parents=True)
    shutil.copy(FIXTURES / "spec_memory.md", workspace / "agents" / "Scout" / "MEMORY.md")
    assert export_layout(tmp_path / "out") == ["Scout"]  # from files, too
    assert tree(tmp_path / "out" / "agents") == tree(workspace / "agents")
    with pytest.raises(FileExistsError, match="nothing was exported"):
        export_layout(tmp_path / "out")
    with pytest.raises(StoreConfigError, match="NBMEMORY_STORE"):
        import_layout(tmp_path / "out")
    assert cli.main(["export", "Nobody", "--layout", str(tmp_path / "other")]) == 1
    assert "no agent named 'Nobody'" in capsys.readouterr().err
    assert not (tmp_path / "other").exists()


def test_the_command_imports_in_a_real_process(tmp_path: Path, database: str):
    source = tmp_path / "swarms" / "agents" / "SwarmsAgent"
    source.mkdir(parents=True)
    shutil.copy(FIXTURES / "swarms_16_memory.md", source / "MEMORY.md")
    done = run_python(
        "from nbmemory.cli import main; raise SystemExit(main())",
        "--store",
        database,
        "import",
        str(tmp_path / "swarms"),
    )
    assert "imported 1 agent(s)" in done.stdout and "SwarmsAgent" in done.stdout
    assert (
        store.read(tmp_path / "x" / "agents" / "SwarmsAgent" / "MEMORY.md")
        == (FIXTURES / "swarms_16_memory.md").read_bytes()
    )
