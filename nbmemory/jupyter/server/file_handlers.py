"""A memory as a file: where it is (``/path``, for JupyterLab to open it) and the file itself to
download (``/export``, as ``nbmemory export`` writes it).
"""

from __future__ import annotations

import os
import urllib.parse
from pathlib import Path
from typing import Any

import tornado.web
from jupyter_server.auth.decorator import authorized

from nbmemory.jupyter.server.base_handler import NbMemoryHandler
from nbmemory.memory.export import FORMATS, export_text


class PathHandler(NbMemoryHandler):
    """Where an agent's MEMORY.md (or one of its archives) is: its absolute path and, when
    JupyterLab can open it, its path from the Jupyter server's root folder; else why not."""

    @tornado.web.authenticated
    @authorized("read")
    async def get(self, name: str) -> None:
        archive = self.get_query_argument("archive", None) or None
        if await self.not_modified(name, archive):
            return
        manager = self.contents_manager
        root = Path(os.path.realpath(manager.root_dir))

        def locate() -> dict[str, Any]:
            path = self.model.file_path(name, archive)
            relative, why = None, None
            real = Path(os.path.realpath(path))
            kept = self.model.store
            if kept != "files":
                why = (
                    f"{path.name} is kept in the database {kept}, not in a file JupyterLab can "
                    "open: export it (Export in this menu, or nbmemory export --layout FOLDER)"
                )
            else:
                try:
                    inside = real.relative_to(root)
                except ValueError:
                    why = (
                        f"{path} is outside the Jupyter server's root folder {root}, so "
                        "JupyterLab cannot open it; open it by its path instead"
                    )
                else:
                    hidden = [part for part in inside.parts if part.startswith(".")]
                    if hidden and not getattr(manager, "allow_hidden", False):
                        why = (
                            f"{path} is in the hidden folder {hidden[0]!r}, and JupyterLab opens "
                            "hidden files only with ContentsManager.allow_hidden = True"
                        )
                    else:
                        relative = inside.as_posix()
            return {
                "name": name,
                "archive": archive,
                "absolute": str(path),
                "relative": relative,
                "root": str(root),
                "exists": path.is_file() if kept == "files" else True,  # it was found
                "reason": why,
            }

        self.reply(await self.in_thread(locate))


EXPORT_TYPES = {
    "json": "application/json; charset=utf-8",
    "yaml": "application/yaml; charset=utf-8",
    "md": "text/markdown; charset=utf-8",
}


class ExportHandler(NbMemoryHandler):
    """The memory (or an archive) as ``nbmemory export`` writes it, to download."""

    @tornado.web.authenticated
    @authorized("read")
    async def get(self, name: str) -> None:
        form = self.get_query_argument("format", "md")
        if form not in FORMATS:
            raise tornado.web.HTTPError(
                400, f"format must be one of {', '.join(FORMATS)}, not {form!r}"
            )
        archive = self.get_query_argument("archive", None) or None
        if await self.not_modified(name, form, archive):
            return
        text = await self.in_thread(
            lambda: export_text(name, self.model.records(name, archive), form)
        )
        stem = name if archive is None else f"{name}-{Path(archive).stem}"
        filename = f"{stem}.{form}"
        plain = "".join(
            c if c.isascii() and c.isprintable() and c not in '"\\' else "_" for c in filename
        )
        self.set_header("Content-Type", EXPORT_TYPES[form])
        self.set_header(
            "Content-Disposition",
            f'attachment; filename="{plain}"; '
            f"filename*=UTF-8''{urllib.parse.quote(filename, safe='')}",
        )
        self.timing()
        self.finish(text.encode("utf-8"))
