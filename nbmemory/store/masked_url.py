"""Store URLs without their passwords: for messages, for ``repr()`` in a notebook, and for the
front ends that show which database a workspace uses.

libpq's errors can quote a connection string whole, so whatever a message shows of a URL, or
quotes from psycopg, goes through :func:`hide_password` first.
"""

from __future__ import annotations

import itertools
import re
from urllib.parse import unquote, unquote_to_bytes

SCHEMES = ("postgresql", "postgres")


def is_database_url(url: str) -> bool:
    """Whether ``url`` names a PostgreSQL database (``postgresql://…`` or ``postgres://…``)."""
    scheme, separator, _ = url.partition("://")
    return bool(separator) and scheme.lower() in SCHEMES


def hide_password(text: str, url: str) -> str:
    """``text`` with every password that ``url`` may hold replaced by ``***``.

    Applied to whatever a message shows of the URL or quotes from psycopg, since libpq's errors
    can quote the connection string whole. It does not rely on the URL being valid: it hides
    the password of each way the URL could be read (its user information ending at the first
    ``@`` as libpq reads it, or at the last as a person who left an ``@`` of the password
    unencoded means it), every ``password=`` value of a query or a ``key=value`` string, each
    also percent-decoded (as UTF-8, as Latin-1, and as the bytes of escapes that are not UTF-8)
    and as ``repr()`` would escape it. Hiding too much is the safe side.
    """
    for secret in _secrets(url):
        text = text.replace(secret, "***")
    return text


def _secrets(url: str) -> list[str]:
    """The strings that ``hide_password`` hides for ``url``, longest first."""
    found: set[str] = set()
    rest = url.partition("://")[2] or url
    for end in (rest.find("@"), rest.rfind("@")):
        if end > 0:
            found.add(rest[:end].partition(":")[2])
    for match in _password_keys(url):
        tail = url[match.end() :]
        quoted = re.match(r"'((?:[^'\\]|\\.)*)'?", tail)
        if quoted:  # key=value style, quoted: 'a b\'c'
            found.update({quoted[0], quoted[1], re.sub(r"\\(.)", r"\1", quoted[1])})
        # up to a space (key=value), to the next parameter (a query), or to either
        for pattern in (r"\S*", r"[^&]*", r"[^&#\s]*"):
            found.add(re.match(pattern, tail)[0].rstrip())
    forms = set()
    for secret in found:
        # decoded as psycopg does, and as messages may quote escapes that are not UTF-8
        decoded = (
            unquote(secret),
            unquote(secret, "latin-1"),
            unquote(secret, errors="surrogateescape"),
        )
        for form in (secret, *decoded):
            forms.update({form, repr(form)[1:-1]})
        raw = unquote_to_bytes(secret.encode("utf-8", "surrogatepass"))
        forms.add(repr(raw)[2:-1])  # Qz7\xe9Kx9, as b'Qz7\xe9Kx9' shows it
    forms.discard("")
    return sorted(forms, key=len, reverse=True)


_KEY = re.compile(r"((?:\w|%[0-9A-Fa-f]{2})+)\s*=\s*")
"""A parameter's name and its ``=``: libpq percent-decodes names, so ``pass%77ord`` is one."""


def _password_keys(url: str) -> list[re.Match[str]]:
    """The ``password=`` (``sslpassword=``, …) of ``url``, however their names are written."""
    return [m for m in _KEY.finditer(url) if "password" in unquote(m[1], "latin-1").lower()]


def _without_password(url: str) -> str:
    """``url`` with its password replaced by ``***`` where it stands: the password of its user
    information (up to its last ``@``) and each ``password=`` value. Exact for a URL that
    ``PgStore`` accepts, where hiding every copy of a password such as ``postgres`` would also
    hide the scheme and the user; for one it refuses, ``hide_password`` then hides the rest."""
    head, separator, rest = url.partition("://")
    userinfo, _, where = rest.rpartition("@")
    user, colon, _ = userinfo.partition(":")
    if separator and colon:
        rest = f"{user}:***@{where}"
    url = head + separator + rest
    value = re.compile(r"'(?:[^'\\]|\\.)*'?|[^&\s]*")
    for key in reversed(_password_keys(url)):
        end = value.match(url, key.end()).end()
        url = f"{url[: key.end()]}***{url[end:]}"
    return url


def hidden_url(url: str) -> str:
    """A URL that ``PgStore`` refuses, for its message: without anything that may be a part
    of its password."""
    return hide_password(_without_password(url), url)


def is_ambiguous(url: str) -> bool:
    """Whether ``url`` has a password and an ``@`` or ``/`` before its last ``@``: a password
    with them unencoded. libpq would take part of it for the host or the database, and could
    show that part in its messages, where ``hide_password`` cannot tell it from a host name."""
    userinfo = url.partition("://")[2].rpartition("@")[0]
    return ":" in userinfo and ("@" in userinfo or "/" in userinfo)


def named_setting(setting: str) -> str:
    """A store setting that is not a database URL, for a message: quoted without its password
    if it looks like a URL (``scheme://…``), else not at all (it might be a password alone)."""
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", setting):
        return repr(hidden_url(setting))
    return "the store setting"


def shown_url(url: str) -> str:
    """The URL without its password, to name the database in messages: user, hosts, ports and
    database as libpq reads them (an unambiguous URL holds its password in none of them); or,
    if it cannot, the URL with its password hidden."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        parts = conninfo_to_dict(url)
    except Exception:
        return hidden_url(url)
    hosts = parts.get("host", "localhost").split(",")
    ports = parts.get("port", "").split(",")
    if len(ports) == 1:  # one port for every host
        ports *= len(hosts)
    hosts = [f"[{h}]" if ":" in h else h for h in hosts]  # an IPv6 address
    pairs = itertools.zip_longest(hosts, ports, fillvalue="")
    where = ",".join(f"{h}:{p}" if p else h for h, p in pairs)
    user = f"{parts['user']}@" if parts.get("user") else ""
    return f"postgresql://{user}{where}/{parts.get('dbname', '')}"


class MaskedUrl(str):
    """A store URL whose ``repr()`` hides its password: what the ``store`` settings hold, so
    that ``%config NbMemoryMagics`` and ``%config NbMemoryMagics.store`` show it without the
    password in a notebook's outputs. It is the URL itself otherwise (``str()``, comparisons)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return repr(_without_password(str(self)))
