"""The review gate's other side: who decides whether a proposal joins.

The engine hands a `Reviewer` a `ReviewRequest` (the proposal, its parent's
source for a diff, the validation result and the preview) and gets back a
`Decision`: accept, edit (new source, which the engine validates, previews
and sends for review again) or reject (the reason goes back to the oracle).

`decide` is called on the engine's thread and may block, e.g. the TUI's
reviewer waits on a queue for a person; it should also return (any decision)
once `review.cancel` is set, so a stop request is not held up.  Invalid code
never joins the population whatever a reviewer says: the engine turns an
accept of an invalid proposal into a rejection.

Headless reviewers: `AutoReviewer` (accepts only improvements that repeat
nothing; `valid`: every valid proposal) and `ScriptReviewer`;
`make_reviewer` parses the CLI's `--review auto|auto:THRESHOLD|valid|script:FILE`.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Protocol

from csro_tui.errors import ConfigError
from csro_tui.files import UnsafePath, load_json, path_inside
from csro_tui.records import ACTIONS, IMPROVEMENT_Z, Decision, ReviewRequest

class Reviewer(Protocol):
    name: str  # recorded as who decided

    def decide(self, review: ReviewRequest) -> Decision: ...


class AutoReviewer:
    """Accepts a proposal only if it is a better response than the population has.

    The rule (`Preview.shortfall`): the code is valid and ran, it repeats no
    member and no earlier rejected proposal (same normalized code or same
    behaviour), and its expected payoff against the current meta-strategy is
    above `threshold` (default 0) by more than the noise margin where
    payoffs are sampled (`z` standard errors of the preview's estimate, or Student's t at
    that level for the pairs played: `Preview.standard_errors`).
    Anything else is rejected with that reason, which goes back to the oracle.

    With two populations the bar is the proposal's seat's value in the
    meta-game (`ReviewRequest.seat_value`; Kuhn's seat 0 is worth -1/18, not
    0) plus `threshold`.

    `threshold=None` turns the improvement and duplicate rules off: every
    valid proposal is accepted (the reviewer's behaviour before the gate
    knew what a best response is; `--review valid`).
    """

    def __init__(self, threshold: float | None = 0.0, z: float = IMPROVEMENT_Z) -> None:
        self.threshold = threshold
        self.z = z
        self.name = "auto" if threshold is not None else "valid"

    def decide(self, review: ReviewRequest) -> Decision:
        if not review.validation.valid:
            return Decision.reject(review.validation.summary())
        preview = review.preview
        if preview is not None and preview.failure is not None:
            return Decision.reject(preview.failure.summary())
        if self.threshold is None or preview is None:
            return Decision.accept()
        bar = self.threshold + (review.seat_value or 0.0)
        shortfall = preview.shortfall(bar, self.z)
        if shortfall is not None:
            return Decision.reject(shortfall)
        margin = preview.improvement_margin(self.z)
        noise = f" (noise margin {margin:.3f})" if margin > 0 else ""
        whose = f" (seat {review.proposal.seat}'s value in the meta-game)" if review.seat_value is not None else ""
        return Decision.accept(
            f"expected payoff {preview.expected_payoff:+.3f} against the meta-strategy beats {bar:+.3f}{whose}{noise}"
        )


# The reason recorded when a review script's own edit, valid, is accepted.
SCRIPT_EDIT_ACCEPTED = "the review script's edit, accepted as valid"


class ScriptReviewer:
    """Decisions read from a file and given in order, one per review.

    The file is a JSON list or JSON Lines; each decision is a string
    ("accept") or an object: {"action": "accept"}, {"action": "reject",
    "reason": "..."}, {"action": "edit", "code": "..."} or {"action": "edit",
    "path": "fixed.py"} (relative to the script's folder).  The whole script
    is checked when loaded; running out of decisions is a `ConfigError`.

    An edit line is the whole decision for its proposal: the engine
    validates and previews the edited code like any proposal, and this
    reviewer accepts it without reading another line (the engine refuses an
    accept of invalid code, which then counts as a rejection).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.name = f"script:{self.path.name}"
        self.decisions = load_script(self.path)
        self._next = 0
        self._lock = threading.Lock()

    def skip(self, count: int) -> None:
        """Skip decisions already given (a resumed session recorded them)."""
        with self._lock:
            self._next = min(len(self.decisions), self._next + count)

    @property
    def remaining(self) -> int:
        return len(self.decisions) - self._next

    def decide(self, review: ReviewRequest) -> Decision:
        if review.edited_by == self.name:
            return Decision.accept(SCRIPT_EDIT_ACCEPTED)
        with self._lock:
            if self._next >= len(self.decisions):
                raise ConfigError(
                    f"review script {self.path} has {len(self.decisions)} decisions; "
                    f"proposal {review.proposal_id} needs decision {self._next + 1}"
                )
            decision = self.decisions[self._next]
            self._next += 1
            return decision


def load_script(path: Path) -> list[Decision]:
    """Parse a review script; ConfigError naming the file and entry when malformed."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"review script {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"review script {path}: cannot read ({error})") from None
    entries = _script_entries(path, text)
    return [_parse_decision(path, where, entry) for where, entry in entries]


def _script_entries(path: Path, text: str) -> list[tuple[str, Any]]:
    stripped = text.strip()
    if not stripped:
        raise ConfigError(f"review script {path}: empty")
    if stripped.startswith("["):
        try:
            items = load_json(stripped)
        except json.JSONDecodeError as error:
            raise ConfigError(f"review script {path} line {error.lineno}: not valid JSON ({error.msg})") from None
        except ValueError as error:  # too large or deep (JsonTooLarge), an integer too long
            raise ConfigError(f"review script {path}: not usable JSON ({error})") from None
        return [(f"entry {n}", item) for n, item in enumerate(items, start=1)]
    entries = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            entries.append((f"line {number}", load_json(line)))
        except json.JSONDecodeError as error:
            raise ConfigError(f"review script {path} line {number}: not valid JSON ({error.msg})") from None
        except ValueError as error:  # too large or deep (JsonTooLarge), an integer too long
            raise ConfigError(f"review script {path} line {number}: not usable JSON ({error})") from None
    return entries


def _parse_decision(path: Path, where: str, entry: Any) -> Decision:
    def bad(message: str) -> ConfigError:
        return ConfigError(f"review script {path} {where}: {message}")

    if isinstance(entry, str):
        entry = {"action": entry}
    if not isinstance(entry, dict):
        raise bad('expected "accept" or an object like {"action": "reject", "reason": "..."}')
    action = entry.get("action")
    if action not in ACTIONS:
        raise bad(f"action {action!r} is not one of {', '.join(ACTIONS)}")
    unknown = set(entry) - {"action", "reason", "code", "path"}
    if unknown:
        raise bad(f"unknown key(s) {', '.join(sorted(unknown))}")
    reason = entry.get("reason", "")
    if not isinstance(reason, str):
        raise bad("reason must be a string")
    if action == "reject":
        if not reason.strip():
            raise bad("a rejection needs a reason (it goes back to the oracle)")
        return Decision.reject(reason)
    if action == "accept":
        return Decision.accept(reason)
    if ("code" in entry) == ("path" in entry):
        raise bad('an edit needs exactly one of "code" (inline source) or "path" (a file)')
    if "code" in entry:
        if not isinstance(entry["code"], str) or not entry["code"].strip():
            raise bad('"code" must be non-empty source text')
        return Decision.edit(entry["code"], reason)
    if not isinstance(entry["path"], str):
        raise bad('"path" must be a file name (relative to the script\'s folder)')
    try:  # inside the script's folder only: a script from elsewhere must not read ~/.ssh into a session
        code_path = path_inside(path.parent, entry["path"])
    except UnsafePath as error:
        raise bad(f"edit file: {error}") from None
    try:
        return Decision.edit(code_path.read_text(encoding="utf-8"), reason)
    except (OSError, UnicodeDecodeError) as error:
        raise bad(f"cannot read edit file {code_path} ({error})") from None


def make_reviewer(spec: str) -> Reviewer:
    """`auto`, `auto:THRESHOLD`, `valid` or `script:FILE` (the CLI's --review)."""
    if spec == "auto":
        return AutoReviewer()
    if spec == "valid":
        return AutoReviewer(threshold=None)
    if spec.startswith("auto:"):
        try:
            return AutoReviewer(threshold=float(spec[len("auto:"):]))
        except ValueError:
            raise ConfigError(f"--review {spec!r}: the threshold after auto: must be a number") from None
    if spec.startswith("script:") and spec[len("script:") :]:
        return ScriptReviewer(spec[len("script:") :])
    raise ConfigError(f"--review {spec!r}: use auto, auto:THRESHOLD, valid or script:FILE")
