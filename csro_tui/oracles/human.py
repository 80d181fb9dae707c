"""The human oracle: a person writes the policy in a file of their choosing.

Used from the CLI (the TUI has its own editor).  The file is read afresh at
every iteration, so a person can edit it between iterations and each
proposal carries the file's current content.  Validation, preview and
review then treat it like any other proposal.

With two populations it proposes for the seat it is asked for: the file
`path_seat0` / `path_seat1` names for that seat, else `path` (a policy gets
its seat in `__init__`, so one file can serve both).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from csro_tui.errors import ConfigError, CsroError
from csro_tui.evaluation.participants import read_policy_file
from csro_tui.oracles.base import OracleContext
from csro_tui.records import Proposal

# The options that name a file for one seat (two populations), by seat.
SEAT_PATH_OPTIONS = ("path_seat0", "path_seat1")


class HumanOracle:
    """Proposes the current content of one policy file (or one per seat)."""

    name = "human"

    def __init__(self, path: str | Path | None, seat_paths: Mapping[int, str | Path] | None = None) -> None:
        self.path = Path(path).expanduser() if path else None
        self.seat_paths = {seat: Path(each).expanduser() for seat, each in (seat_paths or {}).items()}

    def path_for(self, seat: int | None) -> Path:
        """The file proposed for `seat` (None: one population); a one-line error if none is set."""
        chosen = self.seat_paths.get(seat, self.path) if seat is not None else self.path
        if chosen is None:
            if seat is None:
                raise CsroError("the human oracle needs a policy file: --oracle-option path=FILE "
                                f"({', '.join(SEAT_PATH_OPTIONS)} name files for the seats of two populations)")
            raise CsroError(f"the human oracle has no policy file for seat {seat}: "
                            f"--oracle-option {SEAT_PATH_OPTIONS[seat]}=FILE, or path=FILE for both seats")
        return chosen

    def propose(self, context: OracleContext) -> Proposal:
        path = self.path_for(context.seat)
        source = read_source(path)
        notes = [f"Read from {path}" + (f", for {context.seat_words()}." if context.seat is not None else ".")]
        if _was_rejected_unchanged(source, context):
            notes.append("The file is unchanged since its last rejection.")
        return Proposal(
            source=source,
            oracle=self.name,
            name=context.proposal_name(f"{path.stem}-{context.iteration}"),
            rationale=" ".join(notes),
            seat=context.seat,
        )


def read_source(path: Path) -> str:
    """The file's text; any problem, emptiness included, is a one-line `CsroError`."""
    source = read_policy_file(path)
    if not source.strip():
        raise CsroError(f"cannot use {path}: the file is empty")
    return source


def _was_rejected_unchanged(source: str, context: OracleContext) -> bool:
    """Whether the reviewer already rejected exactly this text from this oracle (for this seat)."""
    for proposal, _reason in reversed(context.seat_rejections()):
        if proposal.oracle == HumanOracle.name:
            return proposal.source == source
    return False


def make_human_oracle(config: Mapping[str, Any] | None = None) -> HumanOracle:
    """Registry factory; `config["path"]` names the policy file, `path_seat0`/`path_seat1`
    one per seat for two populations (each overriding `path` for its seat)."""
    config = config or {}
    path = config.get("path")
    seat_paths = {seat: config[key] for seat, key in enumerate(SEAT_PATH_OPTIONS) if config.get(key)}
    if not path and not seat_paths:
        raise ConfigError("the human oracle needs a policy file: --oracle-option path=FILE")
    oracle = HumanOracle(path, seat_paths)
    for key, each in [("path", oracle.path)] + [(SEAT_PATH_OPTIONS[s], p) for s, p in oracle.seat_paths.items()]:
        if each is not None and not each.is_file():
            # Caught at start rather than after three failed iterations.
            what = "policy file" if key == "path" else f"policy file for seat {key[-1]}"
            raise ConfigError(f"the human oracle's {what} {each} does not exist")
    return oracle
