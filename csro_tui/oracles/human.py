"""The human oracle: a person writes the policy in a file of their choosing.

Used from the CLI (the TUI has its own editor).  The file is read afresh at
every iteration, so a person can edit it between iterations and each
proposal carries the file's current content.  Validation, preview and
review then treat it like any other proposal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from csro_tui.errors import ConfigError, CsroError
from csro_tui.evaluation.participants import read_policy_file
from csro_tui.oracles.base import OracleContext
from csro_tui.records import Proposal


class HumanOracle:
    """Proposes the current content of one policy file."""

    name = "human"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()

    def propose(self, context: OracleContext) -> Proposal:
        source = read_source(self.path)
        notes = [f"Read from {self.path}."]
        if _was_rejected_unchanged(source, context):
            notes.append("The file is unchanged since its last rejection.")
        return Proposal(
            source=source,
            oracle=self.name,
            name=f"{self.path.stem}-{context.iteration}",
            rationale=" ".join(notes),
        )


def read_source(path: Path) -> str:
    """The file's text; any problem, emptiness included, is a one-line `CsroError`."""
    source = read_policy_file(path)
    if not source.strip():
        raise CsroError(f"cannot use {path}: the file is empty")
    return source


def _was_rejected_unchanged(source: str, context: OracleContext) -> bool:
    """Whether the reviewer already rejected exactly this text from this oracle."""
    for proposal, _reason in reversed(context.rejections):
        if proposal.oracle == HumanOracle.name:
            return proposal.source == source
    return False


def make_human_oracle(config: Mapping[str, Any] | None = None) -> HumanOracle:
    """Registry factory; `config["path"]` names the policy file."""
    path = (config or {}).get("path")
    if not path:
        raise ConfigError("the human oracle needs a policy file: --oracle-option path=FILE")
    oracle = HumanOracle(path)
    if not oracle.path.is_file():
        # Caught at start rather than after three failed iterations.
        raise ConfigError(f"the human oracle's policy file {oracle.path} does not exist")
    return oracle
