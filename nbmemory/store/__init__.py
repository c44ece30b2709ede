"""Storage: where agents' documents are kept, on files or in PostgreSQL, and the MEMORY.md format.

The public entry points are here: a :class:`Workspace` (a folder and its store) and the helpers
that name an agent's folder and memory in one (the environment's workspace by default). The
modules hold the rest, one idea each: ``workspace`` (choosing a store), ``docs`` (one agent's
documents in either store), ``folders`` (names, folders and safe opening on disk),
``memory_format`` and ``memory_file`` (the file's format and its writer), ``folder_lock``,
``archives``, ``atomic``, ``link_watch``, ``follow`` (reading a memory as it grows),
``layout`` (export and import), ``masked_url``, ``pg_connection``, ``pg_schema`` and
``postgresql`` (the database store).
"""

from nbmemory.store.workspace import Workspace, agent_dir, list_agents, memory_path, workspace_dir

__all__ = ["Workspace", "agent_dir", "list_agents", "memory_path", "workspace_dir"]
