from pathlib import Path

import pytest

from nbmemory import Conversation, InvalidAgentNameError, list_agents, workspace_dir
from nbmemory.workspace import agent_dir, memory_path, validate_agent_name

BAD_NAMES = {
    "": "empty",
    "   ": "empty",
    "a/b": "'/'",
    "a\\b": "'/'",
    "..": "'..'",
    "../escape": "'/'",
    "x..y": "'..'",
    ".": "'.'",
    "/etc/passwd": "'/'",
    "tab\there": "control characters",
    "new\nline": "control characters",
    "nul\x00": "control characters",
    "del\x7f": "control characters",
    "é" * 200: "255 bytes",
}


def test_workspace_is_read_from_the_environment_on_every_call(monkeypatch, tmp_path):
    monkeypatch.setenv("WORKSPACE_DIR", str(tmp_path / "one"))
    assert workspace_dir() == tmp_path / "one"
    monkeypatch.setenv("WORKSPACE_DIR", str(tmp_path / "two"))
    assert memory_path("Scout") == tmp_path / "two" / "agents" / "Scout" / "MEMORY.md"


def test_default_workspace_is_agent_workspace_in_the_current_folder(monkeypatch):
    monkeypatch.delenv("WORKSPACE_DIR")
    assert workspace_dir() == Path("agent_workspace")
    assert agent_dir("Scout") == Path("agent_workspace/agents/Scout")


@pytest.mark.parametrize("name", ["ResearchAgent", "swarm-worker-01", "agent.v2", "Ägent 7", "a b"])
def test_ordinary_names_are_accepted(name):
    assert validate_agent_name(name) == name


@pytest.mark.parametrize(("name", "rule"), BAD_NAMES.items())
def test_bad_names_are_refused_before_any_file_is_touched(name, rule, workspace):
    with pytest.raises(InvalidAgentNameError, match=rule) as raised:
        Conversation(name=name, memory_md_path=memory_path(name))
    assert isinstance(raised.value, ValueError)
    assert not workspace.exists()


def test_a_name_must_be_a_string():
    with pytest.raises(InvalidAgentNameError, match="string"):
        validate_agent_name(None)


def test_list_agents_names_the_folders_that_hold_a_memory(workspace):
    for name in ["beta", "alpha"]:
        Conversation(name=name, memory_md_path=memory_path(name))
    (workspace / "agents" / "empty-folder").mkdir()
    (workspace / "agents" / "stray-file").write_text("not an agent")
    assert list_agents() == ["alpha", "beta"]
    assert list_agents(workspace) == ["alpha", "beta"]


def test_list_agents_of_a_missing_workspace_is_empty(tmp_path):
    assert list_agents(tmp_path / "nowhere") == []


def test_agent_folders_and_files_are_private(workspace):
    Conversation(name="Scout", memory_md_path=memory_path("Scout")).add("User", "hi")
    folder = workspace / "agents" / "Scout"
    assert folder.stat().st_mode & 0o777 == 0o700
    assert (folder / "MEMORY.md").stat().st_mode & 0o777 == 0o600
