"""scripts/local-llm.sh: its usage without an argument, under `set -u` (issue 28)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "local-llm.sh"


def _run(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    # Its state directory in tmp_path, so `status` reads nothing of a real server.
    env = {**os.environ, "CSRO_LLM_DIR": str(tmp_path / "state"), "LOCAL_LLM_PORT": "18089"}
    return subprocess.run(["bash", str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=30)


def test_no_argument_prints_the_usage_not_an_unbound_variable(tmp_path):
    result = _run(tmp_path=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("usage: ") and "install|start|stop|status|url" in result.stderr
    assert "unbound variable" not in result.stderr


def test_help_prints_the_usage_and_succeeds(tmp_path):
    result = _run("--help", tmp_path=tmp_path)
    assert result.returncode == 0 and result.stdout.startswith("usage: ")


def test_an_unknown_command_prints_the_usage(tmp_path):
    result = _run("bogus", tmp_path=tmp_path)
    assert result.returncode == 2 and result.stderr.startswith("usage: ")


def test_a_command_still_runs(tmp_path):
    result = _run("status", tmp_path=tmp_path)
    assert result.returncode == 0 and result.stdout.strip() == "not running"
