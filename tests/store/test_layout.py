"""The folder layout as the way in and out of a database: lossless both ways."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from pg_server import new_database

from nbmemory import Agent, Conversation, Workspace, cli
from nbmemory.errors import MemoryWarning, StoreConfigError, StoreError
from nbmemory.store import memory_path
from nbmemory.store.folders import COUNTS_FILE, RECALL_INDEX_DIR
from nbmemory.store.layout import export_layout, import_layout
from nbmemory.store.workspace import database_at
from nbmemory.views.read_model import ReadModel
from support import FIXTURES, agent_docs, run_python, stored


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
    monkeypatch.delenv("NBMEMORY_STORE", raising=False)
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
        on_database = ReadModel(Workspace(tmp_path / "unused", second)).agent("Scout")
    finally:
        for url in (first, second):
            database_at(url).close()
    original = tree(files / "agents")
    assert "Scout/.token-counts.json" in original  # a cache of one store: not carried over
    original = {path: data for path, data in original.items() if not path.endswith(COUNTS_FILE)}
    assert any(f"/{RECALL_INDEX_DIR}/" in path for path in original)  # recall's: rebuilt
    original = {path: data for path, data in original.items() if RECALL_INDEX_DIR not in path}
    assert tree(tmp_path / "a" / "agents") == original
    assert tree(tmp_path / "b" / "agents") == original
    assert {p.split("/")[0] for p in original} == {"Scout", "SwarmsAgent"}
    assert any(p.startswith("Scout/archive/") and p.endswith(".json") for p in original)
    assert "Scout/NOTES.md" in original and "Scout/settings.json" in original
    assert on_database.messages == ReadModel(files).agent("Scout").messages
    assert not (tmp_path / "unused").exists()


def test_import_loads_nothing_if_one_agent_is_there_already(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, database: str
):
    source = tmp_path / "source" / "agents"
    for name in ("Alpha", "Beta"):
        (source / name).mkdir(parents=True)
        shutil.copy(FIXTURES / "spec_memory.md", source / name / "MEMORY.md")
    import_layout(tmp_path / "source", Workspace.from_env())
    shutil.rmtree(source / "Alpha")
    (source / "Gamma").mkdir()
    shutil.copy(FIXTURES / "spec_memory.md", source / "Gamma" / "MEMORY.md")
    with pytest.raises(StoreError, match="already has Beta: nothing was imported"):
        import_layout(tmp_path / "source", Workspace.from_env())
    assert Workspace.from_env().agents() == ["Alpha", "Beta"]


def test_export_never_overwrites_and_import_needs_a_database(
    tmp_path: Path, capsys: pytest.CaptureFixture
):
    Conversation(name="Scout", memory_md_path=memory_path("Scout")).add("User", "hi")
    agent_docs("Scout").write("NOTES.md", "1. kept\n")
    assert export_layout(tmp_path / "out", Workspace.from_env()) == ["Scout"]  # from files, too
    exported = {"Scout/MEMORY.md": stored("Scout"), "Scout/NOTES.md": b"1. kept\n"}
    assert tree(tmp_path / "out" / "agents") == exported
    assert export_layout(tmp_path / "out", Workspace.from_env()) == [
        "Scout"
    ]  # the same files: already done
    agent_docs("Scout").write("NOTES.md", "1. changed since\n")
    with pytest.raises(FileExistsError, match="already has Scout with other files"):
        export_layout(tmp_path / "out", Workspace.from_env())
    assert tree(tmp_path / "out" / "agents") == exported
    with pytest.raises(StoreConfigError, match="NBMEMORY_STORE"):
        import_layout(tmp_path / "out", Workspace(tmp_path / "on_files"))
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
    assert "imported 1 agent into" in done.stdout and "SwarmsAgent" in done.stdout
    assert (
        Workspace("x", database).agent("SwarmsAgent").read("MEMORY.md")
        == (FIXTURES / "swarms_16_memory.md").read_bytes()
    )


def plant(url: str, agent: str, rows: dict[str, bytes]) -> None:
    """Rows written straight into the tables, as anyone holding the team's URL could."""
    import psycopg

    with psycopg.connect(url) as conn:
        conn.execute(
            "INSERT INTO nbmemory_agents (name, version) VALUES (%s, 1) ON CONFLICT DO NOTHING",
            (agent,),
        )
        conn.execute(
            "INSERT INTO nbmemory_memory (agent, seq, data) VALUES (%s, 0, %s) "
            "ON CONFLICT DO NOTHING",
            (agent, b"# Memory\n"),
        )
        for doc, data in rows.items():
            conn.execute(
                "INSERT INTO nbmemory_documents (agent, name, data, version) "
                "VALUES (%s, %s, %s, 1)",
                (agent, doc, data),
            )


