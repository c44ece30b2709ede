"""The ``nbmemory`` command on a prepared workspace, run as a shell user would."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from nbmemory import Agent, Conversation, Workspace
from nbmemory.cli import main
from nbmemory.memory.notes import Notes
from nbmemory.memory.provenance import Provenance
from nbmemory.models.llm import OFFLINE_MODEL
from nbmemory.store import memory_path
from nbmemory.store.memory_format import parse
from nbmemory.store.postgresql import PgStore
from nbmemory.store.workspace import database_at
from nbmemory.views.read_model import ReadModel
from support import (
    REFUSED_STORES,
    ROOT,
    UNREACHABLE_STORES,
    agent_docs,
    hostile_names,
    leaks,
    plant_agent,
    stored,
    stored_messages,
)


@pytest.fixture
def prepared(workspace):
    scout = Conversation(name="Scout", memory_md_path=memory_path("Scout"))
    scout.add("User", "The budget is 40k EUR.")
    scout.add("Scout", "Noted: 40k EUR.")
    scout.compact("Budget agreed at 40k EUR.")
    scout.add("User", "The deadline is in May.")
    writer = Conversation(name="Writer", memory_md_path=memory_path("Writer"))
    writer.add("User", "Draft the launch memo.")
    return workspace


def nbmemory(*args, workspace=None):
    options = ["--workspace", str(workspace)] if workspace else []
    return subprocess.run(
        [sys.executable, "-m", "nbmemory", *options, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )


def test_ls_lists_the_agents(prepared):
    result = nbmemory("ls")
    assert result.returncode == 0
    header, *rows = result.stdout.splitlines()
    assert header.split()[:3] == ["agent", "messages", "tokens"]
    assert [[*row.split()[:2], row.split()[5]] for row in rows[:2]] == [
        ["Scout", "2", "1"],
        ["Writer", "1", "0"],
    ]
    assert rows[0].split()[3:5] == ["16,000*", "90%"]  # no agent ran: the defaults, marked
    assert rows[2] == "* default settings: the agent has not run here yet"


def test_ls_leaves_out_a_bad_stored_name_with_one_line_and_lists_the_others(on_store, prepared):
    bad = hostile_names(on_store)
    for name in bad:
        plant_agent(name)
    result = nbmemory("ls")
    assert result.returncode == 0
    assert [row.split()[0] for row in result.stdout.splitlines()[1:3]] == ["Scout", "Writer"]
    assert result.stderr.count("left out") == len(bad)
    assert "'esc\\x1b]0;title\\x07' left out" in result.stderr
    assert not any(c in result.stderr for c in "\x07\x1b\x85")


def test_show_names_the_notebook_cell_of_each_message():
    convo = Conversation(name="Noted", memory_md_path=memory_path("Noted"))
    for count in (12, 15):
        convo.provenance = Provenance("reports/analysis.ipynb", "cell-a", count, "kernel-1")
        convo.add("User", f"run {count}")
    convo.provenance = None
    convo.add("User", "typed in Python")
    heads = [line for line in nbmemory("show", "Noted").stdout.splitlines() if line[:3] == "---"]
    assert [head.split(" · ")[3:] for head in heads] == [
        ["cell [12] of analysis.ipynb, superseded by cell [15]"],
        ["cell [15] of analysis.ipynb"],
        [],
    ]


def test_show_prints_the_memory_and_archives(prepared):
    shown = nbmemory("show", "Scout").stdout
    assert shown.startswith("Scout: 2 messages")
    assert "Budget agreed at 40k EUR." in shown and "The deadline is in May." in shown
    assert nbmemory("show", "Scout", "--last", "1").stdout.startswith("Scout: 1 message\n")
    [archive] = [path.name for path in agent_docs("Scout").archives()]
    assert "Noted: 40k EUR." in nbmemory("show", "Scout", "--archive", archive).stdout


def test_search_across_agents_and_archives(prepared):
    lines = nbmemory("search", "40K").stdout.splitlines()
    assert [line.split("\t")[:2] for line in lines] == [["Scout", "MEMORY.md"]]
    lines = nbmemory("search", "40k", "--archives", "--agent", "Scout").stdout.splitlines()
    assert [line.split("\t")[1].startswith("history_") for line in lines] == [True, True, False]
    assert nbmemory("search", "launch").stdout.split("\t")[0] == "Writer"


@pytest.mark.parametrize(("form", "load"), [("json", json.loads), ("yaml", yaml.safe_load)])
def test_export_loads_back(prepared, tmp_path, form, load):
    messages = load(nbmemory("export", "Scout", "--format", form).stdout)
    assert [m["content"] for m in messages][1] == "The deadline is in May."
    target = tmp_path / f"scout.{form}"
    assert nbmemory("export", "Scout", "--format", form, "-o", str(target)).returncode == 0
    convo = Conversation()
    convo.load(target)
    assert convo.to_dict()[1]["content"] == "The deadline is in May."


def test_export_as_markdown_is_a_memory_file(prepared):
    text = nbmemory("export", "Writer").stdout
    assert [m["content"] for m in parse(text).messages] == ["Draft the launch memo."]


def test_compact_tokens_and_path(prepared):
    result = nbmemory("compact", "Writer", "--summary", "Memo drafted.")
    assert result.returncode == 0 and "raw transcript archived to" in result.stdout
    assert [m["content"] for m in stored_messages("Writer")] == [
        "Memo drafted."  # stored as given, as the spec's compact() does
    ]
    tokens = nbmemory("tokens", "Scout").stdout
    assert tokens.startswith("Scout: ") and "of 16,000 tokens" in tokens
    assert "2 messages in MEMORY.md, 2 in 1 archive" in tokens
    usage = ReadModel(prepared).usage("Scout")
    parts = dict(usage.parts)
    assert f"earlier sessions {parts['earlier sessions']:,} + reply room" in tokens
    assert sum(parts.values()) == usage.tokens


@pytest.mark.files("a memory in a database has no path: the database test checks it refuses")
def test_path_prints_the_memory_file(prepared):
    assert nbmemory("path", "Scout").stdout.strip() == str(memory_path("Scout"))


@pytest.mark.files("on a database the store, not the workspace folder, holds the agents")
def test_the_workspace_option_wins_over_the_environment(prepared, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    Conversation(name="Far", memory_md_path=memory_path("Far", elsewhere)).add("User", "hi")
    assert nbmemory("ls", workspace=elsewhere).stdout.splitlines()[1].split()[0] == "Far"


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["show", "Nobody"], 1, "no agent named 'Nobody'"),
        (["search", "zeppelin"], 1, "No results for “zeppelin” in MEMORY.md. Add --archives"),
        (["path", "../etc"], 2, "must not contain '/'"),
        (["compact", "Scout", "--summary", " "], 2, "--summary must not be empty"),
        (["export", "Scout", "--format", "pdf"], 2, "invalid choice: 'pdf'"),
        (["show", "Scout", "--archive", "history_x.md"], 1, "no archive named 'history_x.md'"),
    ],
)
def test_errors_are_one_line_with_the_usual_exit_codes(prepared, args, code, message):
    result = nbmemory(*args)
    assert result.returncode == code
    assert message in result.stderr
    assert result.stdout == ""


def test_jupyter_nbmemory_is_the_nbmemory_command(prepared):
    """``jupyter nbmemory ...`` runs the ``jupyter-nbmemory`` command: the same program."""
    bin = Path(sys.executable).parent
    env = {**os.environ, "PATH": os.pathsep.join([str(bin), os.environ["PATH"]])}
    for args in (["ls"], ["show", "Scout", "--last", "1"], ["show", "Nobody"]):
        jupyter = subprocess.run(
            [bin / "jupyter", "nbmemory", *args], capture_output=True, text=True, env=env
        )
        same = nbmemory(*args)
        assert (jupyter.returncode, jupyter.stdout) == (same.returncode, same.stdout), args
    assert jupyter.returncode == 1 and "no agent named 'Nobody'" in jupyter.stderr


LEFT_BEHIND = """
import sys
from nbmemory.cli import run

