"""Whole-file writes: the old file or the new one, never a part, never a stray temp file."""

import stat

import pytest

from nbmemory.store.atomic import write_atomic


def test_it_replaces_the_file_privately(tmp_path):
    tmp_path = tmp_path / "folder"
    tmp_path.mkdir()
    target = tmp_path / "notes.md"
    target.write_text("old")
    write_atomic(target, "new ✓")
    assert target.read_text(encoding="utf-8") == "new ✓"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["notes.md"]


def test_a_failed_write_leaves_the_old_file_and_no_temp(tmp_path):
    tmp_path = tmp_path / "folder"
    tmp_path.mkdir()
    target = tmp_path / "notes.md"
    target.write_text("old")
    (tmp_path / "sub").mkdir()
    with pytest.raises(IsADirectoryError):
        write_atomic(tmp_path / "sub", b"cannot replace a folder with a file")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.md", "sub"]
