"""The record kept beside an archive: what a compaction did and what its summary left out."""

import stat

from nbmemory.memory.compactions import Compaction, read_record, record_path, write_record
from nbmemory.store.docs import FileDocs


def test_a_record_is_kept_beside_its_archive_and_read_back(tmp_path):
    archive = tmp_path / "history_2026-04-20_14-30-45.md"
    archive.write_text("transcript")
    compaction = Compaction(archive, 2900, 900, kept_messages=2, missing=["BLUEFIN-7", "Lyon"])
    path = write_record(FileDocs(tmp_path), archive, compaction)
    assert path == record_path(archive) == tmp_path / "history_2026-04-20_14-30-45.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_record(FileDocs(tmp_path), archive) == compaction


def test_no_record_or_a_damaged_one_reads_as_none(tmp_path):
    archive = tmp_path / "history_x.md"
    assert read_record(FileDocs(tmp_path), archive) is None
    record_path(archive).write_text("{not json")
    assert read_record(FileDocs(tmp_path), archive) is None
