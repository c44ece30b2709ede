"""The routes that read an agent: the list of agents, a page of messages, one whole message,
tokens per message, archives, compactions, search and find.

Each answers JSON from :class:`~nbmemory.views.read_model.ReadModel`, or ``304`` when the
client's ``ETag`` is still the answer (see :mod:`nbmemory.jupyter.server.base_handler`).
"""

from __future__ import annotations

import asyncio

import tornado.web
from jupyter_server.auth.decorator import authorized

from nbmemory.jupyter.server.base_handler import NbMemoryHandler, items_json
from nbmemory.jupyter.server.params import MAX_FOLD, MAX_LIMIT, quoted_excerpt, whole_number
from nbmemory.wording import FOLD_CHARS, vocabulary


class AgentsHandler(NbMemoryHandler):
    @tornado.web.authenticated
    @authorized("read")
    async def get(self) -> None:
        poll = self.settings["nbmemory_poll_interval"]
        if await self.not_modified(None, poll):
            return
        warm = self.settings["nbmemory_warm_up"]
        if not warm.done.is_set():  # read them once, not twice at once
            await asyncio.to_thread(warm.done.wait)
        agents = warm.take(self.read_at)
        if agents is None:
            agents = await self.in_thread(self.model.agents)
        self.reply(
            {
                "workspace": str(self.model.root),
                "store": self.model.store,
                "poll_interval": poll,
                "agents": [info.to_json() for info in agents],
                "vocabulary": vocabulary(),
            }
        )


class AgentHandler(NbMemoryHandler):
    @tornado.web.authenticated
    @authorized("read")
    async def get(self, name: str) -> None:
        paging = self.paging(newest_first=True)
        if await self.not_modified(name, paging):
            return
        self.reply(await self.page_json(name, None, paging))


class MessageHandler(NbMemoryHandler):
    @tornado.web.authenticated
    @authorized("read")
    async def get(self, name: str, index: str) -> None:
        number = whole_number(index)
        if number is None or number < 0:
            raise tornado.web.HTTPError(
                400, f"a message index is a whole number from 0, not {quoted_excerpt(index)}"
            )
        archive = self.get_query_argument("archive", None) or None
        if await self.not_modified(name, archive):
            return
        item = await self.in_thread(self.model.message, name, number, archive)
        self.reply({"name": name, "archive": archive, **item.to_json()})


class TokensHandler(NbMemoryHandler):
    """Tokens per message, on demand: ``indexes`` (at most ``MAX_LIMIT``, comma-separated;
    all of the file's without it), counted as the agent's model reads them."""

    @tornado.web.authenticated
    @authorized("read")
    async def get(self, name: str) -> None:
        archive = self.get_query_argument("archive", None) or None
        raw = self.get_query_argument("indexes", None)
        indexes = None
        if raw is not None:
            numbers = [whole_number(word) for word in raw.split(",") if word.strip()]
            if not all(number is not None and number >= 0 for number in numbers):
                raise tornado.web.HTTPError(
                    400,
                    f"indexes must be whole numbers separated by commas, not {quoted_excerpt(raw)}",
                )
            if len(numbers) > MAX_LIMIT:
                raise tornado.web.HTTPError(400, f"at most {MAX_LIMIT} indexes at a time")
            indexes = numbers
        if await self.not_modified(name, archive, indexes):
            return
        counted = await self.in_thread(self.model.message_tokens, name, indexes, archive)
        self.reply({"name": name, "archive": archive, **counted.to_json()})


class ArchivesHandler(NbMemoryHandler):
    @tornado.web.authenticated
    @authorized("read")
    async def get(self, name: str) -> None:
        if await self.not_modified(name):
            return
        archives = await self.in_thread(self.model.archives, name)
        self.reply(
            {
                "name": name,
                "archives": [archive.to_json() for archive in archives],
            }
        )


class CompactionsHandler(NbMemoryHandler):
    @tornado.web.authenticated
    @authorized("read")
    async def get(self, name: str) -> None:
        if await self.not_modified(name):
            return
        compactions = await self.heavy(self.model.compactions, name)
        self.reply({"name": name, "compactions": [c.to_json() for c in compactions]})


class ArchiveHandler(NbMemoryHandler):
    @tornado.web.authenticated
    @authorized("read")
    async def get(self, name: str, archive: str) -> None:
        paging = self.paging(newest_first=False)
        if await self.not_modified(name, paging):
            return
        self.reply({"archive": archive, **await self.page_json(name, archive, paging)})


class SearchHandler(NbMemoryHandler):
    @tornado.web.authenticated
    @authorized("read")
    async def get(self, name: str) -> None:
        query = self.get_query_argument("q", "")
        if not query.strip():
            raise tornado.web.HTTPError(400, "q must not be empty")
        archives = self.bool_arg("archives", False)
        offset = self.int_arg("offset", 0, 0)
        limit = self.int_arg("limit", 50, 1, MAX_LIMIT)
        fold = self.int_arg("fold", FOLD_CHARS, 1, MAX_FOLD)
        role = self.role_arg()
        if await self.not_modified(name, query, archives, offset, limit, fold, role):
            return
        found = await self.in_thread(
            self.model.search,
            name,
            query,
            archives=archives,
            offset=offset,
            limit=limit,
            fold=fold,
            role=role,
        )
        self.reply(
            {
                "name": name,
                "query": found.query,
                "archives": archives,
                "role": role,
                "total": found.total,
                "offset": found.offset,
                "limit": limit,
                "items": items_json(found.items),
            }
        )


class FindHandler(NbMemoryHandler):
    """Which page of MEMORY.md or ``archive`` holds ``term`` first (``ReadModel.find``)."""

    @tornado.web.authenticated
    @authorized("read")
    async def get(self, name: str) -> None:
        term = self.get_query_argument("term", "")
        if not term.strip():
            raise tornado.web.HTTPError(400, "term must not be empty")
        archive = self.get_query_argument("archive", None) or None
        limit = self.int_arg("limit", 20, 1, MAX_LIMIT)
        newest_first = self.bool_arg("newest_first", False)
        role = self.role_arg()
        if await self.not_modified(name, term, archive, limit, newest_first, role):
            return
        found = await self.in_thread(
            self.model.find,
            name,
            term,
            archive,
            limit=limit,
            newest_first=newest_first,
            role=role,
        )
        self.reply({"name": name, **found.to_json()})
