"""Test-session settings shared by the unit tests and the notebooks run by nbval."""

import os
import tempfile


def pytest_configure(config):
    """Run everything (notebook kernels too) on a fresh workspace and the offline model."""
    os.environ["WORKSPACE_DIR"] = tempfile.mkdtemp(prefix="nbmemory-tests-")
    os.environ.pop("NBMEMORY_MODEL", None)
