import subprocess
import sys

from support import ROOT


def test_ruff_finds_nothing_to_fix():
    check = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "."], cwd=ROOT, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout
    fmt = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert fmt.returncode == 0, fmt.stdout