class Held:
    def __del__(self):
        print("freed", flush=True)

held = Held()  # what a command leaves behind, as a listing leaves its tokenizers
run()
"""


@pytest.mark.parametrize(
    ("args", "freed"),
    [(["ls"], False), (["show", "Scout"], False), (["notes", "Writer", "--pin", "Memo"], True)],
)
def test_a_command_that_only_reads_ends_without_freeing_what_it_read(prepared, args, freed):
    """Freeing a listing's tokenizers and memories one by one at exit took 0.1-0.25 s of a
    one-second ``nbmemory ls`` of 3,000 agents; its output is all there, flushed into a pipe.
    A command that writes ends as any Python program does."""
    result = subprocess.run(
        [sys.executable, "-c", LEFT_BEHIND, *args], capture_output=True, text=True, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    assert ("freed" in result.stdout.splitlines()) is freed
    if not freed:
        assert result.stdout == main_output(args)


@pytest.mark.files("a memory written as a file, quickly")
def test_output_cut_short_by_its_reader_ends_quietly(workspace):
    """``nbmemory show NAME | head -1``: the reader goes away after one line, and the command
    ends without a traceback (what it still had to print goes nowhere)."""
    from nbmemory.store.memory_format import format_block, format_header

    path = Path(memory_path("Long"))
    path.parent.mkdir(parents=True)
    blocks = [
        format_block("User", f"message {i} " + "x" * 100, "2026-04-20T18:35:04")
        for i in range(2000)
    ]
    path.write_text(format_header("Long") + "".join(blocks), encoding="utf-8")  # over 64 KB
    process = subprocess.Popen(
        [sys.executable, "-m", "nbmemory", "show", "Long"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert process.stdout.readline().startswith(b"Long: 2,000 messages")
    process.stdout.close()
    assert process.wait(timeout=60) == 1
    assert process.stderr.read() == b""


def main_output(args: list[str]) -> str:
    """What ``cli.main`` prints for ``args`` in this process."""
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(args) == 0
    return out.getvalue()


def test_ls_on_an_empty_workspace(tmp_path):
    result = nbmemory("ls", workspace=tmp_path / "empty")
    assert (result.returncode, result.stdout.strip()) == (0, "No agents in this workspace yet.")


def test_control_characters_in_messages_are_shown_escaped_never_sent(workspace, capsys):
    hostile = "a\x1b]0;pwned\x07b \x1b[8mhidden\x1b[0m \u202eevil\u202c\x9b2J"
    convo = Conversation(name="Esc", memory_md_path=memory_path("Esc"))
    convo.add("User", hostile)
    convo.compact(hostile)
    for argv in (["show", "Esc"], ["search", "pwned", "--archives"], ["export", "Esc"], ["ls"]):
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert not any(ch in out for ch in "\x1b\x07\x9b\u202e\u202c"), argv
    main(["show", "Esc"])
    assert "a⟨U+001B⟩]0;pwned⟨U+0007⟩b" in capsys.readouterr().out


def test_show_folds_long_messages_unless_asked_for_them_whole(workspace, capsys):
    Conversation(name="Long", memory_md_path=memory_path("Long")).add("User", "y" * 50_000)
    assert main(["show", "Long"]) == 0
    folded = capsys.readouterr().out
    assert "first 2,000 of 50,000 characters" in folded and len(folded) < 3000
    assert main(["show", "Long", "--full"]) == 0
    assert "y" * 50_000 in capsys.readouterr().out


def test_audit_lists_compactions_and_what_they_dropped(workspace, capsys):
    convo = Conversation(name="Auditor", memory_md_path=memory_path("Auditor"))
    convo.add("User", "The launch is on 2027-03-14.")
    convo.add("User", "Ticket ACME-42 blocks the release.")
    convo.compact("The launch is on 2027-03-14.")
    assert main(["audit", "Auditor"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Auditor: 1 compaction\n1. ")
    assert "summary: The launch is on 2027-03-14." in out
    assert "   1 term dropped: ACME-42" in out
    assert main(["audit", "Auditor", "--json"]) == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert listed["dropped"] == ["ACME-42"] and listed["recorded"] is True
    assert main(["audit", "Nobody"]) == 1
    result = nbmemory("audit", "Auditor", workspace=workspace)
    assert result.returncode == 0 and "ACME-42" in result.stdout


def test_the_store_option_reads_and_writes_the_database(
    database_url, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
):
    from nbmemory import Workspace, workspace_dir

    monkeypatch.delenv("NBMEMORY_STORE", raising=False)  # the environment's store is files
    shared = Workspace(workspace_dir(), database_url)
    try:
        Conversation(
            name="Shared", memory_md_path=memory_path("Shared", shared), workspace=shared
        ).add("User", "On the DB.")
        assert main(["ls"]) == 0
        assert "No agents" in capsys.readouterr().out  # files, where there are none
        assert main(["--store", database_url, "ls"]) == 0
        assert "Shared" in capsys.readouterr().out
        assert main(["--store", database_url, "compact", "Shared", "--summary", "On the DB."]) == 0
        assert main(["--store", database_url, "audit", "Shared"]) == 0
        assert "history_" in capsys.readouterr().out
        assert main(["--store", database_url, "path", "Shared"]) == 1
        assert "kept in the database" in capsys.readouterr().err
    finally:
        database_at(database_url).close()


def test_a_bad_store_is_a_clear_one_line_error(capsys: pytest.CaptureFixture):
    assert main(["--store", "sqlite:///x.db", "ls"]) == 2
    assert capsys.readouterr().err.strip() == (
        "nbmemory: error: 'sqlite:///x.db' is not a PostgreSQL URL: write "
        "postgresql://USER:PASSWORD@HOST:PORT/DB (or leave the store unset to keep memories in "
        "files)"
    )
    assert main(["--store", "postgresql://me@127.0.0.1:9/none", "ls"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("nbmemory: error: postgresql://me@127.0.0.1:9/none: could not connect")
    assert "server is running" in error and len(error.strip().splitlines()) == 1


@pytest.mark.parametrize(("setting", "password", "named"), [*REFUSED_STORES, *UNREACHABLE_STORES])
def test_a_bad_store_is_one_line_that_never_shows_the_password(
    setting, password, named, capsys: pytest.CaptureFixture
):
    assert main(["--store", setting, "ls"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith("nbmemory: error: ") and named in err
    assert leaks(password, err) == []


@pytest.mark.parametrize("command", [["ls"], ["notes", "Scout"], ["mcp", "--read-only"]])
def test_a_store_variable_that_cannot_be_used_is_one_line_for_every_command(
    command, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
):
    for setting, password, named in REFUSED_STORES:
        monkeypatch.setenv("NBMEMORY_STORE", setting)
        assert main(command) == 2, setting
        out, err = capsys.readouterr()
        assert out == "" and len(err.strip().splitlines()) == 1, err
        assert err.startswith("nbmemory: error: ") and named in err
        assert leaks(password, err) == [], setting


def test_a_store_file_with_a_bad_url_is_one_line_that_never_shows_it(
    tmp_path: Path, capsys: pytest.CaptureFixture
):
    path = tmp_path / "store"
    for setting, password, _ in [*REFUSED_STORES, *UNREACHABLE_STORES]:
        path.write_bytes(setting.encode("utf-8", "surrogateescape"))
        assert main(["--store-file", str(path), "ls"]) == 2, setting
        out, err = capsys.readouterr()
        assert out == "" and len(err.strip().splitlines()) == 1, err
        assert leaks(password, err) == [], setting


def test_a_misplaced_store_option_is_not_echoed_by_the_usage_error(capsys: pytest.CaptureFixture):
    url = "postgresql://u:Qz7Kx9@db.example/agents"
    for argv in (
        ["ls", "--store", url],  # --store belongs before the command
        ["ls", url],
        ["export", "Scout", "--format", url],
        ["show", "Scout", "host=db.example password=Qz7Kx9"],
    ):
        with pytest.raises(SystemExit) as exit:
            main(argv)
        err = capsys.readouterr().err
        assert exit.value.code == 2 and "error: " in err, argv
        assert leaks("Qz7Kx9", err) == [] and "db.example" in err, argv


def test_the_store_can_come_from_a_file_or_the_variable_alone(
    database_url, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
):
    """Not on the command line, where other users see it. The test server trusts local
    connections, so the password is accepted whatever it is: it must just never be shown."""

    url = database_url.replace("nbmemory@", "nbmemory:Qz7Kx9@")
    path = tmp_path / "store-url"
    path.write_text(f"\ufeff  {url} \n")  # a byte order mark and blanks, as editors leave them
    shared = Workspace(tmp_path / "workspace", url)
    try:
        Conversation(
            name="Shared", memory_md_path=shared.memory_path("Shared"), workspace=shared
        ).add("User", "On the DB.")
        assert main(["--store-file", str(path), "ls"]) == 0
        assert "Shared" in capsys.readouterr().out
        assert main(["--store-file", str(path), "path", "Shared"]) == 1
        err = capsys.readouterr().err
        assert "kept in the database postgresql://nbmemory@127.0.0.1:" in err
        assert leaks("Qz7Kx9", err) == []
    finally:
        database_at(url).close()
    shown = nbmemory("--store-file", str(path), "show", "Shared")
    assert shown.returncode == 0 and "On the DB." in shown.stdout
    monkeypatch.setenv("NBMEMORY_STORE", url)
    assert "On the DB." in nbmemory("show", "Shared").stdout
    assert (ReadModel().store, leaks("Qz7Kx9", ReadModel().store)) == (PgStore(url).shown, [])
    database_at(url).close()


def test_store_file_mistakes_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture):
    secret = "postgresql://u:Qz7Kx9@db.example/agents"
    files = {
        "missing": None,
        "folder": "",
        "empty": " \n\t\n",
        "two-lines": f"{secret}\n{secret}\n",
        "latin-1": "postgresql://u:Qz7\xe9Kx9@db.example/agents".encode("latin-1"),
    }
    expected = {
        "missing": ": cannot read it (No such file or directory)",
        "folder": ": cannot read it (Is a directory)",
        "empty": " is empty: write the database URL in it",
        "two-lines": " has more than one line: keep only the URL",
        "latin-1": " is not UTF-8 text",
    }
    for name, content in files.items():
        path = tmp_path / name
        if name == "folder":
            path.mkdir()
        elif isinstance(content, bytes):
            path.write_bytes(content)
        elif content is not None:
            path.write_text(content)
        assert main(["--store-file", str(path), "ls"]) == 2, name
        out, err = capsys.readouterr()
        assert err == f"nbmemory: error: --store-file {path}{expected[name]}\n"
        assert out == "" and leaks("Qz7Kx9", err) == []
    with pytest.raises(SystemExit) as exit:
        main(["--store", secret, "--store-file", str(tmp_path / "empty"), "ls"])
    err = capsys.readouterr().err
    assert exit.value.code == 2 and "--store-file: not allowed with argument --store" in err


def test_a_store_that_is_not_utf8_ends_with_an_error_line_not_a_traceback():
    """Run for real: arguments that are not UTF-8 reach Python as lone surrogates, which
    psycopg could not encode (a traceback before)."""
    for setting in ("postgresql://u:Qz7Kx9@[::1/agents", b"postgresql://u:Qz7\xffKx9@h/agents"):
        result = nbmemory("--store", setting, "ls")
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr.startswith("nbmemory: error: ") and "Traceback" not in result.stderr
        assert len(result.stderr.splitlines()) == 1 and "Qz7" not in result.stderr


def test_compact_labels_both_figures_as_every_view_does(capsys: pytest.CaptureFixture):
    convo = Conversation(name="Labelled", memory_md_path=memory_path("Labelled"))
    for i in range(5):
        convo.add("User", f"Line {i} about the Lyon depot.")
    assert main(["compact", "Labelled", "--summary", "Five lines about the depot."]) == 0
    out = capsys.readouterr().out
    assert "Compacted Labelled: memory " in out and " · next request " in out
    assert main(["compact", "Nobody", "--summary", "x"]) == 1
    assert not memory_path("Nobody").parent.exists()


def test_notes_arguments_that_are_no_number_or_no_text_end_in_one_line(prepared, capsys):
    """``--unpin ²`` (``str.isdigit`` says yes, ``int`` no) looks for the words; a ``--pin``
    that is not UTF-8 reaches Python as a lone surrogate, which cannot be stored."""
    assert main(["notes", "Scout", "--pin", "Area: 40 m²."]) == 0
    capsys.readouterr()
    for argv, code, words in [
        (["notes", "Scout", "--unpin", "³"], 1, "no note"),
        (["notes", "Scout", "--unpin", "\u0661"], 1, "no note"),
        (["notes", "Scout", "--unpin", "9" * 5000], 1, "no note"),
        (["notes", "Scout", "--pin", "caf\udce9"], 2, "lone surrogate"),
        (["notes", "Sc\udcffout", "--pin", "x"], 2, "lone surrogate"),
        (["search", "caf\udce9"], 1, "No results for “caf\\udce9”"),
    ]:
        assert main(argv) == code, argv
        out, err = capsys.readouterr()
        assert out == "" and words in err and len(err.splitlines()) == 1, (argv, err)
    assert main(["notes", "Scout", "--unpin", "²"]) == 0
    assert capsys.readouterr().out == "Scout has no pinned notes\n"


def test_not_utf8_arguments_are_an_error_line_for_real(prepared):
    result = nbmemory("notes", "Scout", "--pin", b"caf\xe9")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("nbmemory: error: ") and len(result.stderr.splitlines()) == 1


def test_names_that_are_not_utf8_are_printed_escaped(prepared, tmp_path, capsys):
    target = tmp_path / "memo\udcff.md"
    assert main(["export", "Scout", "-o", str(target)]) == 0
    assert capsys.readouterr().out == f"wrote {tmp_path}/memo\\udcff.md\n"


@pytest.mark.parametrize("last", ["0", "-5", "²", "1.5", "9" * 5000])
def test_show_last_takes_a_count_from_one(prepared, capsys, last):
    with pytest.raises(SystemExit) as exit:
        main(["show", "Scout", "--last", last])
    out, err = capsys.readouterr()
    assert exit.value.code == 2 and out == "" and "--last" in err.splitlines()[-1]


def test_import_warns_about_a_hostile_folder_in_one_escaped_line(tmp_path, database, capsys):
    agents = tmp_path / "source" / "agents"
    (agents / "Scout").mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "fixtures" / "spec_memory.md", agents / "Scout" / "MEMORY.md")
    (agents / "bad\x1b]0;pwned\x07\x1b[2J").mkdir()
    assert main(["import", str(tmp_path / "source")]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("imported 1 agent into") and not any(c in out + err for c in "\x1b\x07")
    assert err.startswith("nbmemory: warning: ") and len(err.splitlines()) == 1
    assert "bad\\x1b]0;pwned\\x07\\x1b[2J" in err


def depot_of(city: str) -> str:
    """The depot that serves a city."""
    return f"{city} is served by depot D-42."


def test_a_preview_starts_from_the_figure_ls_shows_tools_and_all(capsys: pytest.CaptureFixture):
    agent = Agent(
        agent_name="Tooled", model_name=OFFLINE_MODEL, persistent_memory=True, tools=[depot_of]
    )
    agent.run("Which depot serves Lyon? The budget is 40k EUR.")
    assert main(["ls"]) == 0
    [row] = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
    assert row[0] == "Tooled"
    assert main(["compact", "Tooled", "--preview"]) == 0
    shown = capsys.readouterr().out
    # The preview's agent is built on the memory alone, without the tool: its schema is
    # counted as the runs recorded it.
    assert f": next request {row[2]} → " in shown.splitlines()[0]
    assert ReadModel().usage("Tooled").tokens == agent.next_request_tokens()


def test_compact_previews_the_models_summary_and_keeps_what_is_asked(capsys: pytest.CaptureFixture):
    convo = Conversation(name="Depot", memory_md_path=memory_path("Depot"))
    for i in range(5):
        convo.add("User", f"Line {i}: crate QX-{7700 + i} goes to the Lyon depot.")
    before = stored("Depot")
    assert main(["compact", "Depot", "--preview", "--keep", "Lyon"]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("Preview of compacting Depot (nothing changed yet): next request ")
    assert "Kept word for word:\n- " in shown and "QX-7704" in shown and "Lyon" in shown
    assert "nbmemory compact Depot writes a summary like it" in shown
    assert stored("Depot") == before and ReadModel().archives("Depot") == []

    assert main(["compact", "Depot", "--keep", "Lyon"]) == 0  # the model's summary
    assert "Compacted Depot: memory " in capsys.readouterr().out
    (summary,) = stored_messages("Depot")
    assert "Kept word for word:\n- " in summary["content"] and "QX-7704" in summary["content"]
    assert main(["compact", "Nobody", "--preview"]) == 1


def test_notes_lists_a_proposal_waiting_for_review_with_the_commands_that_settle_it(
    prepared, capsys
):
    """``nbmemory notes NAME`` shows the model's edit no one has reviewed, not only the notes."""
    Notes(agent_docs("Scout")).propose(add="The vault code rotates on Mondays.")
    assert main(["notes", "Scout"]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("Scout has no pinned notes\n\n1 note edit waits for your review")
    assert "proposed to pin “The vault code rotates on Mondays.” — by model (edit_notes)" in shown
    assert (
        "accept: nbmemory notes Scout --accept 1    reject: nbmemory notes Scout --reject 1"
        in shown
    )
    assert main(["notes", "Scout", "--accept", "1"]) == 0
    assert capsys.readouterr().out == "1. The vault code rotates on Mondays.\n"


def test_show_prints_a_tool_call_and_its_result_as_lines():
    convo = Conversation(name="Tooled", memory_md_path=memory_path("Tooled"))
    arguments = json.dumps({"url": "https://news.test/", "note": "one\ntwo"})
    call = {"id": "c1", "type": "function", "function": {"name": "fetch", "arguments": arguments}}
    convo.add("Tooled", {"content": None, "tool_calls": [call]})
    convo.add("Tool", {"tool_call_id": "c1", "name": "fetch", "content": "Page title\nBody"})
    shown = nbmemory("show", "Tooled").stdout
    assert "Calls fetch\n  url: https://news.test/\n  note:\n    one\n    two\n" in shown
    assert "Result of fetch\nPage title\nBody" in shown
    assert "\\n" not in shown


# ----------------------------------------------------------------------------------------------
# Every answer as the views say it: numbered from 1, plurals by count, newest first


def test_search_shows_each_hits_message_number_as_the_views_number_it(prepared, capsys):
    assert main(["search", "deadline"]) == 0
    assert capsys.readouterr().out.split("\t")[:4] == ["Scout", "MEMORY.md", "#2", "User"]
    assert main(["search", "noted", "--archives"]) == 0
    [hit] = capsys.readouterr().out.splitlines()
    assert hit.split("\t")[2:4] == ["#2", "Scout"]  # the archive's second message


def test_search_says_where_a_hit_was_cut(workspace, capsys):
    Conversation(name="Long", memory_md_path=memory_path("Long")).add("User", "x " * 400 + "end")
    assert main(["search", "end"]) == 0
    text = capsys.readouterr().out.rstrip("\n").split("\t")[-1]
    assert text.endswith("…") and len(text) == 201


def test_tokens_says_no_archives_yet_before_a_first_compaction(prepared, capsys):
    assert main(["tokens", "Writer"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "1 message in MEMORY.md, no archives yet"


def test_audit_words_compactions_as_the_views_do(workspace, capsys):
    convo = Conversation(name="Auditor", memory_md_path=memory_path("Auditor"))
    convo.add("User", "The launch is on 2027-03-14.")
    assert main(["audit", "Auditor"]) == 0
    assert capsys.readouterr().out == "Auditor: No compactions yet.\n"
    convo.compact("The launch is on 2027-03-14.")
    assert main(["audit", "Auditor"]) == 0
    out = capsys.readouterr().out
    assert " · 1 message archived to history_" in out.splitlines()[1]
    assert out.splitlines()[-1] == "   nothing dropped"
    assert "dropped 0" not in out


def test_notes_history_is_newest_first_with_the_edits_waiting_above_it(prepared, capsys):
    """As the panel and the widget list it: a proposal waiting for review is listed once, above
    the history, with the commands that settle it; the history reads newest first."""
    assert main(["notes", "Scout", "--history"]) == 0
    assert capsys.readouterr().out == "Scout: no changes to the notes yet\n"
    notes = Notes(agent_docs("Scout"))
    assert main(["notes", "Scout", "--pin", "Budget: 40k EUR."]) == 0
    assert main(["notes", "Scout", "--pin", "Deadline: May."]) == 0
    notes.propose(add="The vault code rotates on Mondays.")
    capsys.readouterr()
    assert main(["notes", "Scout", "--history"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "1 note edit waits for your review (not pinned yet):"
    assert lines[1].startswith("  #3 ") and "vault code" in lines[1]
    assert (
        lines[2]
        == "    accept: nbmemory notes Scout --accept 3    reject: nbmemory notes Scout --reject 3"
    )
    assert lines[4] == "History of the notes, newest first:"
    assert [line.split()[0] for line in lines[5:]] == ["#2", "#1"]
    assert "pinned “Deadline: May.”" in lines[5] and " — by person " in lines[5]


def test_compact_names_its_archive_as_the_audit_and_mcp_do(prepared, capsys):
    assert main(["compact", "Writer", "--summary", "Memo drafted."]) == 0
    said = capsys.readouterr().out
    [done] = ReadModel(prepared).compactions("Writer")
    assert said == f"Compacted Writer: {done.figures}; raw transcript archived to {done.archive}\n"


def test_restore_says_what_it_unpinned_and_refuses_a_proposal(prepared, capsys):
    """As the views' confirmation says it: the notes pinned since that a restore unpins. A
    proposal made no version of the notes: the views offer no Restore beside it."""
    assert main(["notes", "Scout", "--pin", "Budget: 40k EUR."]) == 0
    assert main(["notes", "Scout", "--pin", "Deadline: May."]) == 0
    proposal = Notes(agent_docs("Scout")).propose(add="The vault code rotates on Mondays.")
    capsys.readouterr()
    assert main(["notes", "Scout", "--restore", str(proposal.n)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "made no version of the notes: nothing to restore" in err
    assert main(["notes", "Scout", "--restore", "1"]) == 0
    said = capsys.readouterr().out
    assert said.startswith(
        "Restored the notes as they were after #1.\n"
        "Unpinned 1 note pinned since:\n- Deadline: May.\n\n1. Budget: 40k EUR.\n\n"
        "1 note edit waits for your review"
    )


def test_a_note_not_found_and_no_edit_waiting_read_as_sentences(prepared, capsys):
    assert main(["notes", "Scout", "--pin", "Budget: 40k EUR."]) == 0
    assert main(["notes", "Scout", "--pin", "Budget: 45k EUR."]) == 0
    capsys.readouterr()
    assert main(["notes", "Scout", "--unpin", "Lyon"]) == 1
    assert capsys.readouterr().err.startswith("nbmemory: no note matches 'Lyon' in ")
    assert main(["notes", "Scout", "--unpin", "Budget"]) == 1
    assert capsys.readouterr().err.startswith("nbmemory: 2 notes match 'Budget' in ")
    assert main(["notes", "Scout", "--pending"]) == 0
    assert capsys.readouterr().out == "Scout: no note edits wait for your review\n"
