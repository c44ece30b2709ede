from pathlib import Path

import pytest

from nbmemory import Conversation, InvalidAgentNameError, list_agents, workspace_dir
from nbmemory.errors import InvalidDocumentNameError
from nbmemory.store import agent_dir, memory_path
from nbmemory.store.folders import as_path, validate_agent_name, validate_document_name

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
    "bad\udcff": "lone surrogate",
}


def test_a_path_is_passed_on_as_it_is_and_a_name_made_a_path(tmp_path):
    assert as_path(tmp_path) is tmp_path
    assert as_path(str(tmp_path)) == tmp_path


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


@pytest.mark.parametrize("doc", ["MEMORY.md", "archive/history_2026.md", "a/b/c.json", "é..md"])
def test_document_names_inside_the_folder_are_accepted(doc):
    assert validate_document_name(doc) == doc


@pytest.mark.parametrize(
    "doc",
    ["", "/etc/passwd", "archive/../../x", "..", "./x", "a//b", "a/", "a\\b", "a\x00b", "t\x1b"],
)
def test_document_names_that_could_leave_the_folder_are_refused(doc):
    with pytest.raises(InvalidDocumentNameError):
        validate_document_name(doc)


def test_a_name_must_be_a_string():
    with pytest.raises(InvalidAgentNameError, match="string"):
        validate_agent_name(None)


@pytest.mark.files("agents as folders that hold a MEMORY.md, beside a stray folder and file")
def test_list_agents_names_the_folders_that_hold_a_memory(workspace):
    for name in ["beta", "alpha"]:
        Conversation(name=name, memory_md_path=memory_path(name))
    (workspace / "agents" / "empty-folder").mkdir()
    (workspace / "agents" / "stray-file").write_text("not an agent")
    assert list_agents() == ["alpha", "beta"]
    assert list_agents(workspace) == ["alpha", "beta"]


def test_list_agents_of_a_missing_workspace_is_empty(tmp_path):
    assert list_agents(tmp_path / "nowhere") == []


@pytest.mark.files("the modes of an agent's folder and MEMORY.md")
def test_agent_folders_and_files_are_private(workspace):
    Conversation(name="Scout", memory_md_path=memory_path("Scout")).add("User", "hi")
    folder = workspace / "agents" / "Scout"
    assert folder.stat().st_mode & 0o777 == 0o700
    assert (folder / "MEMORY.md").stat().st_mode & 0o777 == 0o600


SECRET = "zebra-7731"
PLANTED = {
    "the agent folder": ("agents/Spy", "dir"),
    "agents/": ("agents", "workspace"),
    "MEMORY.md": ("agents/Spy/MEMORY.md", "file"),
    "archive/": ("agents/Spy/archive", "archive dir"),
    "an archive": ("agents/Spy/archive/history_2026-01-01_00-00-00.md", "file"),
    "NOTES.md": ("agents/Spy/NOTES.md", "file"),
    "settings.json": ("agents/Spy/settings.json", "settings"),
}


def outside_tree(root: Path) -> Path:
    """Files outside the workspace that a planted link points at, each holding the secret."""
    block = f"### User — 2026-01-01T00:00:00\n\n{SECRET}\n\n---\n\n"
    (root / "dir" / "archive").mkdir(parents=True)
    (root / "dir" / "MEMORY.md").write_text(block)
    (root / "dir" / "NOTES.md").write_text(f"- {SECRET}\n")
    (root / "dir" / "archive" / "history_2026-01-01_00-00-00.md").write_text(block)
    (root / "archive dir").mkdir()
    (root / "archive dir" / "history_2026-01-01_00-00-00.md").write_text(block)
    (root / "workspace" / "agents" / "Spy").mkdir(parents=True)
    (root / "workspace" / "agents" / "Spy" / "MEMORY.md").write_text(block)
    (root / "file").write_text(block)
    (root / "settings").write_text(f'{{"model": "{SECRET}"}}')
    return root


