"""Archive names: each compaction's archive sorts after the ones before it."""

from nbmemory.store.archives import archive_sort_key


def test_archives_sort_by_time_then_number(tmp_path):
    names = [
        "history_2026-04-20_14-30-45_10.md",
        "history_2026-04-20_14-30-45_2.md",
        "history_2026-04-20_14-30-45.md",
        "history_2026-04-19_09-00-00.md",
    ]
    ordered = sorted((tmp_path / n for n in names), key=archive_sort_key)
    assert [p.name for p in ordered] == [names[3], names[2], names[1], names[0]]
