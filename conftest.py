"""Test-session settings shared by the unit tests and the notebooks run by nbval."""

import os
import shutil
import tempfile
from pathlib import Path

_WORKSPACE = tempfile.mkdtemp(prefix="nbmemory-tests-")


def pytest_configure(config):
    """Run everything (notebook kernels too) on a fresh workspace and the offline model."""
    os.environ["WORKSPACE_DIR"] = _WORKSPACE
    os.environ.pop("NBMEMORY_MODEL", None)
    here = str(Path(__file__).parent)  # so that notebook kernels import this checkout
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))


def pytest_unconfigure(config):
    """Leave nothing behind: the session's workspace goes with it."""
    shutil.rmtree(_WORKSPACE, ignore_errors=True)
