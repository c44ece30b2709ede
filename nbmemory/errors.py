"""The exceptions and warnings nbmemory raises, in one place so callers can catch them."""

from __future__ import annotations


class NbmemoryError(Exception):
    """Base class of every error nbmemory raises on purpose."""


class InvalidAgentNameError(NbmemoryError, ValueError):
    """An agent name that cannot safely name a folder; the message says which rule it broke."""


class InvalidDocumentNameError(NbmemoryError, ValueError):
    """A document name (``archive/history_….md``) that could lead outside its agent's folder:
    absolute, with ``..``, empty parts or control characters. Nothing is written under it."""


class ExportIncompleteError(NbmemoryError):
    """An export stopped part way; the message says which agents are complete. Running the
    same export again finishes it."""


class MemoryFormatError(NbmemoryError, ValueError):
    """A conversation file that cannot be read as a list of messages."""


class MemoryWarning(UserWarning):
    """A memory file was damaged; what could be read was kept and the file was left as it is."""


class ModelError(NbmemoryError):
    """A call to a language model failed; the message keeps what the provider said."""

    def __init__(self, message: str, *, model: str | None = None) -> None:
        super().__init__(message)
        self.model = model


class MissingKeyError(ModelError):
    """The model needs an API key that is not set; ``variables`` names what to set."""

    def __init__(self, model: str, variables: list[str]) -> None:
        names = " and ".join(variables)
        super().__init__(
            f"{model} needs {names}: set it in the environment or pass api_key=", model=model
        )
        self.variables = variables


class AuthenticationError(ModelError):
    """The provider refused the API key."""


class RateLimitError(ModelError):
    """The provider asked to slow down, and retrying did not help."""


class ModelTimeoutError(ModelError, TimeoutError):
    """The model did not answer in time."""


class ProviderError(ModelError):
    """Any other failure reported by the provider or on the way to it."""


class AgentNotFoundError(NbmemoryError, LookupError):
    """No agent of that name has a memory in the workspace."""


class ArchiveNotFoundError(NbmemoryError, LookupError):
    """The agent has no archive of that name."""


class NotesFullError(NbmemoryError):
    """Pinned notes would go over their token budget; nothing was written."""


class NoteNotFoundError(NbmemoryError, LookupError):
    """No pinned note matches what was asked for."""


class NoteChangedError(NbmemoryError):
    """The note at the number asked for is no longer the one expected (the notes changed since
    they were shown); nothing was unpinned."""


class CompactionError(NbmemoryError):
    """An agent's memory was not compacted; the message says why. Nothing was changed."""


class InvalidNoteError(NbmemoryError, ValueError):
    """A note that cannot be pinned, such as an empty one."""


class UnsafeFileError(NbmemoryError, OSError):
    """A path nbmemory will not use: a link (which could lead outside the workspace), a FIFO, a
    device, or a folder where a file should be. Nothing was read or written through it."""


class MemoryWriteError(NbmemoryError, OSError):
    """A message could not be written (a full disk, a file size limit); it is not in memory and
    the file is as it was before. The message names the file and the cause."""


class InvalidTextError(NbmemoryError, ValueError):
    """Text that cannot be stored as UTF-8 (it holds a lone surrogate); nothing was written."""


class MessageTooLargeError(NbmemoryError, ValueError):
    """Text sent to be stored that is over the size a message may have
    (``docs.MAX_MESSAGE_BYTES``); nothing was written."""


class StoreError(NbmemoryError):
    """The memory store (a PostgreSQL database) could not be used; the message says what to fix.
    Nothing was half-written: each change is one transaction."""


class StoreConfigError(StoreError, ValueError):
    """The store setting is not a URL nbmemory can use (``$NBMEMORY_STORE``, ``--store``)."""


class StoreUnavailableError(StoreError, ConnectionError):
    """The database could not be reached, or the connection dropped; a change that raised this
    was not acknowledged (retry it once the database is back)."""


class StorePermissionError(StoreError, PermissionError):
    """The database role may not do what was asked (a read-only role asked to write)."""


class StoreSchemaError(StoreError):
    """The database holds nbmemory tables of a version this nbmemory does not know."""
