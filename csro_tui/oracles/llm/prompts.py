"""Prompt templates and the chat messages the LLM oracles send.

Templates are plain Markdown files in the top-level `prompts/` directory
(see prompts/README.md), filled with `string.Template`: `$field` or
`${field}`, and `$$` for a literal dollar sign.  An installed copy carries
them inside the package as `csro_tui/_prompts` (setup.py maps that package to
`prompts/`).  A user directory (`PromptLibrary(user_dir=...)` or the
CSRO_PROMPTS_DIR environment variable) overrides any template by holding a
file of the same name.

The builders (`best_response_messages`, `refine_messages`, `mutate_messages`,
`summarize_messages`) return chat message lists for `LLMClient.complete`.
They keep prompts within a token budget (estimated as characters / 4):
opponents are ranked by meta-strategy weight, limited to the top k, the
lowest-weight dropped first, then the rest switched to summaries; dropped
ones come back as summaries where room remains, and the prompt says how
many were left out.

With two populations the builders take the seat the policy will play
(`seat`): the task names it (`$seat`, in the rules' words where the game
has them, `GameSpec.seat_roles`) and the feedback says payoffs are that
seat's returns; the opponents and the mixture given are the other seat's.
"""

from __future__ import annotations

import json
import math
import os
import re
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from csro_tui.errors import ConfigError
from csro_tui.oracles.base import seat_words
from csro_tui.oracles.llm.client import estimate_tokens
from csro_tui.sandbox.contract import POLICY_CONTRACT



def _builtin_prompts_dir() -> Path:
    """The shipped templates: csro_tui/_prompts in an installed copy (wheel, sdist),
    else the checkout's top-level prompts/ (a source tree or an editable install).

    The installed copy comes first: beside an installed package, parents[3] is
    site-packages, where a folder named `prompts` would belong to someone else.
    """
    package = Path(__file__).resolve().parents[2]
    installed = package / "_prompts"
    return installed if installed.is_dir() else package.parent / "prompts"


BUILTIN_PROMPTS_DIR = _builtin_prompts_dir()
PROMPTS_DIR_ENV = "CSRO_PROMPTS_DIR"
TEMPLATE_NAMES = ("system", "game", "best_response", "refine", "mutate", "summarize", "rejection")

# Room kept for the note that says which opponents were left out.
_NOTE_RESERVE_TOKENS = 80
# A game with hundreds of actions would flood the prompt with their names.
_MAX_LISTED_ACTIONS = 60
# The `game` dict's rules are the rules section again: shortened in its example.
_SHORT_RULES_CHARS = 60
# An example observation of a long game (histories) is cut to this.
_MAX_EXAMPLE_OBS_CHARS = 600


class PromptError(ConfigError):
    """A prompt template that is missing, unreadable or filled wrongly."""


# --------------------------------------------------------------------- inputs
@dataclass(frozen=True)
class OpponentBrief:
    """A population member as the model sees it."""

    policy_id: str
    name: str
    weight: float  # meta-strategy probability
    source: str
    summary: str | None = None  # 2-4 sentences, from summarize_messages


