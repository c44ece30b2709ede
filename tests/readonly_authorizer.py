"""A Jupyter authorizer for the server tests: anything but "write" on nbmemory's resource.

Started with ``--ServerApp.authorizer_class=readonly_authorizer.ReadOnlyAuthorizer`` (this
folder on ``PYTHONPATH``), it shows that compaction is authorized apart from reading.
"""

from jupyter_server.auth import Authorizer


class ReadOnlyAuthorizer(Authorizer):
    """Deny the action ``write`` on the resource ``nbmemory``; allow everything else."""

    def is_authorized(self, handler, user, action, resource):
        return not (resource == "nbmemory" and action == "write")