@pytest.mark.files("links planted in the workspace folder")
@pytest.mark.parametrize("planted", PLANTED)
def test_a_planted_link_is_never_followed_out_of_the_workspace(
    workspace, tmp_path, capsys, planted
):
    from nbmemory import Agent
    from nbmemory.cli import main
    from nbmemory.errors import NbmemoryError
    from nbmemory.views.read_model import ReadModel
    from support import snapshot

    outside = outside_tree(tmp_path / "outside")
    mine = Conversation(name="Spy", memory_md_path=memory_path("Spy"))
    mine.add("User", "hello")
    mine.compact("greetings")
    where, target = PLANTED[planted]
    link = workspace / where
    if link.is_dir():
        import shutil

        shutil.rmtree(link)
    else:
        link.unlink(missing_ok=True)
    link.symlink_to(outside / target)
    before = snapshot(outside)
    seen = []

    def attempt(action):
        try:
            seen.append(repr(action()))
        except (NbmemoryError, OSError) as exc:
            seen.append(str(exc))

    reader = ReadModel()
    attempt(reader.names)
    attempt(lambda: reader.agents())
    attempt(lambda: reader.messages("Spy"))
    attempt(lambda: reader.archives("Spy"))
    attempt(lambda: reader.search("Spy", "zebra", archives=True))
    attempt(lambda: reader.notes("Spy"))
    attempt(lambda: reader.usage("Spy"))
    commands = [["ls"], ["show", "Spy"], ["search", "zebra", "--archives"], ["notes", "Spy"]]
    commands += [["export", "Spy"], ["tokens", "Spy"]]
    for argv in commands:
        attempt(lambda argv=argv: main(argv))
    agents = []
    attempt(lambda: agents.append(Agent(agent_name="Spy", persistent_memory=True)))
    if agents:
        agent = agents[0]
        attempt(lambda: agent.run("What is zebra?"))
        attempt(lambda: agent.request_messages())
        attempt(lambda: agent.short_memory.compact("summary"))
        attempt(lambda: agent.notes.add("pinned"))
    attempt(lambda: Conversation(name="Spy", memory_md_path=memory_path("Spy")).add("User", "x"))
    assert snapshot(outside) == before, "something outside the workspace was written"
    printed = capsys.readouterr()
    shown = "\n".join([*seen, printed.out, printed.err])
    assert "7731" not in shown


UMASK_ZERO = """
import os, sys
os.umask(0)
from nbmemory import Agent
from nbmemory.cli import main
agent = Agent(agent_name="Open", persistent_memory=True)
agent.run("Remember: the door code is 1234.")
main(["notes", "Open", "--accept", "1"])
agent.short_memory.compact("a summary")
main(["export", "Open", "--format", "json", "-o", sys.argv[1]])
agent.short_memory.save_filepath = sys.argv[2]
agent.short_memory.save_as_json()
"""


def run_with_umask_zero(tmp_path: Path) -> tuple[Path, Path]:
    """Run an agent, export and save it in a process whose umask is 0: the two files made."""
    import os
    import subprocess
    import sys

    from support import ROOT

    exported, saved = tmp_path / "out" / "open.json", tmp_path / "new" / "saved.json"
    exported.parent.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run(
        [sys.executable, "-c", UMASK_ZERO, str(exported), str(saved)], env=env, check=True
    )
    return exported, saved


def modes(paths: list[Path]) -> dict[str, int]:
    import stat

    return {str(p): stat.S_IMODE(p.lstat().st_mode) for p in paths}


def test_exports_and_saves_are_private_whatever_the_umask(tmp_path):
    exported, saved = run_with_umask_zero(tmp_path)
    assert modes([exported, saved.parent, saved]) == {
        str(exported): 0o600,
        str(saved.parent): 0o700,
        str(saved): 0o600,
    }


@pytest.mark.files("the modes of the workspace's folders and files")
def test_everything_created_is_private_whatever_the_umask(workspace, tmp_path):
    run_with_umask_zero(tmp_path)
    made = modes([workspace, *workspace.rglob("*")])
    assert {p: m for p, m in made.items() if m not in (0o700, 0o600)} == {}
    assert made[str(workspace / "agents" / "Open" / "NOTES.md")] == 0o600


@pytest.mark.files("file descriptors")
def test_an_interrupt_anywhere_in_an_open_leaves_no_descriptor_open(tmp_path):
    """The descriptors of ``open_folder``, ``open_regular`` and ``open_reader`` are held, from
    the system call on, by what closes them: Ctrl-C at any point leaves none open."""
    import contextlib
    import gc
    import itertools
    import os

    from interrupting import Interrupter

    from nbmemory.store.folders import open_folder, open_reader, open_regular

    folder = tmp_path / "agents" / "Scout"
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_bytes(b"# Scout\n")

    def read_both() -> bytes:
        into: list[int] = []  # one descriptor a list: a loop closing two has a point between
        try:
            fd = open_folder(folder, into=into, create=False)
            opened: list[int] = []
            try:
                os.read(open_regular("MEMORY.md", into=opened, dir_fd=fd), 10)
            finally:
                for held in opened:
                    os.close(held)
        finally:
            for held in into:
                os.close(held)
        with open_reader(folder / "MEMORY.md") as file:
            return file.read()

    def open_here() -> list[str]:
        links = []
        for fd in os.listdir("/proc/self/fd"):
            with contextlib.suppress(OSError):  # the listing's own descriptor, gone now
                links.append(os.readlink(f"/proc/self/fd/{fd}"))
        return [link for link in links if link.startswith(str(tmp_path))]

    for n in itertools.count(1):
        interrupter = Interrupter(n)
        gc.disable()  # else a collection's callbacks (hypothesis has one) count as points
        try:
            with interrupter:
                read_both()
        except KeyboardInterrupt:
            pass  # what was dropped is closed once the traceback goes, after this block
        else:
            break
        finally:
            gc.enable()
        assert open_here() == [], f"interrupted at point {n}: {interrupter.where}"
    assert n > 20  # every point of the three was tried
