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
    # CI runs the command's steps in order (with set-up of its own between
    # them: the Ray head and the local model for the tests that need them).
    steps = commands[1].split(" && ")
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    positions = [ci_lines.index(step) for step in steps if step in ci_lines]
    assert len(positions) == len(steps) and positions == sorted(positions), (steps, ci_lines)


def test_the_contract_section_points_to_csro_games():
    intro = README.split("<!-- contract:start -->")[0].rsplit("## The policy contract", 1)[1]
    assert "`csro games GAME`" in intro and "example observation" in intro


def test_the_review_script_format_is_documented_with_an_example(tmp_path):
    from csro_tui.reviewers import load_script

    match = re.search(r"`--review script:FILE`.*?```json\n(.*?)```", README, re.S)
    assert match, "README lost the review-script example"
    script = tmp_path / "review.jsonl"
    script.write_text(match.group(1))
    (tmp_path / "my_fix.py").write_text("class Policy:\n    pass\n")
    actions = [decision.action for decision in load_script(script)]
    assert actions == ["reject", "accept", "edit"]
