"""The manual stays true: README.md and the docs/ pages, run literally.

Every command in a ```bash block of the README and of the docs/ pages below
is run here as written (with `.venv/bin/csro` / `.venv/bin/python` meaning
this interpreter's csro), in a fresh directory, unless it is listed in
EXCEPTIONS with the reason (the Ray, model and minutes-long commands).  A new
command in the manual is therefore run by default.  The examples (the
hand-written policy, the csro.toml files, the review script) are used as
the files those commands read, and what the prose claims about their output
is checked.  Synopses in tables (`csro replay SESSION [--step K]`) are not
commands and are not run.
"""

from __future__ import annotations

import re
import shlex
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from csro_tui.sandbox.contract import POLICY_CONTRACT

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
# The pages the docs engineer owns (SECURITY.md and ARCHITECTURE.md hold no
# user commands of their own).
PAGES = ["README.md"] + [
    f"docs/{name}.md"
    for name in (
        "workbench", "oracles", "games", "policies", "sessions",
        "configuration", "experiments", "behaviour", "sandbox", "performance",
    )
]

# Commands not run here, by a pattern they match, with why.
EXCEPTIONS = {
    r"^\./install\.sh && \.venv/bin/python -m pytest": "the test suite itself (.ci/run runs it)",
    r"^\./install\.sh$": "the install itself (.ci/run runs it; tests/project/test_install.py tests it)",
    r"^\.venv/bin/csro$": "the TUI is interactive; tests/tui drives it (the README's walk-through was driven in tmux)",
    r"^\.venv/bin/csro SESSION$": "the TUI (tests/tui opens recorded sessions)",
    r"^\.venv/bin/csro --game": "the TUI (tests/tui starts sessions from flags)",
    r"--oracle llm": "needs an LLM server (tests/oracles/test_llm_oracles.py uses a scripted one)",
    r"^export OPENAI_API_KEY": "a real API key",
    r"^ollama ": "Ollama is not installed here",
    r"^scripts/local-llm\.sh": "the local model: a ~1.1 GB download and a long build (.ci/run starts it)",
    r"pip install": "network installs (the ray and bench extras)",
    r"ray start|--backend ray": "needs a Ray cluster (tests/evaluation/test_ray_backend.py, with .ci/run's Ray head)",
    r"^\.venv/bin/python -m bench": "benchmarks take minutes (bench/README.md)",
    r"oracles-sweep\.toml": "the paper-shaped sweep takes minutes (its output is shown)",
}



def _csro_prefix() -> str:
    return f"{shlex.quote(sys.executable)} -m csro_tui.cli"


def bash_commands(page: str) -> list[str]:
    """The commands of a page's ```bash blocks: continuation lines joined, comments dropped."""
    text = (ROOT / page).read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        block = block.replace("\\\n", " ")
        for line in block.splitlines():
            line = re.sub(r"\s+#\s.*$", "", line).strip()
            if line and not line.startswith("#"):
                commands.append(re.sub(r"\s+", " ", line))
    return commands


def _reason_not_run(command: str) -> str | None:
    for pattern, reason in EXCEPTIONS.items():
        if re.search(pattern, command):
            return reason
    return None


