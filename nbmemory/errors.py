"""The exceptions and warnings nbmemory raises, in one place so callers can catch them."""

from __future__ import annotations


class NbmemoryError(Exception):
    """Base class of every error nbmemory raises on purpose."""


class InvalidAgentNameError(NbmemoryError, ValueError):
    """An agent name that cannot safely name a folder; the message says which rule it broke."""


class MemoryFormatError(NbmemoryError, ValueError):
    """A conversation file that cannot be read as a list of messages."""


class MemoryWarning(UserWarning):
    """A memory file was damaged; what could be read was kept and the file was left as it is."""
