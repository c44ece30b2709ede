import os
import shutil
import sys

import pytest

from nbmemory.store.link_watch import link_watch

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="inotify is Linux's")


@pytest.fixture
def watched(tmp_path):
    """A file kept open and watched, and the watch, its first answer read."""
    watch = link_watch()
    assert watch is not None
    path = tmp_path / "folder" / "MEMORY.md"
    path.parent.mkdir()
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND)
    wd = watch.watch(fd)
    assert wd is not None
    watch.settled_changes()
    yield path, fd, watch
    watch.unwatch(wd)
    os.close(fd)


def test_writes_leave_the_answer_as_it_was(watched):
    _, fd, watch = watched
    before = watch.settled_changes()
    os.write(fd, b"a block\n")
    os.pwrite(fd, b"A", 0)
    assert watch.changes() == before


def rename_over(path):
    path.with_name("new").write_text("new")
    os.replace(path.with_name("new"), path)


@pytest.mark.parametrize(
    "unlink",
    [os.unlink, rename_over, lambda path: shutil.rmtree(path.parent)],
    ids=["deleted", "replaced by a rename", "its folder deleted"],
)
def test_a_file_that_loses_its_name_changes_the_answer_once_the_call_returns(watched, unlink):
    path, fd, watch = watched
    before = watch.settled_changes()
    unlink(path)
    after = watch.changes()
    assert after != before
    assert watch.changes() == after  # read once: the events are gone, the answer stays
    assert os.fstat(fd).st_nlink == 0


def test_one_file_watched_twice_stays_watched_until_both_let_go(watched):
    path, _, watch = watched
    other = os.open(path, os.O_RDONLY)
    try:
        second = watch.watch(other)
        assert second is not None
        watch.unwatch(second)
        before = watch.settled_changes()
        os.unlink(path)
        assert watch.changes() != before
    finally:
        os.close(other)


def test_a_forked_child_asks_the_file_every_time_and_leaves_the_parent_its_events(watched):
    path, _, watch = watched
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its copy answers "ask" every time, and reads no event
        try:
            first, second = watch.settled_changes(), watch.changes()
            ours = link_watch()
            os.write(write, b"ok" if first != second and ours is not watch else b"no")
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 2) == b"ok"
    before = watch.settled_changes()
    os.unlink(path)
    assert watch.changes() != before