@dataclass(frozen=True)
class EvaluationFeedback:
    """How a candidate fared: payoffs, and the failure if it failed."""

    expected_payoff: float | None = None  # against the meta-strategy
    per_opponent: Mapping[str, float] = field(default_factory=dict)  # opponent label -> mean payoff
    failure: str | None = None  # one line, e.g. "crash: ZeroDivisionError: division by zero"
    traceback: str | None = None
    notes: str = ""
    seat: int | None = None  # two populations: the seat the payoffs were played in

    @classmethod
    def from_preview(
        cls, preview: Any, names: Mapping[str, str] | None = None, seat: int | None = None
    ) -> "EvaluationFeedback":
        """From an engine `Preview`; `names` maps policy ids to readable labels; `seat` the one seat
        the candidate played (two populations), None for seats swapped."""
        names = names or {}
        per_member = getattr(preview, "per_member", {}) or {}
        failure = getattr(preview, "failure", None)
        failure_line = traceback = None
        if failure is not None:
            category = getattr(failure, "category", "failure")
            failure_line = f"{category}: {getattr(failure, 'message', failure)}"
            traceback = getattr(failure, "traceback", "") or None
        expected = getattr(preview, "expected_payoff", None)
        return cls(
            # A failed preview has NaN payoffs: leave them out rather than show "nan".
            expected_payoff=None if expected is None or math.isnan(expected) else expected,
            per_opponent={
                names.get(pid, pid): value for pid, value in per_member.items() if not math.isnan(value)
            },
            failure=failure_line,
            traceback=traceback,
            seat=seat,
        )

    def render(self, max_traceback_chars: int = 3000) -> str:
        """The feedback as prompt text."""
        lines: list[str] = []
        if self.failure:
            lines.append(f"FAILED: {self.failure}")
        if self.traceback:
            text = self.traceback.strip()
            if len(text) > max_traceback_chars:
                text = "…" + text[-max_traceback_chars:]  # the end of a traceback says the most
            lines += ["Traceback:", "```text", text, "```"]
        if self.expected_payoff is not None:
            lines.append(f"Expected payoff against the meta-strategy: {self.expected_payoff:+.3f}")
        if self.per_opponent:
            how = "seats averaged" if self.seat is None else f"in seat {self.seat}"
            lines.append(f"Mean payoff against each opponent (your return per episode, {how}):")
            lines += [f"- {label}: {value:+.3f}" for label, value in self.per_opponent.items()]
        if self.notes:
            lines.append(self.notes)
        return "\n".join(lines) if lines else "No evaluation results."


@dataclass(frozen=True)
class Inspiration:
    """Another policy shown to the model when it mutates a parent."""

    name: str
    source: str
    score: float | None = None


OPPONENT_FORMATS = ("code", "summary", "names")


@dataclass(frozen=True)
class ContextOptions:
    """How much context the builders put in a prompt."""

    top_k: int = 8  # at most this many opponents, by weight
    # "code", "summary" (falls back to code when missing) or "names" (name and weight only: for games
    # whose mixture section already says how the opponents play in every situation)
    opponent_format: str = "code"
    max_rejections: int = 3  # newest first
    max_inspirations: int = 3
    max_traceback_chars: int = 3000

    def __post_init__(self) -> None:
        if self.opponent_format not in OPPONENT_FORMATS:
            raise PromptError(f"opponent_format must be one of {', '.join(OPPONENT_FORMATS)}, got {self.opponent_format!r}")
        if self.top_k < 0 or self.max_rejections < 0 or self.max_inspirations < 0:
            raise PromptError("top_k, max_rejections and max_inspirations must be 0 or more")


