"""The REST API, served by a real JupyterLab started for the test."""

import json
import shutil
import urllib.error
import urllib.request

import pytest

from browser import jupyter_lab, server_extension_on
from nbmemory import Conversation
from nbmemory.memory_file import parse
from nbmemory.workspace import memory_path


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """One JupyterLab for the module, with the extension on and its own workspace."""
    root = tmp_path_factory.mktemp("lab")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WORKSPACE_DIR", str(root / "workspace"))
        with jupyter_lab(root, extra_args=(server_extension_on(root),)) as server:
            server.workspace = root / "workspace"
            yield server


@pytest.fixture
def agents(lab, monkeypatch):
    """Two agents in the server's workspace, made afresh for each test."""
    shutil.rmtree(lab.workspace, ignore_errors=True)
    monkeypatch.setenv("WORKSPACE_DIR", str(lab.workspace))
    scout = Conversation(name="Scout", memory_md_path=memory_path("Scout"))
    for i in range(30):
        scout.add("User" if i % 2 else "Scout", f"note {i} about the budget")
    scout.compact("Budget notes summarized.")
    scout.add("User", "<img src=x onerror=alert(1)>")
    Conversation(name="Writer", memory_md_path=memory_path("Writer")).add("User", "memo")
    return lab.workspace


def call(lab, path, *, token=True, body=None):
    headers = {"Authorization": f"token {lab.token}"} if token else {}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(f"{lab.url}/nbmemory/api{path}", data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        text = error.read()
        return error.code, (json.loads(text) if text.startswith(b"{") else text)


def test_every_endpoint_needs_the_token(lab, agents):
    for path in ["/agents", "/agents/Scout", "/agents/Scout/archives", "/agents/Scout/search?q=x"]:
        assert call(lab, path, token=False)[0] == 403
    assert call(lab, "/agents/Scout/compact", token=False, body={"summary": "x"})[0] == 403
    assert len(parse(memory_path("Scout").read_bytes()).messages) == 2


def test_agents_are_listed(lab, agents):
    status, data = call(lab, "/agents")
    assert status == 200 and data["workspace"] == str(agents)
    assert [(a["name"], a["messages"], a["archives"]) for a in data["agents"]] == [
        ("Scout", 2, 1),
        ("Writer", 1, 0),
    ]
    assert all(a["tokens"] > 0 and a["size"] > 0 and a["last_activity"] for a in data["agents"])


def test_messages_come_a_page_at_a_time(lab, agents):
    status, data = call(lab, "/agents/Scout?page_size=1")
    assert status == 200 and (data["total"], len(data["messages"])) == (2, 1)
    assert data["messages"][0]["content"] == "<img src=x onerror=alert(1)>"
    archive = call(lab, "/agents/Scout/archives")[1]["archives"][0]
    assert archive["messages"] == 30
    _, page = call(
        lab, f"/agents/Scout/archives/{archive['name']}?page=1&page_size=10&newest_first=0"
    )
    assert [m["content"] for m in page["messages"]] == [
        f"note {i} about the budget" for i in range(10, 20)
    ]


def test_search_within_an_agent_and_its_archives(lab, agents):
    _, found = call(lab, "/agents/Scout/search?q=BUDGET")
    assert [h["source"] for h in found["hits"]] == ["MEMORY.md"]
    _, found = call(lab, "/agents/Scout/search?q=budget&archives=1")
    assert len(found["hits"]) == 31
    assert call(lab, "/agents/Scout/search?q=")[0] == 400


def test_compaction_through_the_api_leaves_an_archive(lab, agents):
    status, data = call(lab, "/agents/Writer/compact", body={"summary": "Memo drafted."})
    assert status == 200 and data["archive"].startswith("history_")
    assert data["tokens_after"] > 0
    assert (agents / "agents" / "Writer" / "archive" / data["archive"]).exists()
    assert (
        parse(memory_path("Writer").read_bytes()).messages[0]["content"].endswith("Memo drafted.")
    )
    assert call(lab, "/agents/Writer/compact", body={"summary": " "})[0] == 400


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/agents/Nobody", 404),
        ("/agents/..", 400),
        ("/agents/%2e%2e", 400),
        ("/agents/%2e%2e%2fetc", 400),
        ("/agents/%2Fetc%2Fpasswd", 400),
        ("/agents/Scout/archives/..%2f..%2fMEMORY.md", 404),
        ("/agents/Scout/archives/history_none.md", 404),
        ("/agents/Scout?page=x", 400),
    ],
)
def test_bad_names_never_reach_outside_the_workspace(lab, agents, path, status):
    code, data = call(lab, path)
    assert code == status
    assert isinstance(data, dict) and data["error"]
