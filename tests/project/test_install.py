"""install.sh survives a busy package lock and never skips the Python install.

The test copies install.sh into a scratch directory whose `.venv/bin/python`
is a stand-in that records its arguments (so nothing is downloaded), hides
`bwrap` from PATH so the script wants to install it, and holds dpkg's and
apt's locks the way apt does (fcntl record locks: `flock(1)` takes a
different kind of lock that apt does not see).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOCKS = ("/var/lib/dpkg/lock-frontend", "/var/lib/dpkg/lock", "/var/lib/apt/lists/lock")

needs_root_apt = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("apt-get") is None or not all(os.path.exists(p) for p in LOCKS),
    reason="needs root and apt-get (Debian/Ubuntu) to hold the package lock",
)


def _path_without(program: str, where: Path) -> str:
    """A PATH directory with every program of the current PATH except `program`."""
    where.mkdir()
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for entry in os.listdir(directory):
            target = os.path.join(directory, entry)
            link = where / entry
            if entry != program and not link.exists() and os.access(target, os.X_OK):
                link.symlink_to(target)
    return str(where)


def _scratch_checkout(tmp_path: Path) -> tuple[Path, Path]:
    checkout = tmp_path / "checkout"
    (checkout / ".venv" / "bin").mkdir(parents=True)
    shutil.copy(ROOT / "install.sh", checkout / "install.sh")
    calls = tmp_path / "python-calls.txt"
    fake = checkout / ".venv" / "bin" / "python"
    fake.write_text(f'#!/bin/sh\necho "$*" >> {calls}\n')
    fake.chmod(0o755)
    return checkout, calls


@needs_root_apt
def test_a_held_package_lock_costs_bubblewrap_not_the_python_install(tmp_path):
    checkout, calls = _scratch_checkout(tmp_path)
    env = {**os.environ, "PATH": _path_without("bwrap", tmp_path / "bin"), "CSRO_APT_LOCK_TIMEOUT": "3"}
    handles = [open(path, "a") for path in LOCKS]
    try:
        for handle in handles:
            try:
                fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pytest.skip(f"another process holds {handle.name} already")
        result = subprocess.run(["bash", str(checkout / "install.sh")], env=env, capture_output=True,
                                text=True, timeout=120)
    finally:
        for handle in handles:
            handle.close()
    assert result.returncode == 0, result.stderr
    assert "waiting up to 3s for the package lock" in result.stderr
    assert "note: could not install bubblewrap" in result.stderr
    assert "rlimits-only sandbox" in result.stderr
    assert calls.read_text().splitlines() == ["-m pip install -q --upgrade pip", "-m pip install -q -e .[test]"]


def test_without_root_the_python_install_still_runs(tmp_path):
    checkout, calls = _scratch_checkout(tmp_path)
    bin_dir = _path_without("bwrap", tmp_path / "bin")
    fake_id = Path(bin_dir) / "id"  # install.sh asks `id -u` whether it is root
    fake_id.unlink(missing_ok=True)
    fake_id.write_text("#!/bin/sh\necho 1000\n")
    fake_id.chmod(0o755)
    result = subprocess.run(["bash", str(checkout / "install.sh")], env={**os.environ, "PATH": bin_dir},
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    if shutil.which("apt-get"):
        assert "not root" in result.stderr and "rlimits-only sandbox" in result.stderr
    assert "-m pip install -q -e .[test]" in calls.read_text()


def test_the_header_promises_only_what_the_script_installs():
    header = "".join(line for line in (ROOT / "install.sh").read_text().splitlines(keepends=True)[:12]
                     if line.startswith("#"))
    assert "tmux" not in header and "bubblewrap" in header