# --------------------------------------------------------------------- library
class PromptLibrary:
    """Templates from prompts/, each overridable by a same-named file in a user directory."""

    def __init__(self, user_dir: str | os.PathLike[str] | None = None, *, env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        chosen = user_dir if user_dir is not None else (env.get(PROMPTS_DIR_ENV) or None)
        self.user_dir = Path(chosen).expanduser() if chosen is not None else None
        if self.user_dir is not None and not self.user_dir.is_dir():
            raise PromptError(f"prompt directory {self.user_dir} does not exist")
        self.builtin_dir = BUILTIN_PROMPTS_DIR

    # ---------------------------------------------------------------- files
    def names(self) -> list[str]:
        """Template names available (built-in and user)."""
        found = {p.stem for p in self.builtin_dir.glob("*.md") if p.name != "README.md"}
        if self.user_dir is not None:
            found |= {p.stem for p in self.user_dir.glob("*.md") if p.name != "README.md"}
        return sorted(found)

    def path_of(self, name: str) -> Path:
        """The file `name` is read from: the user's copy if there is one."""
        stem = name[:-3] if name.endswith(".md") else name
        if not re.fullmatch(r"[A-Za-z0-9_\-]+", stem):
            raise PromptError(f"bad prompt template name {name!r}")
        for directory in (self.user_dir, self.builtin_dir):
            if directory is not None and (directory / f"{stem}.md").is_file():
                return directory / f"{stem}.md"
        where = " or ".join(str(d) for d in (self.user_dir, self.builtin_dir) if d is not None)
        raise PromptError(f"no prompt template {stem!r} in {where}; known: {', '.join(self.names()) or 'none'}")

    def template_text(self, name: str) -> str:
        """The raw template text (read each time, so edits apply at once)."""
        path = self.path_of(name)
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise PromptError(f"cannot read prompt template {path}: {error}") from None

    def check(self) -> None:
        """Raise PromptError unless every template the oracles use and the generic example policy
        can be read (and every template filled): called when an LLM oracle is made, before a
        session is recorded."""
        for name in TEMPLATE_NAMES:
            self._template(name)
        generic = [d / "examples" / "generic.py" for d in (self.user_dir, self.builtin_dir) if d is not None]
        if not any(path.is_file() for path in generic):
            raise PromptError(f"no example policy: {self.builtin_dir / 'examples' / 'generic.py'} is missing "
                              "(a broken install? reinstall csro-tui)")

    # ---------------------------------------------------------------- render
    def render(self, name: str, /, **fields: Any) -> str:
        """Fill template `name`; every field it uses must be given, and no others."""
        return self._render(name, fields, allow_unused=False)

    def fields_of(self, name: str) -> set[str]:
        """The field names template `name` uses."""
        return set(self._template(name)[1].get_identifiers())

    def _template(self, name: str) -> tuple[Path, string.Template]:
        path = self.path_of(name)
        template = string.Template(self.template_text(name))
        if not template.is_valid():
            raise PromptError(f"prompt template {path} has a stray '$' at line {_stray_dollar_line(template)}; "
                              "write $$ for a literal dollar sign")
        return path, template

    def _render(self, name: str, fields: Mapping[str, Any], *, allow_unused: bool) -> str:
        """Render; builders pass allow_unused=True so a user's template may leave fields out."""
        path, template = self._template(name)
        used = set(template.get_identifiers())
        missing = sorted(used - set(fields))
        if missing:
            raise PromptError(f"prompt template {path} needs field(s) {', '.join(missing)} that were not given")
        unknown = sorted(set(fields) - used)
        if unknown and not allow_unused:
            raise PromptError(f"prompt template {path} has no field(s) {', '.join(unknown)}")
        values = {key: "" if value is None else str(value) for key, value in fields.items()}
        text = template.template
        # A field that is empty drops its whole line, then any heading left
        # with nothing under it, and blank runs close up, so optional sections
        # leave no gaps.  Only the template's own text is touched this way:
        # substituted code keeps its blank lines.
        empty = [key for key, value in values.items() if value == ""]
        if empty:
            keys = "|".join(re.escape(k) for k in empty)
            text = re.sub(rf"(?m)^[ \t]*\$(?:{keys}|\{{(?:{keys})\}})[ \t]*(?:\n|\Z)", "", text)
            text = _drop_empty_sections(text)
        text = re.sub(r"\n{3,}", "\n\n", text)
        return string.Template(text).substitute(values).strip()

    # ---------------------------------------------------------------- builders
    def system_message(self, spec: Any) -> dict[str, str]:
        """The system message: role and output format, then the game, the contract and an example policy."""
        fields = game_fields(spec) | {"example_policy": fence_code(self.example_policy(spec))}
        content = self._render("system", {}, allow_unused=True) + "\n\n" + self._render(
            "game", fields, allow_unused=True
        )
        return {"role": "system", "content": content}

    def example_policy(self, spec: Any) -> str:
        """A minimal correct policy for the game: examples/<game>.py (user copy first), else examples/generic.py."""
        stems = [getattr(spec, "seed_dir", "") or "", str(getattr(spec, "name", "") or "").split("(")[0], "generic"]
        for stem in stems:
            if not stem or not re.fullmatch(r"[A-Za-z0-9_\-]+", stem):
                continue
            for directory in (self.user_dir, self.builtin_dir):
                path = directory / "examples" / f"{stem}.py" if directory is not None else None
                if path is not None and path.is_file():
                    try:
                        return path.read_text(encoding="utf-8")
                    except (OSError, UnicodeDecodeError) as error:
                        raise PromptError(f"cannot read example policy {path}: {error}") from None
        raise PromptError(f"no example policy: {self.builtin_dir / 'examples' / 'generic.py'} is missing")

    def best_response_messages(
        self,
        spec: Any,
        opponents: Sequence[OpponentBrief],
        feedback: EvaluationFeedback | str | None = None,
        rejections: Sequence[Any] = (),
        budget_tokens: int | None = None,
        *,
        options: ContextOptions | None = None,
        mixture: str = "",
        seat: int | None = None,
    ) -> list[dict[str, str]]:
        """Ask for a new policy that beats the weighted opponents (zero-shot best response).

        `mixture` describes how the opponent mixture plays (`mixture.MixtureDescriber`);
        `seat` is the seat the policy will play (two populations), None for both.
        """
        options = options or ContextOptions()
        fields = {
            "feedback": _feedback_text(feedback, options) or "None yet: this is the first proposal.",
            "rejections": self._rejections_text(rejections, options),
            "mixture": mixture.strip(),
            "seat": seat_note(spec, seat, BOTH_SEATS_NOTE),
        }
        return self._with_opponents("best_response", spec, fields, opponents, budget_tokens, options)

    def refine_messages(
        self,
        spec: Any,
        source: str,
        feedback: EvaluationFeedback | str | None,
        opponents: Sequence[OpponentBrief] = (),
        rejections: Sequence[Any] = (),
        budget_tokens: int | None = None,
        *,
        options: ContextOptions | None = None,
        mixture: str = "",
        seat: int | None = None,
    ) -> list[dict[str, str]]:
        """Ask to improve `source` given how it fared (payoffs, failures, tracebacks); `seat` as
        in `best_response_messages`."""
        options = options or ContextOptions()
        fields = {
            "source": fence_code(source),
            "feedback": _feedback_text(feedback, options) or "No evaluation results.",
            "rejections": self._rejections_text(rejections, options),
            "mixture": mixture.strip(),
            "seat": seat_note(spec, seat),
        }
        return self._with_opponents("refine", spec, fields, opponents, budget_tokens, options)

    def mutate_messages(
        self,
        spec: Any,
        parent_source: str,
        inspirations: Sequence[Inspiration],
        *,
        parent_score: float | None = None,
        score_name: str = "score",
        feedback: EvaluationFeedback | str | None = None,
        budget_tokens: int | None = None,
        options: ContextOptions | None = None,
        seat: int | None = None,
    ) -> list[dict[str, str]]:
        """Ask for SEARCH/REPLACE edits to a parent (a full rewrite is allowed); `seat` as in
        `best_response_messages`.

        Inspirations are shown best score first, at most `max_inspirations`,
        the lowest-scoring dropped first when over budget.
        """
        options = options or ContextOptions()
        ranked = sorted(inspirations, key=lambda i: -i.score if i.score is not None else float("inf"))
        shown = list(ranked[: options.max_inspirations])
        fields = {
            "parent": fence_code(parent_source),
            "parent_score": _score_text(parent_score),
            "score_name": score_name,
            "feedback": _feedback_text(feedback, options),
            "seat": seat_note(spec, seat),
        }
        system = self.system_message(spec)

        def build(chosen: list[Inspiration]) -> list[dict[str, str]]:
            omitted = len(inspirations) - len(chosen)
            parts = [
                f"### Inspiration {n}: {item.name} ({score_name} {_score_text(item.score)})\n{fence_code(item.source)}"
                for n, item in enumerate(chosen, start=1)
            ]
            if omitted:
                parts.append(f"({omitted} more polic{'y' if omitted == 1 else 'ies'} left out for space.)")
            user = self._render("mutate", fields | {"inspirations": "\n\n".join(parts) or "None."}, allow_unused=True)
            return [system, {"role": "user", "content": user}]

        messages = build(shown)
        while budget_tokens is not None and shown and messages_tokens(messages) > budget_tokens:
            shown.pop()
            messages = build(shown)
        return messages

    def summarize_messages(self, source: str, spec: Any = None) -> list[dict[str, str]]:
        """Ask for a 2-4 sentence description of the strategy in `source`."""
        title = getattr(spec, "title", None) or "a two-player game"
        return [{"role": "user", "content": self._render(
            "summarize", {"title": title, "source": fence_code(source)}, allow_unused=True
        )}]

    # ---------------------------------------------------------------- parts
    def _rejections_text(self, rejections: Sequence[Any], options: ContextOptions) -> str:
        recent = list(rejections)[-options.max_rejections :] if options.max_rejections else []
        texts = []
        for item in recent:
            proposal, reason = item if isinstance(item, tuple) else (item, getattr(item, "reason", ""))
            source = proposal if isinstance(proposal, str) else getattr(proposal, "source", "")
            texts.append(self._render(
                "rejection", {"reason": reason or "(no reason given)", "source": fence_code(source)},
                allow_unused=True,
            ))
        earlier = len(rejections) - len(recent)
        if earlier > 0:
            texts.append(f"({earlier} earlier rejected proposal{'s' if earlier > 1 else ''} not shown.)")
        return "\n\n".join(texts)

    def _with_opponents(
        self,
        template: str,
        spec: Any,
        fields: dict[str, str],
        opponents: Sequence[OpponentBrief],
        budget_tokens: int | None,
        options: ContextOptions,
    ) -> list[dict[str, str]]:
        system = self.system_message(spec)
        if not opponents and template == "refine":
            # Refining without opponents: leave the whole section out.
            user = self._render(template, fields | {"opponents": "", "opponent_note": ""}, allow_unused=True)
            return [system, {"role": "user", "content": user}]
        available: int | None = None
        if budget_tokens is not None:
            bare = self._render(template, fields | {"opponents": "", "opponent_note": ""}, allow_unused=True)
            available = budget_tokens - messages_tokens([system, {"role": "user", "content": bare}])
            available -= _NOTE_RESERVE_TOKENS
        entries, note = select_opponents(opponents, available, options)
        user = self._render(
            template,
            fields | {"opponents": ("\n" if all(m == "name" for _, m in entries) else "\n\n").join(
                          _opponent_text(n, b, m) for n, (b, m) in enumerate(entries, 1)),
                      "opponent_note": note},
            allow_unused=True,
        )
        return [system, {"role": "user", "content": user}]


# --------------------------------------------------------------------- opponents
def select_opponents(
    opponents: Sequence[OpponentBrief], available_tokens: int | None, options: ContextOptions
) -> tuple[list[tuple[OpponentBrief, str]], str]:
    """Choose which opponents go in the prompt and how ("code" or "summary").

    Returns (entries ordered by weight, a note for the prompt).  Within
    `available_tokens` (None: no limit): keep the top_k by weight; drop the
    lowest-weight while over budget (keeping one); switch the rest to
    summaries, lowest weight first; drop more if still over; finally bring
    dropped ones back as summaries (or code) while they fit.
    """
    ranked = sorted((o for o in opponents if o.weight > 0), key=lambda o: (-o.weight, o.policy_id))
    zero_weight = len(opponents) - len(ranked)
    chosen = ranked[: options.top_k]
    beyond_top_k = ranked[options.top_k :]

    def preferred(brief: OpponentBrief) -> str:
        if options.opponent_format == "names":
            return "name"
        return "summary" if options.opponent_format == "summary" and brief.summary else "code"

    entries = [(b, preferred(b)) for b in chosen]

    def cost(items: list[tuple[OpponentBrief, str]]) -> int:
        return sum(estimate_tokens(_opponent_text(n, b, m)) + 1 for n, (b, m) in enumerate(items, 1))

    def fits(items: list[tuple[OpponentBrief, str]]) -> bool:
        return available_tokens is None or cost(items) <= available_tokens

    dropped: list[OpponentBrief] = []
    while not fits(entries) and len(entries) > 1:
        dropped.append(entries.pop()[0])
    for index in reversed(range(len(entries))):
        if fits(entries):
            break
        brief, mode = entries[index]
        if mode == "code" and brief.summary:
            entries[index] = (brief, "summary")
    while not fits(entries) and entries:
        dropped.append(entries.pop()[0])
    for brief in sorted(dropped, key=lambda o: (-o.weight, o.policy_id)):
        modes = ["summary", "code"] if brief.summary else ["code"]
        for mode in modes:
            candidate = sorted(entries + [(brief, mode)], key=lambda e: (-e[0].weight, e[0].policy_id))
            if fits(candidate):
                entries = candidate
                break

    shown = {b.policy_id for b, _ in entries}
    left_out = [o for o in ranked if o.policy_id not in shown]
    return entries, _opponent_note(entries, left_out, zero_weight, len(beyond_top_k), options)


def _opponent_note(
    entries: list[tuple[OpponentBrief, str]],
    left_out: list[OpponentBrief],
    zero_weight: int,
    beyond_top_k: int,
    options: ContextOptions,
) -> str:
    if not entries and not left_out:
        return "The population has no opponents with weight yet: write a strong, robust policy."
    summaries = sum(1 for _, mode in entries if mode == "summary")
    total = len(entries) + len(left_out)
    if left_out:
        parts = [f"Showing {len(entries)} of the {total} opponents with positive weight"]
    else:
        parts = [f"All {total} opponent{'s' if total > 1 else ''} with positive weight shown"]
    if summaries:
        parts.append(f"{summaries} of them as summaries of their code")
    if entries and all(mode == "name" for _, mode in entries):
        parts.append("by name and weight: the next section says how their mixture plays in every situation")
    if left_out:
        weight = sum(o.weight for o in left_out)
        reason = f"beyond the top {options.top_k} or " if beyond_top_k else ""
        parts.append(f"{len(left_out)} left out ({reason}for space), total weight {weight:.3f}")
    note = "; ".join(parts) + "."
    if zero_weight:
        note += f" {zero_weight} population member{'s' if zero_weight > 1 else ''} with zero weight not shown."
    return note


def _opponent_text(number: int, brief: OpponentBrief, mode: str) -> str:
    header = f"### Opponent {number}: {brief.name} (id {brief.policy_id}), weight {brief.weight:.3f}"
    if mode == "name":
        return f"- {brief.name} (id {brief.policy_id}), weight {brief.weight:.3f}"
    if mode == "summary" and brief.summary:
        return f"{header}, summary of its code\n{brief.summary.strip()}"
    return f"{header}\n{fence_code(brief.source)}"


# --------------------------------------------------------------------- helpers
# The best-response task's seat sentence with one population (policies play both seats).
BOTH_SEATS_NOTE = "Every matchup is played in both seats and averaged, so your policy must play either seat."


def seat_note(spec: Any, seat: int | None, both_seats: str = "") -> str:
    """The task's sentence on seats: with two populations the seat the policy plays and the one
    its opponents play; with one, `both_seats` ("" leaves the template's line out)."""
    if seat is None:
        return both_seats
    return (f"You play {seat_words(spec, seat)} in every game, never the other seat: the opponents below "
            f"are the other population and always play {seat_words(spec, 1 - seat)}. Write the policy for "
            f"{seat_words(spec, seat)}; your payoff is your return there.")


def fence_code(source: str, language: str = "python") -> str:
    """`source` in a Markdown fence longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", source)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{source.rstrip()}\n{fence}"


def game_fields(spec: Any) -> dict[str, str]:
    """Fields of game.md from a GameSpec-like object (title, rules_text, observation_text, game_info())."""
    try:
        names = list(spec.game_info().get("action_names") or [])
    except Exception:  # noqa: BLE001 - a spec without action names still gets a prompt
        names = []
    listed = [f"{index}: {name}" for index, name in enumerate(names[:_MAX_LISTED_ACTIONS])]
    if len(names) > _MAX_LISTED_ACTIONS:
        listed.append(f"... ({len(names)} actions in all; names follow the same pattern)")
    return {
        "title": getattr(spec, "title", "") or getattr(spec, "name", "the game"),
        "rules": (getattr(spec, "rules_text", "") or "").strip() or "(no rules text)",
        "observation": (getattr(spec, "observation_text", "") or "").strip() or "(no observation text)",
        "actions": "\n".join(listed) or "(see the rules)",
        "contract": POLICY_CONTRACT.strip(),
        "game_dict": game_dict_text(spec),
        "example_observation": example_observations_text(spec),
    }


def game_dict_text(spec: Any) -> str:
    """The `game` dict a policy receives, as a fenced Python literal ("" if the spec cannot say)."""
    try:
        info = spec.example_game(0) if hasattr(spec, "example_game") else None
    except Exception:  # noqa: BLE001 - the prompt works without it
        info = None
    if not isinstance(info, dict):
        return ""
    info = dict(info)
    rules = str(info.get("rules", ""))
    if len(rules) > _SHORT_RULES_CHARS:
        info["rules"] = rules[: _SHORT_RULES_CHARS - 1].rstrip() + "…"
    names = list(info.get("action_names") or [])
    if len(names) > _MAX_LISTED_ACTIONS:
        info["action_names"] = names[:_MAX_LISTED_ACTIONS] + [f"... ({len(names)} in all)"]
    lines = ["{"] + [f"    {json.dumps(key)}: {_python_literal(value)}," for key, value in info.items()] + ["}"]
    return fence_code("\n".join(lines))


def example_observations_text(spec: Any) -> str:
    """Real observations (`GameSpec.example_observation`), one per seat, fenced ("" if unavailable)."""
    if not hasattr(spec, "example_observation"):
        return ""
    shown: list[str] = []
    for player, decisions in ((0, 3), (1, 1)):
        try:
            obs = spec.example_observation(player, decisions=decisions)
        except Exception:  # noqa: BLE001 - a game without an example still gets a prompt
            continue
        text = _python_literal(obs)
        if len(text) > _MAX_EXAMPLE_OBS_CHARS:
            text = text[: _MAX_EXAMPLE_OBS_CHARS - 1] + "…"
        shown.append(f"# seat {player}\nobs = {text}")
    return fence_code("\n".join(shown)) if shown else ""


def _python_literal(value: Any) -> str:
    """JSON written as Python (None/True/False), which is what the policy sees after decoding."""
    text = json.dumps(value, ensure_ascii=False)
    return re.sub(r'("(?:[^"\\]|\\.)*")|\bnull\b|\btrue\b|\bfalse\b',
                  lambda m: m.group(1) or {"null": "None", "true": "True", "false": "False"}[m.group(0)], text)


def _feedback_text(feedback: EvaluationFeedback | str | None, options: ContextOptions) -> str:
    if feedback is None:
        return ""
    if isinstance(feedback, EvaluationFeedback):
        return feedback.render(options.max_traceback_chars)
    return str(feedback).strip()


def _score_text(score: float | None) -> str:
    return "not measured" if score is None else f"{score:+.3f}"


def messages_tokens(messages: Iterable[Mapping[str, str]]) -> int:
    """Estimated tokens of a message list (characters / 4, plus a little per message)."""
    return sum(estimate_tokens(m["content"]) + 4 for m in messages)


def _drop_empty_sections(text: str) -> str:
    """Remove Markdown headings whose section (up to the next heading of the same or a higher level) is blank."""
    lines = text.split("\n")
    levels = [len(m.group(1)) if (m := re.match(r"(#+)[ \t]", line)) else 0 for line in lines]
    kept: list[str] = []
    for index, line in enumerate(lines):
        level = levels[index]
        if level:
            end = next((j for j in range(index + 1, len(lines)) if 0 < levels[j] <= level), len(lines))
            if all(not later.strip() for later in lines[index + 1 : end]):
                continue
        kept.append(line)
    return "\n".join(kept)


def _stray_dollar_line(template: string.Template) -> int:
    for match in template.pattern.finditer(template.template):
        if match.group("invalid") is not None:
            return template.template.count("\n", 0, match.start()) + 1
    return 0
