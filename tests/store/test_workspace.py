"""Workspaces: a folder and a store, passed in; paths mapped to an agent's documents once."""

from __future__ import annotations

from pathlib import Path

import pytest

from nbmemory import Agent, Conversation, MemoryWarning, Workspace
from nbmemory.recall import recall
from nbmemory.store.docs import DatabaseDocs, FileDocs
from nbmemory.store.memory_format import parse
from nbmemory.store.workspace import database_at
from nbmemory.views.read_model import ReadModel


def test_a_workspace_on_files_maps_its_agents_paths_and_leaves_the_others_alone(tmp_path: Path):
    workspace = Workspace(tmp_path / "ws")
    scout = workspace.agent("Scout")
    assert scout == FileDocs(tmp_path / "ws" / "agents" / "Scout")
    assert workspace.memory_path("Scout") == tmp_path / "ws" / "agents" / "Scout" / "MEMORY.md"
    archive = scout.folder / "archive" / "history_1.md"
    assert workspace.locate(archive) == (scout, "archive/history_1.md")
    loose = tmp_path / "elsewhere" / "notes.md"
    assert workspace.locate(loose) == (FileDocs(loose.parent), "notes.md")
    assert workspace.describe() == "files" and workspace.agents() == []
    scout.write("NOTES.md", "# Pinned notes\n\n- kept\n")
    assert (scout.folder / "NOTES.md").read_text() == "# Pinned notes\n\n- kept\n"


def test_from_env_reads_the_folder_and_the_store_of_the_environment(tmp_path: Path):
    found = Workspace.from_env(environ={"WORKSPACE_DIR": str(tmp_path)})
    assert (found.root, found.database) == (tmp_path, None)
    assert Workspace.from_env(environ={}).root == Path("agent_workspace")
    assert Workspace.from_env(tmp_path / "given", environ={"WORKSPACE_DIR": "x"}).root == (
        tmp_path / "given"
    )


def test_two_workspaces_one_on_files_one_on_a_database_in_one_process(
    tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("WORKSPACE_DIR")
    on_files = Workspace(tmp_path / "files")
    on_database = Workspace(tmp_path / "team", database_url)
    try:
        for workspace, fact in ((on_files, "Lyon"), (on_database, "Porto")):
            agent = Agent(
                agent_name="Scout",
                model_name="nbmemory/offline",
                persistent_memory=True,
                workspace=workspace,
            )
            agent.notes.add(f"The depot is in {fact}.")
            agent.run(f"The depot is in {fact} now.")
            agent.short_memory.compact(f"The depot is in {fact}.")
            agent.run("Where is the depot?")
        files_view, database_view = ReadModel(on_files), ReadModel(on_database)
        assert files_view.notes("Scout") == ["The depot is in Lyon."]
        assert database_view.notes("Scout") == ["The depot is in Porto."]
        assert len(files_view.archives("Scout")) == len(database_view.archives("Scout")) == 1
        assert "Lyon" in recall(on_files.agent("Scout"), "depot")[0].text
        assert "Porto" in recall(on_database.agent("Scout"), "depot")[0].text
        on_disk = parse(on_files.memory_path("Scout").read_bytes()).messages
        assert on_disk[0]["content"] == "The depot is in Lyon."
        assert database_view.store.startswith("postgresql://") and files_view.store == "files"
        assert not (tmp_path / "team").exists()  # the database workspace wrote no file
        assert on_database.agents() == on_files.agents() == ["Scout"]
    finally:
        database_at(database_url).close()


def test_a_path_shaped_like_an_agent_folder_outside_the_workspace_is_a_file(
    tmp_path: Path, database: str
):
    path = tmp_path / "elsewhere" / "agents" / "Loose" / "MEMORY.md"
    with pytest.warns(MemoryWarning, match="kept as a file, not in the database"):
        convo = Conversation(name="Loose", memory_md_path=path)
    convo.add("User", "on disk")
    assert parse(path.read_bytes()).messages[0]["content"] == "on disk"
    assert Workspace.from_env().agents() == []


def test_an_agent_keeps_the_store_it_was_built_on_whatever_the_environment_says_later(
    tmp_path: Path, database: str, monkeypatch: pytest.MonkeyPatch
):
    convo = Conversation(name="Shared", memory_md_path=Workspace.from_env().memory_path("Shared"))
    assert isinstance(convo.docs, DatabaseDocs)
    monkeypatch.delenv("NBMEMORY_STORE")
    convo.add("User", "still on the database")
    convo.compact("a summary")
    assert not (tmp_path / "workspace").exists()
    reader = ReadModel(Workspace(tmp_path / "workspace", database))
    assert [c.summary for c in reader.compactions("Shared")] == ["a summary"]
    assert reader.agent("Shared").messages == 1


@pytest.mark.parametrize("store", ["files", "database"])
def test_agents_named_like_the_layouts_folders_keep_their_own_documents(
    store: str, tmp_path: Path, request: pytest.FixtureRequest
):
    url = request.getfixturevalue("database_url") if store == "database" else None
    workspace = Workspace(tmp_path / "ws", url)
    try:
        for name in ("agents", "archive", "quarantine"):
            convo = Conversation(
                name=name, memory_md_path=workspace.memory_path(name), workspace=workspace
            )
            convo.add("User", f"The code word of {name} is KESTREL.")
            convo.compact(f"summary of {name}")
        reader = ReadModel(workspace)
        for name in ("agents", "archive", "quarantine"):
            [compaction] = reader.compactions(name)
            assert compaction.summary == f"summary of {name}"
            passages = recall(workspace.agent(name), "KESTREL code word")
            assert passages[0].text == f"The code word of {name} is KESTREL."
            assert all(name in passage.text for passage in passages)  # its own words only
    finally:
        if url:
            database_at(url).close()
