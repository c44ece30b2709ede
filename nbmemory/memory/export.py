"""A memory's messages as a JSON, YAML or Markdown document (JSON and YAML load back)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from nbmemory.store.memory_format import format_block, format_header

FORMATS = ("json", "yaml", "md")


def format_of(path: str | os.PathLike[str]) -> str:
    """The format a file name asks for: by suffix, Markdown when it says nothing."""
    return {".json": "json", ".yaml": "yaml", ".yml": "yaml"}.get(Path(path).suffix.lower(), "md")


def export_text(name: str, messages: list[dict[str, Any]], form: str) -> str:
    """The messages of memory ``name`` as a document; ``Conversation.load`` reads JSON and YAML.

    The same messages always give the same document: a Markdown export is dated by its first
    message (now, only when there is none).
    """
    if form == "md":
        blocks = (format_block(m["role"], m["content"], m.get("timestamp", "")) for m in messages)
        created = str(messages[0].get("timestamp") or "") if messages else ""
        return format_header(name, created or None) + "".join(blocks)
    plain = json.loads(json.dumps(messages, default=str))
    if form == "json":
        return json.dumps(plain, indent=2, ensure_ascii=False) + "\n"
    if form == "yaml":
        import yaml

        return yaml.safe_dump(plain, allow_unicode=True, sort_keys=False)
    raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {form!r}")
