"""settings.json: what an agent last ran with, written atomically and read back safely."""

import stat

from nbmemory import Agent
from nbmemory.agent.compressor import ContextCompressor
from nbmemory.memory.run_settings import SETTINGS_FILE, RunSettings, read_settings, write_settings
from nbmemory.store.docs import FileDocs
from support import agent_docs


def test_written_privately_and_read_back(tmp_path):
    settings = RunSettings("gpt-4o", 128_000, 0.75, "o200k_base", 12, 4096)
    write_settings(FileDocs(tmp_path / "agent"), settings)
    path = tmp_path / "agent" / SETTINGS_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_settings(FileDocs(tmp_path / "agent")) == settings
    assert [p.name for p in (tmp_path / "agent").iterdir()] == [SETTINGS_FILE]  # no temp left


def test_a_missing_or_damaged_record_reads_as_none(tmp_path):
    assert read_settings(FileDocs(tmp_path)) is None
    (tmp_path / SETTINGS_FILE).write_text('{"model": "x"')
    assert read_settings(FileDocs(tmp_path)) is None
    (tmp_path / SETTINGS_FILE).write_text('{"model": "x"}')
    assert read_settings(FileDocs(tmp_path)) is None


def test_an_agent_records_what_it_runs_with(workspace):
    agent = Agent(agent_name="Rec", persistent_memory=True, context_length=3000)
    folder = agent_docs("Rec")
    assert read_settings(folder).context_length == 3000
    agent._context_compressor = ContextCompressor(threshold=0.75)
    agent.context_length = 5000
    agent.run("hello")
    recorded = read_settings(folder)
    assert (recorded.context_length, recorded.threshold) == (5000, 0.75)
    assert recorded == agent.run_settings()


def test_building_an_agent_on_a_recorded_memory_keeps_the_record(workspace):
    Agent(agent_name="Kept", persistent_memory=True, system_prompt="A long prompt. " * 20)
    first = read_settings(agent_docs("Kept"))
    Agent(agent_name="Kept", persistent_memory=True)  # e.g. a compaction from another view
    assert read_settings(agent_docs("Kept")) == first


def test_ephemeral_agents_record_nothing(workspace):
    Agent(agent_name="Air", persistent_memory=False).run("hello")
    assert not agent_docs("Air").folder.exists()