def every_file(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def test_hostile_document_names_never_leave_the_export_folder(
    tmp_path: Path, database: str, capsys: pytest.CaptureFixture
):
    Agent(agent_name="Scout", model_name="nbmemory/offline", persistent_memory=True).run("hi")
    outside = tmp_path / "victim"
    hostile = {
        "archive/../../../../victim/startup/00-evil.py": b"evil",
        str(outside / "absolute.py"): b"evil",
        "quarantine/../../../victim/q.py": b"evil",
        "../victim.md": b"evil",
        "archive//double.md": b"evil",
        "./NOTES.md": b"evil",
        "archive/\x1b]0;title\x07.md": b"evil",
        "archive\\..\\..\\win.md": b"evil",
        "NOTES.md": b"1. kept\n",
    }
    plant(database, "Scout", hostile)
    before = every_file(tmp_path)
    assert cli.main(["export", "--layout", str(tmp_path / "out")]) == 0
    written = every_file(tmp_path) - before
    assert all(path.startswith("out/agents/Scout/") for path in written), written
    assert "out/agents/Scout/NOTES.md" in written
    assert (tmp_path / "out" / "agents" / "Scout" / "NOTES.md").read_bytes() == b"1. kept\n"
    assert not outside.exists()
    messages = capsys.readouterr().err.splitlines()  # one line a skipped document, escaped
    assert len(messages) == len(hostile) - 1
    assert all(m.startswith("nbmemory: warning: ") and "skipped" in m for m in messages)
    assert all("\x1b" not in m and "\x07" not in m for m in messages)
    assert any("\\x1b]0;title" in m for m in messages)


def test_a_bad_agent_row_is_skipped_and_the_others_are_exported(tmp_path: Path, database: str):
    for name in ("Alpha", "Beta"):
        Agent(agent_name=name, model_name="nbmemory/offline", persistent_memory=True).run("hi")
    for bad in ("../../escape", "/abs", "ctl\x1bname", ".."):
        plant(database, bad, {"archive/history_1.md": b"x"})
    with pytest.warns(MemoryWarning, match="not exported") as warned:
        assert export_layout(tmp_path / "out", Workspace.from_env()) == ["Alpha", "Beta"]
    assert len(warned) == 4
    assert sorted(os.listdir(tmp_path / "out" / "agents")) == ["Alpha", "Beta"]
    assert sorted(os.listdir(tmp_path)) == ["cwd", "out"]


@pytest.mark.parametrize("planted", ["agents", "agents/Scout", "agents/Scout/archive"])
def test_export_follows_no_link_planted_in_the_target(
    tmp_path: Path, workspace: Path, planted: str, capsys: pytest.CaptureFixture
):
    agent = Agent(agent_name="Scout", model_name="nbmemory/offline", persistent_memory=True)
    agent.run("hi")
    agent.short_memory.compact("By hand: we said hello.")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = tmp_path / "out" / planted
    link.parent.mkdir(parents=True)
    link.symlink_to(elsewhere, target_is_directory=True)
    assert cli.main(["export", "--layout", str(tmp_path / "out")]) == 2
    assert "link" in capsys.readouterr().err
    assert list(elsewhere.iterdir()) == []


def test_an_interrupted_export_says_what_it_wrote_and_a_rerun_finishes_it(tmp_path: Path):
    names = ("Alpha", "Beta", "Gamma")
    for name, size in zip(names, (10, 200_000, 10), strict=True):
        Conversation(name=name, memory_md_path=memory_path(name)).add("User", "x" * size)
    limited = run_python(
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))\n"
        "from nbmemory.cli import main; sys.exit(main())",
        "export",
        "--layout",
        str(tmp_path / "out"),
        check=False,
    )
    assert limited.returncode == 2
    assert "export stopped at Beta" in limited.stderr
    assert "Complete in" in limited.stderr and ": Alpha; run the same export again" in (
        limited.stderr
    )
    assert sorted(os.listdir(tmp_path / "out" / "agents")) == [".partial-export", "Alpha"]
    assert export_layout(tmp_path / "out", Workspace.from_env()) == ["Alpha", "Beta", "Gamma"]
    assert tree(tmp_path / "out" / "agents") == {f"{n}/MEMORY.md": stored(n) for n in names}
    assert sorted(os.listdir(tmp_path / "out" / "agents")) == list(names)


