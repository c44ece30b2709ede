"""The REST API under concurrent requests: slow reads hold up no one else's requests.

The server runs in the test's process (pytest-jupyter's ``jp_fetch``), so a read can be held
at a gate: what finishes first while it is held is an order of events, not a measured time.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading

import pytest
from traitlets.config import Config

from nbmemory import Conversation
from nbmemory.jupyter.server.workers import HEAVY_WORKERS, HeavyReads
from nbmemory.store import memory_path
from nbmemory.views.read_model import ReadModel

pytest_plugins = ["pytest_jupyter.jupyter_server"]

RELEASE_AFTER = 15.0
"""Seconds after which a held read goes on anyway, so that a failing test ends."""


@pytest.fixture
def jp_server_config() -> Config:
    return Config({"ServerApp": {"jpserver_extensions": {"nbmemory": True}}})


class Gate:
    """Holds every ``ReadModel.compactions`` call until :meth:`open`; counts those inside."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.opened = threading.Event()
        self.inside = 0
        self.most_inside = 0
        self._lock = threading.Lock()
        original = ReadModel.compactions

        def held(model: ReadModel, name: str) -> list:
            with self._lock:
                self.inside += 1
                self.most_inside = max(self.most_inside, self.inside)
            self.opened.wait()
            with self._lock:
                self.inside -= 1
            return original(model, name)

        monkeypatch.setattr(ReadModel, "compactions", held)
        self._timer = threading.Timer(RELEASE_AFTER, self.opened.set)
        self._timer.start()

    async def reached(self) -> None:
        while not self.most_inside:
            await asyncio.sleep(0.01)

    def open(self) -> None:
        self._timer.cancel()
        self.opened.set()


def scout() -> None:
    convo = Conversation(name="Scout", memory_md_path=memory_path("Scout"))
    for i in range(10):
        convo.add("User", f"Ticket ACME-{i} is open.")
    convo.compact("Ten tickets are open.")
    convo.add("User", "And one more.")


async def test_an_unrelated_request_is_answered_while_heavy_reads_are_held(jp_fetch, monkeypatch):
    scout()
    gate = Gate(monkeypatch)
    # More heavy reads than the server's shared pool has threads (asyncio's default).
    heavy = [
        asyncio.ensure_future(jp_fetch("nbmemory", "api", "agents", "Scout", "compactions"))
        for _ in range(min(32, (os.cpu_count() or 1) + 4) + 1)
    ]
    await gate.reached()
    page = asyncio.ensure_future(
        jp_fetch("nbmemory", "api", "agents", "Scout", params={"limit": "1"})
    )
    done, _ = await asyncio.wait([page, *heavy], return_when=asyncio.FIRST_COMPLETED)
    answered_first = page in done
    gate.open()
    answers = await asyncio.gather(*heavy)
    assert answered_first
    assert json.loads((await page).body)["items"][0]["text"] == "And one more."
    expected = [c.to_json() for c in ReadModel().compactions("Scout")]
    assert all(json.loads(a.body)["compactions"] == expected for a in answers)
    # Each request without a cookie is a new anonymous user: the pool bounds them all.
    assert gate.most_inside == HEAVY_WORKERS


async def test_one_users_heavy_reads_wait_for_each_other_not_for_another_users():
    reads = HeavyReads(workers=2, per_user=1)
    started = {"ann": asyncio.Event(), "bob": asyncio.Event()}
    release = asyncio.Event()

    async def read(user: str) -> str:
        async with reads.turn(user):
            started[user].set()
            await release.wait()
            return user

    first = asyncio.ensure_future(read("ann"))
    second = asyncio.ensure_future(read("ann"))
    await started["ann"].wait()
    other = asyncio.ensure_future(read("bob"))
    await started["bob"].wait()  # Bob's read runs while Ann's second one waits its turn
    assert not second.done() and len(reads) == 2
    release.set()
    assert await asyncio.gather(first, second, other) == ["ann", "ann", "bob"]
    assert len(reads) == 0  # no user is remembered once their reads are done
    reads.shutdown()
