"""The ``store`` setting of the magics and of the server extension, checked when it is set."""

from __future__ import annotations

from traitlets import TraitError

from nbmemory.errors import StoreConfigError
from nbmemory.store import workspace as memory_store
from nbmemory.store.masked_url import MaskedUrl


def checked_store(value: str, setting: str) -> MaskedUrl:
    """``value`` as a store setting whose password never shows; ``TraitError`` naming
    ``setting`` (``NbMemoryServer.store``) when it names no store nbmemory can use."""
    try:
        return MaskedUrl(memory_store.check(value))
    except StoreConfigError as exc:  # its message never holds the password
        raise TraitError(f"{setting}: {exc}") from None