def test_import_skips_files_whose_names_could_not_be_exported_again(tmp_path: Path, database: str):
    folder = tmp_path / "source" / "agents" / "Scout"
    (folder / "archive").mkdir(parents=True)
    shutil.copy(FIXTURES / "spec_memory.md", folder / "MEMORY.md")
    (folder / "archive" / "bell\x07.md").write_bytes(b"x")
    (tmp_path / "source" / "agents" / "bad\x1bname").mkdir()
    with pytest.warns(MemoryWarning) as warned:
        assert import_layout(tmp_path / "source", Workspace.from_env()) == ["Scout"]
    assert all("\x07" not in str(w.message) and "\x1b" not in str(w.message) for w in warned)
    assert len(warned) == 2
    assert database_at(database).documents("Scout") == []


def test_import_skips_an_agent_over_the_size_limit_and_streams_the_others(
    tmp_path: Path, database: str, monkeypatch: pytest.MonkeyPatch
):
    from nbmemory.store import layout
    from nbmemory.store.memory_format import format_block, format_header

    source = tmp_path / "source" / "agents"
    for name, size in (("Big", 5_000), ("Small", 100), ("Huge", 50)):
        (source / name / "archive").mkdir(parents=True)
        text = format_header(name) + format_block("User", "é" * (size // 2), "2026-05-01T10:00:00")
        (source / name / "MEMORY.md").write_text(text, encoding="utf-8")
    (source / "Huge" / "archive" / "history_1.md").write_bytes(b"x" * 4_000)
    with pytest.warns(MemoryWarning) as warned:
        assert import_layout(tmp_path / "source", Workspace.from_env(), max_bytes=3_000) == [
            "Small"
        ]
    assert sorted(str(w.message).split("'")[1] for w in warned) == ["Big", "Huge"]
    assert all("over the limit of 3,000" in str(w.message) for w in warned)
    monkeypatch.setattr(layout, "PIECE_BYTES", 999)  # an odd size: pieces split characters
    assert cli.main(["import", str(tmp_path / "source"), "--max-document-mb", "1"]) == 2
    moved = tmp_path / "moved" / "agents"
    shutil.copytree(source / "Big", moved / "Big")
    assert cli.main(["import", str(moved.parent), "--max-document-mb", "0.01"]) == 0
    db = database_at(database)
    assert db.memory("Big") == (source / "Big" / "MEMORY.md").read_bytes()
    with db.statement("count") as conn:
        rows = conn.execute("SELECT count(*) FROM nbmemory_memory WHERE agent = 'Big'").fetchone()
    assert rows[0] == -(-(source / "Big" / "MEMORY.md").stat().st_size // 999)
    agent = Agent(agent_name="Big", model_name="nbmemory/offline", persistent_memory=True)
    agent.short_memory.add("User", "appended after the import")
    assert ReadModel().agent("Big").messages == 2 and db.memory("Big").endswith(
        b"appended after the import\n\n---\n\n"
    )
