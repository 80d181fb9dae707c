"""The distribution carries prompts/: an installed copy finds every template and example (issue 29).

The checkout is copied (building writes an egg-info beside the sources), an
sdist is built from the copy, a wheel from the unpacked sdist with
`pip wheel --no-deps --no-build-isolation` (no network: the build backend is
the environment's own, which the `test` extra provides), and the wheel is
installed with `pip install --target` into a folder that a fresh interpreter
puts first on its path. Going through the sdist shows both archives carry the
prompts; no virtual environment is made, so the test is not marked slow.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROMPTS = ROOT / "prompts"
NOT_SOURCES = (".git", ".venv", "sessions", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache")


def _setuptools_version() -> tuple[int, ...]:
    try:
        from importlib.metadata import version

        return tuple(int(part) for part in version("setuptools").split(".")[:2])
    except Exception:  # not installed, or an unusual version string
        return (0,)


needs_build_backend = pytest.mark.skipif(
    _setuptools_version() < (77,),
    reason="building without isolation needs setuptools>=77 here (pyproject.toml's backend; the test extra installs it)",
)


def _run(command: list[str], cwd: Path, **env: str) -> str:
    """Run offline (pip reads no index); the output, or a failure showing its end."""
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", **env}
    env.pop("CSRO_PROMPTS_DIR", None)
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result.stdout


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    work = tmp_path_factory.mktemp("packaging")
    checkout = work / "checkout"
    shutil.copytree(ROOT, checkout, ignore=shutil.ignore_patterns(*NOT_SOURCES), symlinks=True)
    sdist_dir = work / "sdist"
    name = _run([sys.executable, "-c", "import sys; from setuptools import build_meta; "
                 "print(build_meta.build_sdist(sys.argv[1]))", str(sdist_dir)], cwd=checkout).strip().splitlines()[-1]
    sdist = sdist_dir / name
    with tarfile.open(sdist) as archive:
        archive.extractall(work / "unpacked", filter="data")
    (unpacked,) = (work / "unpacked").iterdir()
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
          "-w", str(work / "wheels"), str(unpacked)], cwd=work)
    (wheel,) = (work / "wheels").glob("csro_tui-*.whl")
    site = work / "site"
    _run([sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(site), "-q", str(wheel)], cwd=work)
    return {"sdist": sdist, "wheel": wheel, "site": site, "work": work}


def _shipped_files() -> dict[str, str]:
    """prompts/'s templates and examples, path relative to prompts/ -> text."""
    files = sorted(PROMPTS.glob("*.md")) + sorted((PROMPTS / "examples").glob("*.py"))
    return {path.relative_to(PROMPTS).as_posix(): path.read_text(encoding="utf-8") for path in files}


def test_the_library_knows_every_template_in_prompts():
    from csro_tui.oracles.llm.prompts import TEMPLATE_NAMES

    on_disk = {path.stem for path in PROMPTS.glob("*.md") if path.name != "README.md"}
    assert on_disk == set(TEMPLATE_NAMES)
    assert (PROMPTS / "examples" / "generic.py").is_file()


@needs_build_backend
def test_the_sdist_carries_prompts(built):
    with tarfile.open(built["sdist"]) as archive:
        names = {Path(*Path(member).parts[1:]).as_posix() for member in archive.getnames()}
    assert {f"prompts/{relative}" for relative in _shipped_files()} <= names


# Run by a fresh interpreter whose path starts with the installed copy.
_INSTALLED_REPORT = """
import json
import csro_tui
from csro_tui.games.registry import get_game
from csro_tui.oracles.llm.prompts import TEMPLATE_NAMES, PromptLibrary

library = PromptLibrary(env={})
library.check()
examples = {}
for game in ("kuhn_poker", "leduc_poker", "rrps", "repeated_leduc", "tic_tac_toe"):
    examples[game] = library.example_policy(get_game(game))
print(json.dumps({
    "package": csro_tui.__file__,
    "prompts": str(library.builtin_dir),
    "files": {path.relative_to(library.builtin_dir).as_posix(): path.read_text(encoding="utf-8")
              for path in sorted(library.builtin_dir.rglob("*"))
              if path.is_file() and "__pycache__" not in path.parts},
    "templates": {name: library.template_text(name) for name in TEMPLATE_NAMES},
    "examples": examples,
}))
"""


@needs_build_backend
def test_an_installed_copy_finds_every_template_and_example(built, tmp_path):
    site = built["site"]
    report = json.loads(_run([sys.executable, "-c", _INSTALLED_REPORT], cwd=tmp_path, PYTHONPATH=str(site)))
    assert Path(report["package"]).is_relative_to(site)  # the installed copy, not the checkout
    assert Path(report["prompts"]) == site / "csro_tui" / "_prompts"
    shipped = _shipped_files()
    assert {name: text for name, text in report["files"].items() if name in shipped} == shipped
    assert set(shipped) <= set(report["files"])
    for name, text in report["templates"].items():
        assert text == shipped[f"{name}.md"]
    for game in ("kuhn_poker", "leduc_poker", "rrps", "repeated_leduc"):
        assert report["examples"][game] == shipped[f"examples/{game}.py"]
    assert report["examples"]["tic_tac_toe"] == shipped["examples/generic.py"]  # no example of its own
