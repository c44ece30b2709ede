"""Store URLs shown without their passwords, however a message quotes them."""

import urllib.parse

from nbmemory.store.masked_url import MaskedUrl, hide_password
from nbmemory.store.postgresql import PgStore
from support import leaks


def test_a_password_is_hidden_in_every_form_its_escapes_may_be_quoted_in():
    """Escapes that decode to bytes that are not UTF-8: a message may quote them as bytes
    (``b'Qz7\\xe9Kx9'``, as a ``UnicodeDecodeError`` does), decoded one byte a character, or
    with each bad byte replaced."""
    url = "postgresql://u:Qz7%E9Kx9@db.example/agents?sslmode=require&password=Wy5%FF%C3Tv3"
    for password in ("Qz7%E9Kx9", "Wy5%FF%C3Tv3"):
        raw = urllib.parse.unquote_to_bytes(password)
        quoted = [
            repr(raw),
            repr(UnicodeDecodeError("utf-8", raw, 3, 4, "invalid continuation byte")),
            raw.decode("latin-1"),
            repr(raw.decode("latin-1")),
            raw.decode("utf-8", "replace"),
            raw.decode("utf-8", "surrogateescape"),
            repr(raw.decode("utf-8", "surrogateescape")),
        ]
        for said in quoted:
            assert leaks(password, hide_password(said, url)) == [], said


def test_a_store_setting_shows_itself_without_its_password():
    url = MaskedUrl("postgresql://team:Qz7Kx9@db.example:5432/agents?password=Qz7Kx9")
    assert url == "postgresql://team:Qz7Kx9@db.example:5432/agents?password=Qz7Kx9"
    assert str(url) == url and f"{url}".startswith("postgresql://team:Qz7Kx9@")
    assert repr(url) == "'postgresql://team:***@db.example:5432/agents?password=***'"
    assert repr(MaskedUrl("")) == "''"


def test_a_password_parameter_is_hidden_however_its_name_is_written():
    """libpq percent-decodes parameter names: ``pass%77ord`` is ``password``."""
    url = "postgresql://team@db.example/agents?pass%77ord=Qz7Kx9&ssl%70assword=Wy5Tv3"
    assert PgStore(url).shown == "postgresql://team@db.example/agents"
    assert repr(MaskedUrl(url)) == (
        "'postgresql://team@db.example/agents?pass%77ord=***&ssl%70assword=***'"
    )
    said = hide_password(f"{url} failed: password Qz7Kx9, key Wy5Tv3", url)
    assert leaks("Qz7Kx9", said) == leaks("Wy5Tv3", said) == []
