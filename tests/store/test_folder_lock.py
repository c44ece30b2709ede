"""The folder lock: where ``flock`` is missing, the portable lock keeps writers in turn too."""

from nbmemory.store import folder_lock
from nbmemory.store.memory_file import MemoryFile
from nbmemory.store.memory_format import format_block


def test_the_portable_lock_works_too(tmp_path, monkeypatch):
    monkeypatch.setattr(folder_lock, "fcntl", None)
    memory = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    memory.append(format_block("User", "one", "t"))
    memory.compact(format_block("System", "two", "t"))
    assert [m["content"] for m in memory.read().messages] == ["two"]