def blocks(page: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", (ROOT / page).read_text(encoding="utf-8"), re.S)


def run_shell(command: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    """`command` as the manual writes it, with .venv/bin/ meaning this interpreter's."""
    command = re.sub(r"(?<![\w/])\.venv/bin/(csro|python)\b",
                     lambda m: _csro_prefix() if m.group(1) == "csro" else shlex.quote(sys.executable), command)
    if command.startswith("./install.sh && "):  # the install is CI's and test_install's
        command = command[len("./install.sh && "):]
    env = {k: v for k, v in __import__("os").environ.items()
           if not k.startswith(("CSRO_", "OPENAI_")) or k in ("CSRO_SANDBOX", "CSRO_ALLOW_WEAK_SANDBOX")}
    env["COLUMNS"] = "200"
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def _checked(result: subprocess.CompletedProcess, command: str) -> str:
    assert result.returncode == 0, f"{command!r} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def _workspace(path: Path) -> Path:
    """A fresh directory as a newcomer's checkout looks from the manual: the example files at hand."""
    for shipped in ("prompts", "docs"):  # the manual's commands name files in them
        (path / shipped).symlink_to(ROOT / shipped)
    (path / "card_sense.py").write_text(readme_policy(), encoding="utf-8")
    return path


def readme_policy() -> str:
    (policy,) = [b for b in blocks("README.md", "python") if "class Policy" in b]
    return policy


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A workspace with one recorded session (the README's main job), for SESSION in commands."""
    path = _workspace(tmp_path_factory.mktemp("manual"))
    _checked(run_shell(".venv/bin/csro run --game kuhn_poker --oracle best-response --iterations 2 --seed 3", path),
             "a session for SESSION")
    (session,) = [p.name for p in (path / "sessions").iterdir()]
    return path, session


# ------------------------------------------------------------------ every command

ALL_COMMANDS = [(page, command) for page in PAGES for command in bash_commands(page)]


def test_the_manual_has_commands_on_every_page_that_should():
    pages_with_commands = {page for page, _ in ALL_COMMANDS}
    for page in ("README.md", "docs/workbench.md", "docs/oracles.md", "docs/games.md", "docs/policies.md",
                 "docs/sessions.md", "docs/configuration.md", "docs/experiments.md", "docs/performance.md"):
        assert page in pages_with_commands, page


@pytest.mark.parametrize(("page", "command"), ALL_COMMANDS, ids=[f"{p}: {c[:70]}" for p, c in ALL_COMMANDS])
def test_every_command_in_the_manual_runs_as_written(page, command, workspace, tmp_path):
    reason = _reason_not_run(command)
    if reason:
        pytest.skip(reason)
    path, session = workspace
    cwd = path
    if page == "docs/configuration.md":  # its commands read the page's csro.toml
        cwd = _workspace(tmp_path)
        (cwd / "csro.toml").write_text(blocks(page, "toml")[0], encoding="utf-8")
    output = _checked(run_shell(command.replace("SESSION", session), cwd), command)
    assert output.strip(), f"{command!r} printed nothing"


def test_exceptions_name_commands_the_manual_still_has():
    """An exception that matches nothing is stale: the command it excused is gone or changed."""
    for pattern in EXCEPTIONS:
        assert any(re.search(pattern, command) for _, command in ALL_COMMANDS), pattern


# ------------------------------------------------------------------ set-up and CI

def test_ci_runs_exactly_the_readme_test_command():
    commands = re.findall(r"^(\./install\.sh && .+)$", README, re.M)
    assert len(commands) == 2, commands
    # CI runs the command's steps in order (with set-up of its own between
    # them: the Ray head and the local model for the tests that need them).
    steps = commands[1].split(" && ")
    ci_text = (ROOT / ".ci" / "run").read_text()
    ci_lines = [line.strip() for line in ci_text.splitlines()]
    positions = [ci_lines.index(step) for step in steps if step in ci_lines]
    assert len(positions) == len(steps) and positions == sorted(positions), (steps, ci_lines)
    # ... and the README says what that set-up is.
    ci_paragraph = README[README.index("CI (`.ci/run`)"):]
    ci_paragraph = ci_paragraph[:ci_paragraph.index("\n\n")]
    assert "'.[ray]'" in ci_text and "'.[ray]'" in ci_paragraph
    assert "ray start --head" in ci_text and "Ray head" in ci_paragraph
    assert "local-llm.sh start" in ci_text and "scripts/local-llm.sh" in ci_paragraph
    assert "lint-imports" in ci_text and "lint-imports" in ci_paragraph


def test_the_main_job_prints_what_the_readme_shows(tmp_path):
    main_job = re.findall(r"^\./install\.sh && (\.venv/bin/csro run .+)$", README, re.M)[0]
    output = _checked(run_shell(main_job, tmp_path), main_job)
    shown = README.split("The run itself takes", 1)[1].split("```\n", 2)[1]
    for line in shown.splitlines():
        if line.strip() != "...":
            assert line.rstrip() in output, (line, output)
    assert (tmp_path / "sessions").is_dir(), "the README says the run is recorded under ./sessions"


# ------------------------------------------------------------------ the policy

def test_the_policy_contract_page_holds_the_contract_text():
    text = (ROOT / "docs" / "policies.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- contract:start -->\n(.*?)<!-- contract:end -->", text, re.S)
    assert match, "docs/policies.md lost its contract markers"
    assert match.group(1) == POLICY_CONTRACT
    assert "player" in POLICY_CONTRACT.split("game:", 1)[1].split("...", 1)[0], "the game keys name player"


def test_the_contract_section_points_to_csro_games():
    text = (ROOT / "docs" / "policies.md").read_text(encoding="utf-8")
    after = " ".join(text.split("<!-- contract:end -->")[1].split())
    assert "`csro games GAME`" in after and "example observation" in after


def test_the_readme_policy_is_the_policies_page_example():
    assert readme_policy() in blocks("docs/policies.md", "python")


def test_the_hand_written_policy_scores_as_the_readme_says(tmp_path):
    path = _workspace(tmp_path)
    evaluation = _checked(run_shell(".venv/bin/csro eval card_sense.py --game kuhn_poker", path), "eval")
    assert re.search(r"AggScore\s*│\s*\+0\.1736", evaluation), evaluation
    assert re.search(r"exploitability\s*│\s*0\.0833", evaluation), evaluation
    assert re.search(r"cfr_plus\s*│\s*\+0\.0000", evaluation), evaluation
    human = "--oracle human --oracle-option path=card_sense.py --iterations 1"
    assert human in README
    run = _checked(run_shell(f".venv/bin/csro run --game kuhn_poker {human}", path), "run")
    assert re.search(r"card_sense-1\s+accept\s+population\s+2\s+gain \+0\.2778\s+exploitability 0\.0833", run), run


def test_every_example_policy_named_in_the_policies_page_exists():
    text = (ROOT / "docs" / "policies.md").read_text(encoding="utf-8")
    named = set(re.findall(r"\(\.\./(prompts/examples/\w+\.py)\)", text))
    shipped = {f"prompts/examples/{p.name}" for p in (ROOT / "prompts" / "examples").glob("*.py")}
    assert named == shipped


def test_a_broken_policy_is_reported_as_the_policies_page_shows(tmp_path):
    text = (ROOT / "docs" / "policies.md").read_text(encoding="utf-8")
    shown = re.search(r"with the line number:\n\n```\n(.*?)```", text, re.S).group(1).splitlines()
    (tmp_path / "bad.py").write_text("import os\n\nclass Policy:\n    def __init__(self, player, game):\n"
                                     "        pass\n\n    def act(self, obs):\n        return 0\n")
    result = run_shell(".venv/bin/csro eval bad.py --game kuhn_poker", tmp_path)
    assert result.returncode != 0
    for line in shown:
        assert line.removesuffix("...") in result.stderr + result.stdout, (line, result)


# ------------------------------------------------------------------ sessions, experiments

def test_export_writes_the_seed_members_too(workspace, tmp_path):
    path, session = workspace
    _checked(run_shell(f".venv/bin/csro export {session} --out {tmp_path}/out", path), "export")
    modules = sorted(p.name for p in (tmp_path / "out" / "policies").iterdir())
    assert modules[0] == "p0_always_bet.py", modules
    assert {"payoffs.csv", "report.md", "run.svg"} <= {p.name for p in (tmp_path / "out").iterdir()}
    # "An exported module runs as it is with csro eval."
    _checked(run_shell(f".venv/bin/csro eval {tmp_path}/out/policies/{modules[-1]} --game kuhn_poker", path), "eval")


def test_the_not_improving_forms_are_the_programs(tmp_path):
    """docs/oracles.md gives both forms of the line; a run of the human oracle on a tying file prints the first."""
    text = (ROOT / "docs" / "oracles.md").read_text(encoding="utf-8")
    forms = re.search(r"stopped improving, in one of two forms:\n\n```\n(.*?)```", text, re.S).group(1).splitlines()
    assert len(forms) == 2
    (tmp_path / "tie.py").write_text((ROOT / "prompts" / "examples" / "kuhn_poker.py").read_text())
    run = _checked(run_shell(".venv/bin/csro run --game kuhn_poker --oracle human "
                             "--oracle-option path=tie.py --iterations 2", tmp_path), "run")
    first = re.escape(forms[0]).replace("REASON", ".+").replace("N", r"\d+").replace("K", r"\d+")
    assert re.search(first, run), (forms[0], run)
    from csro_tui.engine import gate
    source = Path(gate.__file__).read_text()
    assert "not improving: {name} {value:.4f}; the best, {best_value:.4f}, " in source
    assert "was reached {stale} iterations ago" in source and forms[1].endswith("was reached K iterations ago")


def test_configuration_precedence_as_documented(tmp_path):
    path = _workspace(tmp_path)
    page = "docs/configuration.md"
    (path / "csro.toml").write_text(blocks(page, "toml")[0], encoding="utf-8")
    expected = {".venv/bin/csro run": "completed: 3 iterations",
                ".venv/bin/csro run --iterations 1": "completed: 1 iteration\n",
                "CSRO_ITERATIONS=2 .venv/bin/csro run": "completed: 2 iterations"}
    commands = bash_commands(page)
    for command, line in expected.items():
        assert command in commands
        assert line in _checked(run_shell(command, path), command)


def test_the_oracle_options_table_example_works(tmp_path):
    path = _workspace(tmp_path)
    (toml,) = [b for b in blocks("docs/configuration.md", "toml") if "[oracle_options]" in b]
    (path / "csro.toml").write_text(toml, encoding="utf-8")
    output = _checked(run_shell(".venv/bin/csro run --iterations 1", path), "run")
    assert re.search(r"card_sense-1\s+accept", output), output


def test_the_llm_table_reaches_the_client(tmp_path):
    """The page's [llm] example, pointed at a closed port: the run fails naming that URL (the file was used)."""
    (toml,) = [b for b in blocks("docs/configuration.md", "toml") if "[llm]" in b]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    toml = re.sub(r'base_url = ".*"', f'base_url = "{url}"', toml) + "max_retries = 0\n"
    (tmp_path / "csro.toml").write_text(toml, encoding="utf-8")
    result = run_shell(".venv/bin/csro run --game kuhn_poker --iterations 1", tmp_path)
    assert result.returncode != 0
    assert f"{url} refused the connection" in result.stdout + result.stderr, result


# ------------------------------------------------------------------ review scripts

def _review_example() -> str:
    text = (ROOT / "docs" / "oracles.md").read_text(encoding="utf-8")
    match = re.search(r"`--review script:FILE`.*?```json\n(.*?)```", text, re.S)
    assert match, "docs/oracles.md lost the review-script example"
    return match.group(1)


def test_the_review_script_format_is_documented_with_an_example(tmp_path):
    from csro_tui.reviewers import load_script

    script = tmp_path / "review.jsonl"
    script.write_text(_review_example())
    (tmp_path / "my_fix.py").write_text("class Policy:\n    pass\n")
    actions = [decision.action for decision in load_script(script)]
    assert actions == ["reject", "accept", "edit", "accept"]


def test_the_shipped_review_script_is_the_documented_one():
    assert (ROOT / "docs" / "examples" / "review.jsonl").read_text(encoding="utf-8") == _review_example()
    assert (ROOT / "docs" / "examples" / "my_fix.py").is_file()


def test_the_review_script_runs_as_the_oracles_page_says(tmp_path):
    path = _workspace(tmp_path)
    (command,) = [c for _, c in ALL_COMMANDS if "--review script:" in c]
    output = _checked(run_shell(command, path), command)
    assert re.search(r"iteration\s+2\s+\S+\s+edit → accept", output), output
    assert "completed: 3 iterations" in output
    (session,) = [p.name for p in (path / "sessions").iterdir()]
    replay = _checked(run_shell(f".venv/bin/csro replay {session}", path), "replay")
    assert "best-response ✎ script:review.jsonl" in replay, replay
    _checked(run_shell(f".venv/bin/csro export {session} --out out", path), "export")
    assert "✎" in (path / "out" / "report.md").read_text(encoding="utf-8")


# ------------------------------------------------------------------ links

def _slug(heading: str) -> str:
    return re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", heading.strip().lower()))


@pytest.mark.parametrize("page", PAGES)
def test_every_relative_link_resolves(page):
    text = (ROOT / page).read_text(encoding="utf-8")
    base = (ROOT / page).parent
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+://", target):
            continue
        file_part, _, anchor = target.partition("#")
        linked = (base / file_part) if file_part else ROOT / page
        assert linked.exists(), f"{page}: {target}"
        if anchor:
            headings = re.findall(r"^#+ (.+)$", linked.read_text(encoding="utf-8"), re.M)
            assert anchor in {_slug(h) for h in headings}, f"{page}: {target}"
