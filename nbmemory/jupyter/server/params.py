"""Checks on what a client sends: whole numbers, the limits of a page, the size of a text to store.

A client may send anything, megabytes included: each check answers one clear line, with the
value it refused cut short, and nothing is read or written.
"""

from __future__ import annotations

import re

import tornado.web

from nbmemory.errors import MessageTooLargeError
from nbmemory.store.docs import check_size

MAX_LIMIT = 200
"""The largest page a client gets, whatever ``limit`` it asks for."""
MAX_FOLD = 100_000

_WHOLE = re.compile(r"-?[0-9]{1,18}")


def whole_number(raw: str) -> int | None:
    """``raw`` as a whole number, if it is one written in ASCII digits (``int`` takes other
    scripts' digits and ``1_000``, ``str.isdigit`` takes ``'²'``) that fits a database's bigint."""
    return int(raw) if _WHOLE.fullmatch(raw.strip()) else None


def quoted_excerpt(raw: str) -> str:
    """``raw`` quoted for an error message, cut short: a client may send megabytes."""
    return repr(raw if len(raw) <= 40 else raw[:40] + "…")


def refuse_oversized(text: str, what: str) -> None:
    """413 if ``text``, sent to be stored, is over the size of a message
    (``docs.MAX_MESSAGE_BYTES``)."""
    try:
        check_size(text, what)
    except MessageTooLargeError as exc:
        raise tornado.web.HTTPError(413, str(exc)) from None
