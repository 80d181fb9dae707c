"""The README stays true: its contract copy, its test command and CI agree."""

from __future__ import annotations

import re
from pathlib import Path

from csro_tui.policies.contract import POLICY_CONTRACT

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_contract_is_the_contract_text():
    match = re.search(r"<!-- contract:start -->\n(.*?)<!-- contract:end -->", README, re.S)
    assert match, "README lost its contract markers"
    assert match.group(1) == POLICY_CONTRACT


def test_ci_runs_exactly_the_readme_test_command():
    commands = re.findall(r"^(\./install\.sh && .+)$", README, re.M)
    assert len(commands) == 2, commands
    test_command = commands[1]
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert test_command in ci_lines
