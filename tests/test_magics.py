"""The magics in a real IPython shell; the model is the loopback server or the offline model."""

import getpass
import json
import logging
import re

import pytest
from IPython import get_ipython
from IPython.core.error import UsageError
from IPython.testing.globalipapp import start_ipython

from nbmemory import Workspace
from nbmemory.errors import MemoryWarning
from nbmemory.jupyter.render import Answer
from nbmemory.memory.note_history import HISTORY_FILE
from nbmemory.memory.notes import PROMPT_LINE as NOTES_LINE
from nbmemory.recall import PROMPT_LINE as RECALL_LINE
from nbmemory.store import list_agents, memory_path
from nbmemory.store.memory_format import parse
from nbmemory.views.read_model import ReadModel
from support import REFUSED_STORES, agent_docs, leaks, stored_messages


@pytest.fixture
def ip(monkeypatch):
    monkeypatch.delenv("NBMEMORY_MODEL", raising=False)
    shell = start_ipython() or get_ipython()
    shell.run_line_magic("load_ext", "nbmemory")
    yield shell
    shell.run_line_magic("unload_ext", "nbmemory")
    for name in ("answer", "budget", "search_docs", "explode", "not_a_function"):
        shell.user_ns.pop(name, None)


@pytest.fixture
def served(ip, openai_server, monkeypatch):
    """The shell with its magics pointed at the loopback server."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    ip.run_line_magic("config", f"NbMemoryMagics.api_base = {openai_server.url!r}")
    ip.run_line_magic("config", "NbMemoryMagics.default_model = 'openai/test-model'")
    yield ip
    for option in ("api_base", "default_model"):
        ip.run_line_magic("config", f"NbMemoryMagics.{option} = ''")


def agent(ip, line, cell):
    return ip.run_cell_magic("agent", line, cell)


def test_a_cell_reaches_the_model_byte_for_byte(served, openai_server):
    cell = (
        'x = {"a": 1}\nprint(f"{x}") $HOME `ls` \'\'\'doc\'\'\' """q""" {{not a template}}\n\n  end'
    )
    openai_server.reply("Seen.")
    result = served.run_cell(f"%%agent Coder\n{cell}")
    assert result.success
    assert openai_server.requests[0]["messages"][-1] == {"role": "user", "content": cell}
    assert isinstance(result.result, Answer) and result.result == "Seen."
    assert served.user_ns["_"] == "Seen."
    assert stored_messages("Coder")[0]["content"] == cell


def test_the_agent_is_kept_between_cells_and_the_answer_is_available(served, openai_server):
    openai_server.reply("First answer.")
    openai_server.reply("Second answer.")
    agent(served, "Scout", "First question")
    assert agent(served, "Scout --out answer", "Second question") == "Second answer."
    assert served.user_ns["answer"] == "Second answer."
    sent = [m["content"] for m in openai_server.requests[1]["messages"]]
    memory_lines = f"{RECALL_LINE}\n\n{NOTES_LINE}"
    assert sent == [memory_lines, "First question", "First answer.", "Second question"]
    tools = [t["function"]["name"] for t in openai_server.requests[1]["tools"]]
    assert tools == ["recall_memory", "recall_around", "recall_between", "edit_notes"]


def test_options_reach_the_agent(served, openai_server):
    def search_docs(query: str) -> str:
        """Search the documents.

        Args:
            query: What to look for.
        """
        return "Batteries: 4-hour peaks."

    served.user_ns["search_docs"] = search_docs
    served.user_ns["budget"] = {"eur": 40_000}
    openai_server.reply(tool_calls=[{"name": "search_docs", "arguments": {"query": "storage"}}])
    openai_server.reply("Within budget.")
    line = (
        "Planner --model openai/other-model --max-loops auto --context-length 9000 "
        '--tools search_docs --system "Be terse." --var budget --no-stream --no-recall'
    )
    assert agent(served, line, "Check storage.") == "Within budget."
    first, second = openai_server.requests
    assert first["model"] == "other-model"
    assert first["messages"][0] == {"role": "system", "content": f"Be terse.\n\n{NOTES_LINE}"}
    assert (
        first["messages"][-1]["content"] == "Check storage.\n\nbudget =\n```\n{'eur': 40000}\n```"
    )
    assert [t["function"]["name"] for t in first["tools"]] == ["search_docs", "edit_notes"]
    assert "stream" not in first
    assert second["messages"][-1]["content"] == "Batteries: 4-hour peaks."
    assert served.magics_manager.registry["NbMemoryMagics"].agents["Planner"].context_length == 9000


def test_an_ephemeral_agent_writes_nothing(served, workspace):
    agent(served, "Ghost --ephemeral", "Remember nothing on disk.")
    assert not (workspace / "agents" / "Ghost").exists()
    # Its figures come from the read model too: the whole next request, notes and tools included.
    ghost = served.magics_manager.registry["NbMemoryMagics"].agents["Ghost"]
    line = repr(memory(served, "Ghost --tokens"))
    assert line.startswith(f"Ghost: {ghost.next_request_tokens():,} of 16,000 tokens (")
    assert ", compacts at 90% (14,400 tokens)," in line


def test_config_sets_the_defaults(ip, workspace, tmp_path, caplog):
    ip.run_line_magic("config", "NbMemoryMagics.persistent = False")
    try:
        agent(ip, "Offline", "hello")
        assert not workspace.exists()
    finally:
        ip.run_line_magic("config", "NbMemoryMagics.persistent = True")
    ip.run_line_magic("config", "NbMemoryMagics.recall = False")
    try:
        agent(ip, "Quiet", "hello")
        assert not ip.magics_manager.registry["NbMemoryMagics"].agents["Quiet"].recall
    finally:
        ip.run_line_magic("config", "NbMemoryMagics.recall = True")
    ip.run_line_magic("config", f"NbMemoryMagics.workspace = {str(tmp_path / 'elsewhere')!r}")
    try:
        agent(ip, "Moved", "hello")
        assert Workspace.from_env(tmp_path / "elsewhere").agent("Moved").exists("MEMORY.md")
    finally:
        ip.run_line_magic("config", "NbMemoryMagics.workspace = ''")
    ip.run_line_magic("config", "NbMemoryMagics.notes_approval = 'ask'")
    try:
        agent(ip, "Careful", "hello")
        assert (
            ip.magics_manager.registry["NbMemoryMagics"].agents["Careful"].approval_now() == "ask"
        )
        ip.run_line_magic("config", "NbMemoryMagics.notes_approval = 'sometimes'")
        assert "notes_approval must be one of" in caplog.text
        assert ip.run_line_magic("config", "NbMemoryMagics.notes_approval") == "ask"
    finally:
        ip.run_line_magic("config", "NbMemoryMagics.notes_approval = ''")


def test_config_sets_the_embedding_model(ip, openai_server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.delenv("NBMEMORY_EMBEDDING_MODEL", raising=False)
    agent(ip, "Lena", "My car is red.")
    lena = ip.magics_manager.registry["NbMemoryMagics"].agents["Lena"]
    assert lena.semantic_index().model == "nbmemory/words"  # offline, by default
    ip.run_line_magic("config", "NbMemoryMagics.embedding_model = 'none'")
    agent(ip, "Lena", "What colour is my car?")
    assert lena.semantic_index() is None
    ip.run_line_magic("config", "NbMemoryMagics.embedding_model = 'openai/fake-embed'")
    ip.run_line_magic("config", f"NbMemoryMagics.embedding_api_base = {openai_server.url!r}")
    try:
        agent(ip, "Lena", "What colour is my automobile?")  # the offline model recalls
        [request] = openai_server.embedding_requests
        assert request["model"] == "fake-embed" and "My car is red." in request["input"]
    finally:
        for option in ("embedding_model", "embedding_api_base"):
            ip.run_line_magic("config", f"NbMemoryMagics.{option} = ''")
    agent(ip, "Lena", "What colour is my automobile?")
    assert len(openai_server.embedding_requests) == 1  # the default again: nothing sent
    assert lena.semantic_index().model == "nbmemory/words"


def test_config_sets_the_recall_budget(ip, caplog):
    magics = ip.magics_manager.registry["NbMemoryMagics"]
    agent(ip, "Lena", "My car is red.")
    assert magics.agents["Lena"].recall_budget == 800
    ip.run_line_magic("config", "NbMemoryMagics.recall_budget = 300")
    try:
        agent(ip, "Lena", "What colour is my car?")
        assert magics.agents["Lena"].recall_budget == 300
        ip.run_line_magic("config", "NbMemoryMagics.recall_budget = 0")
        assert "recall_budget must be a positive number" in caplog.text
        assert ip.run_line_magic("config", "NbMemoryMagics.recall_budget") == 300
    finally:
        ip.run_line_magic("config", "NbMemoryMagics.recall_budget = 800")


@pytest.mark.parametrize(("setting", "password", "named"), REFUSED_STORES)
def test_a_refused_store_never_shows_its_password(ip, setting, password, named, caplog, capsys):
    try:
        with caplog.at_level(logging.DEBUG):
            ip.run_line_magic("config", f"NbMemoryMagics.store = {setting!r}")
        said = caplog.text + "".join(capsys.readouterr())
        assert "NbMemoryMagics.store: " in said and named in said
        assert leaks(password, said) == []
        assert ip.run_line_magic("config", "NbMemoryMagics.store") == ""  # unchanged
    finally:  # %config keeps the refused value in the shell's config, for the next load_ext
        ip.run_line_magic("config", "NbMemoryMagics.store = ''")


@pytest.mark.parametrize(("setting", "password", "named"), REFUSED_STORES)
def test_a_store_variable_that_cannot_be_used_is_one_line_even_in_verbose_mode(
    ip, setting, password, named, monkeypatch, capsys
):
    """``%xmode Verbose`` shows each frame's variables: the error is a UsageError, one line
    with no traceback, so no frame holding the URL is shown."""
    monkeypatch.setenv("NBMEMORY_STORE", setting)
    mode = ip.InteractiveTB.mode
    ip.run_line_magic("xmode", "Verbose")
    capsys.readouterr()
    try:
        for cell in ("%memory", "%memory Scout --notes", "%compact Scout", "%%agent Scout\nhi"):
            result = ip.run_cell(cell)
            assert isinstance(result.error_in_exec, UsageError), cell
            said = "".join(capsys.readouterr())
            assert said.startswith("UsageError: ") and len(said.strip().splitlines()) == 1, said
            assert named in said and leaks(password, said) == [], cell
    finally:
        ip.run_line_magic("xmode", mode)


def test_the_store_and_its_errors_are_shown_without_the_password(ip, capsys):
    """What a notebook would keep: the setting listed and as a cell's value, and the error of
    a database that cannot be reached."""

    url = "postgresql://u:Qz7Kx9@127.0.0.1:9/agents"
    ip.run_line_magic("config", f"NbMemoryMagics.store = {url!r}")
    try:
        value = ip.run_line_magic("config", "NbMemoryMagics.store")
        assert value == url  # the setting itself is whole
        shown = ip.display_formatter.format(value)[0]["text/plain"]
        assert shown == "'postgresql://u:***@127.0.0.1:9/agents'"
        ip.run_line_magic("config", "NbMemoryMagics")
        listed = capsys.readouterr().out
        assert "Current: 'postgresql://u:***@127.0.0.1:9/agents'" in listed
        for magic, line in [("memory", ""), ("memory", "Scout"), ("compact", "Scout")]:
            with pytest.raises(UsageError, match=r"127\.0\.0\.1:9/agents: could not") as failure:
                ip.run_line_magic(magic, line)
            assert leaks("Qz7Kx9", str(failure.value)) == [], magic
        with pytest.raises(UsageError, match="could not connect") as failure:
            agent(ip, "Scout", "hello")
        assert leaks("Qz7Kx9", str(failure.value)) == []
    finally:
        ip.run_line_magic("config", "NbMemoryMagics.store = ''")


def test_the_default_model_is_the_offline_one(ip):
    assert agent(ip, "Local", "Our office is in Lyon.").startswith("I have nothing earlier")
    assert "> Our office is in Lyon." in agent(ip, "Local", "Where is our office?")


@pytest.mark.parametrize(
    ("line", "cell", "message"),
    [
        ("../escape", "hi", "must not contain '/'"),
        ("", "hi", "the following arguments are required: name"),
        ("Scout --frobnicate", "hi", "unrecognized arguments: --frobnicate"),
        ("Scout --max-loops 0", "hi", '--max-loops must be a positive number or "auto"'),
        ("Scout --context-length -5", "hi", "--context-length must be a positive"),
        ("Scout --tools not_a_function", "hi", "no function named 'not_a_function'"),
        ("Scout --var missing_variable", "hi", "no variable named 'missing_variable'"),
        ("Scout", "   \n", "the cell is empty"),
    ],
)
def test_mistakes_are_one_line_usage_errors(ip, line, cell, message):
    ip.user_ns["not_a_function"] = 42
    with pytest.raises(UsageError, match=message):
        agent(ip, line, cell)


def test_a_missing_key_names_the_variable(ip, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(UsageError, match="gpt-4o needs OPENAI_API_KEY"):
        agent(ip, "Paid --model gpt-4o", "hi")


def test_a_provider_error_is_one_line_and_the_task_is_kept(served, openai_server):
    for _ in range(3):  # the first try and two retries
        openai_server.reply(status=500, error_message="upstream exploded")
    with pytest.raises(UsageError, match="upstream exploded"):
        agent(served, "Scout", "Keep this task.")
    assert [m["content"] for m in stored_messages("Scout")] == ["Keep this task."]


def test_an_interrupted_run_keeps_memory_whole(ip, capsys):
    def explode(query: str) -> str:
        """Search the documents.

        Args:
            query: What to look for.
        """
        raise KeyboardInterrupt

    ip.user_ns["explode"] = explode
    assert agent(ip, "Stopper --tools explode --max-loops auto", "Search the documents.") is None
    assert "Interrupted" in capsys.readouterr().out
    messages = stored_messages("Stopper")
    assert [m["role"] for m in messages] == ["User", "Stopper"]
    assert messages[1]["content"]["tool_calls"][0]["function"]["name"] == "explode"


def memory(ip, line=""):
    return ip.run_line_magic("memory", line)


def test_memory_lists_the_agents_and_shows_one(ip):
    assert repr(memory(ip)) == "No agents in this workspace yet."
    agent(ip, "Scout", "The budget is 40k EUR.")
    agent(ip, "Writer", "Draft the memo.")
    table = memory(ip)
    assert repr(table).splitlines()[0].split() == [
        "agent",
        "messages",
        "tokens",
        "window",
        "threshold",
        "archives",
        "last",
        "activity",
        "recall",
        "index",
    ]
    assert [line.split()[:2] for line in repr(table).splitlines()[1:]] == [
        ["Scout", "2"],
        ["Writer", "2"],
    ]
    assert table._repr_markdown_().startswith("| agent | messages | tokens |")
    shown = memory(ip, "Scout")
    assert repr(shown).startswith("Scout: 2 messages")
    assert "The budget is 40k EUR." in shown._repr_markdown_()


def test_memory_options(ip, tmp_path):
    agent(ip, "Scout", "The budget is 40k EUR.")
    docs = agent_docs("Scout")
    where = str(docs.path("MEMORY.md"))
    if docs.is_database:
        where = f"(kept in the database {docs.db.shown}, not in a file)"
    assert repr(memory(ip, "Scout --path")) == where
    assert repr(memory(ip, "Scout --tokens")).startswith("Scout: ")
    assert "of 16,000 tokens" in repr(memory(ip, "Scout --tokens"))
    found = memory(ip, "Scout --search BUDGET")
    assert repr(found).startswith("2 messages of Scout contain 'BUDGET'")
    ip.run_line_magic("compact", 'Scout --summary "Budget: 40k EUR."')
    assert repr(memory(ip, "Scout --search 40k")).startswith("1 message of")
    assert repr(memory(ip, "Scout --search 40k --archives")).startswith("3 messages")
    [listed] = repr(memory(ip, "Scout --list-archives")).splitlines()
    assert listed.startswith("history_") and listed.endswith("(2 messages)")
    archive = listed.split()[0]
    assert "The budget is 40k EUR." in repr(memory(ip, f"Scout --archive {archive}"))
    for name, check in [("out.json", json.loads), ("out.yaml", str), ("out.md", parse)]:
        path = tmp_path / name
        memory(ip, f"Scout --export {path}")
        assert "Budget: 40k EUR." in str(
            check(path.read_text() if name != "out.md" else path.read_bytes())
        )


def test_pinned_notes_from_a_cell(ip):
    agent(ip, "Scout", "The budget is 40k EUR.")
    assert repr(memory(ip, "Scout --notes")) == "Scout has no pinned notes"
    memory(ip, 'Scout --pin "Budget: 40k EUR, fixed."')
    shown = memory(ip, 'Scout --pin "Deadline: May."')
    assert repr(shown) == "1. Budget: 40k EUR, fixed.\n2. Deadline: May."
    assert repr(memory(ip, "Scout --unpin 1")) == "1. Deadline: May."
    with pytest.raises(UsageError, match="no note"):
        memory(ip, "Scout --unpin zeppelin")


def test_a_note_the_model_proposes_waits_and_the_cell_says_how_to_accept_it(ip, capsys):
    agent(ip, "Scout", "Remember: the vault code rotates on Mondays.")
    said = capsys.readouterr().out
    assert "1 note edit waits for your review" in said
    assert "proposed to pin “the vault code rotates on Mondays.”" in said
    assert "accept: %memory Scout --accept 1    reject: %memory Scout --reject 1" in said
    shown = repr(memory(ip, "Scout --notes"))
    assert shown.startswith("Scout has no pinned notes\n\n1 note edit waits for your review")
    assert repr(memory(ip, "Scout --accept 1")) == "1. the vault code rotates on Mondays."
    said = ReadModel().note_history("Scout")[-1].describe()
    assert "accepted proposal #1" in said and f"person {getpass.getuser()} (magic)" in said
    agent(ip, "Scout", "Remember: the office is in Lyon.")
    assert repr(memory(ip, "Scout --reject 3")) == "1. the vault code rotates on Mondays."
    assert "accept: %memory Scout --accept 3" in capsys.readouterr().out
    with pytest.raises(UsageError, match="no pending proposal #3"):
        memory(ip, "Scout --accept 3")


def test_the_notes_view_says_which_line_of_their_record_could_not_be_read(ip):
    agent(ip, "Scout", "The budget is 40k EUR.")
    memory(ip, 'Scout --pin "Budget: 40k EUR, fixed."')
    agent_docs("Scout").append(HISTORY_FILE, b'{"n": 2, "change": "approval", "approval"\n')
    with pytest.warns(MemoryWarning, match="NOTES.history.jsonl: line 2 could not be read"):
        assert repr(memory(ip, "Scout --notes")) == "1. Budget: 40k EUR, fixed."


def test_compact_with_the_agents_model_or_a_given_summary(ip):
    for n in range(5):
        agent(ip, "Scout", f"Fact {n}: project {n} costs {n * 10}k EUR.")
    before = ReadModel().usage("Scout").tokens
    report = repr(ip.run_line_magic("compact", "Scout"))
    # The line nbmemory compact prints: the archive by its name, as every view lists it.
    done = ReadModel().compactions("Scout")[-1]
    said = f"Compacted Scout: {done.figures}; raw transcript archived to {done.archive}"
    assert report.splitlines()[0] == said and "/" not in done.archive
    # Both figures, labelled: the memory alone, and the next request as %memory --tokens says.
    found = re.search(
        r"memory ([\d,]+) → ([\d,]+) tokens · next request ([\d,]+) → ([\d,]+)", report
    )
    assert found, report
    memory_before, memory_after, request_before, request_after = (
        int(x.replace(",", "")) for x in found.groups()
    )
    assert memory_after < memory_before and request_after < request_before
    assert (request_before, request_after) == (before, ReadModel().usage("Scout").tokens)
    assert request_before - memory_before == request_after - memory_after  # the rest stayed
    summary, *kept = stored_messages("Scout")
    assert summary["content"].startswith("[Compressed Memory Summary]")
    assert kept == []  # between runs, as the spec says: the summary alone
    ip.run_line_magic("compact", 'Scout --summary "Only this."')
    assert stored_messages("Scout")[0]["content"].endswith("Only this.")


def test_a_run_that_compacts_says_so_in_its_cell(ip):
    from IPython.utils.capture import capture_output

    said = []
    for n in range(40):
        with capture_output() as cell:
            agent(ip, "Brief --context-length 1500", f"Fact {n}: crate QX-{7700 + n} is in Lyon.")
        said += [o.data.get("text/plain", "") for o in cell.outputs]
        if ReadModel().archives("Brief"):
            break
    notices = [text for text in said if "This run compacted Brief: memory " in text]
    assert len(notices) == 1, said[-3:]
    (compaction,) = ReadModel().compactions("Brief")
    assert compaction.figures in notices[0] and compaction.archive in notices[0]


def test_compact_preview_shows_what_the_next_compact_writes(ip):
    for n in range(5):
        agent(ip, "Scout", f"Fact {n}: crate QX-{7700 + n} costs {n * 10}k EUR.")
    before = stored_messages("Scout")
    shown = repr(ip.run_line_magic("compact", "Scout --preview --keep QX-7700"))
    assert shown.startswith("Preview of compacting Scout (nothing changed yet): next request ")
    assert "%compact Scout writes this summary." in shown
    assert stored_messages("Scout") == before and ReadModel().archives("Scout") == []
    written = shown.split("Summary it would write:\n", 1)[1].split("\nIt would still drop")[0]
    assert "QX-7700" in written.split("Kept word for word:")[1]
    report = repr(ip.run_line_magic("compact", "Scout"))
    assert report.startswith("Compacted Scout: memory ")
    assert stored_messages("Scout")[0]["content"] == f"[Compressed Memory Summary]\n{written}"


@pytest.mark.parametrize(
    ("magic", "line", "message"),
    [
        ("memory", "Nobody", "no agent named 'Nobody'"),
        ("memory", "../x", "must not contain '/'"),
        ("memory", "Scout --format pdf", "invalid choice: 'pdf'"),
        ("memory", "Scout --archive history_none.md", "no archive named 'history_none.md'"),
        ("compact", "Nobody", "no agent named 'Nobody'"),
        ("compact", 'Scout --summary ""', "--summary must not be empty"),
    ],
)
def test_memory_and_compact_mistakes(ip, magic, line, message):
    agent(ip, "Scout", "hello")
    with pytest.raises(UsageError, match=message):
        ip.run_line_magic(magic, line)


def test_help_is_generated_from_the_options(ip):
    doc = ip.magics_manager.magics["cell"]["agent"].__doc__
    assert "%agent [-m MODEL] [-l MAX_LOOPS]" in doc
    assert "--var VARIABLE" in doc and "sent exactly as written" in doc
    assert "--archives" in ip.magics_manager.magics["line"]["memory"].__doc__


def test_the_widget_options(ip):
    from nbmemory.jupyter.widget import MemoryWidget

    agent(ip, "Scout --widget", "The budget is 40k EUR.")
    widget = memory(ip, "Scout --widget")
    assert isinstance(widget, MemoryWidget)
    assert widget.info["messages"] == 2
    agent(ip, "Scout", "And the deadline is May.")
    assert widget.info["messages"] == 4


def test_a_quoted_name_with_a_space_names_the_agent_without_its_quotes(ip, workspace):
    ip.run_cell_magic("agent", '"Two Words"', "hello")
    assert list_agents() == ["Two Words"]
    ip.run_line_magic("memory", "'Two Words' --pin 'kept'")
    assert ReadModel().notes("Two Words") == ["kept"]


def test_memory_folds_a_long_message_as_the_widget_and_the_panel_do(ip):
    from nbmemory import Conversation

    Conversation(name="Big", memory_md_path=memory_path("Big")).add("User", "x" * 1_000_000)
    for line in ("Big", "Big --search xxx"):
        shown = memory(ip, line)
        assert "first 2,000 of 1,000,000 characters" in repr(shown)
        assert len(repr(shown)) < 3000 and len(shown._repr_markdown_()) < 3000
