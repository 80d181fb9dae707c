"""What the dashboard shows, as plain data (no textual import).

Widgets render a `DashboardData`; it is built from a session fold (live from
engine events, or from a recorded session up to a step of its timeline), or
constructed directly in tests.  Keeping it UI-free means the adapter from
the session state can be tested without an app.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from csro_tui.numbers import number
from csro_tui.oracles.llm.keys import KeyTrust


@dataclass(frozen=True)
class Cell:
    """One matchup of the payoff matrix: row policy's mean return."""

    mean: float
    stderr: float = 0.0
    episodes: int = 0
    exact: bool = False
    self_play: bool = False  # a policy against itself: 0 by symmetry, never evaluated

    def describe(self) -> str:
        if self.self_play:
            return "0 by symmetry (against itself)"
        if self.exact:
            return f"{number(self.mean, 4, signed=True)} (exact)"
        return f"{number(self.mean, 4, signed=True)} ± {number(self.stderr, 4)} (sampled, {self.episodes} episodes)"


@dataclass(frozen=True)
class Member:
    """A row of the population table."""

    id: str
    name: str
    origin: str
    parent: str | None = None
    weight: float = 0.0
    source: str = ""
    iteration: int = 0
    scores: dict[str, float] = field(default_factory=dict)
    edited_by: str | None = None  # a person changed the oracle's code before accepting it
    score_stderr: dict[str, float] = field(default_factory=dict)  # sampled scores' standard errors
    # Two populations: the seat whose population it belongs to (0 or 1); None: one
    # population, it plays both seats.
    seat: int | None = None

    @property
    def origin_text(self) -> str:
        return f"{self.origin} ✎ {self.edited_by}" if self.edited_by else self.origin


@dataclass
class DashboardData:
    game: str = ""
    oracle: str = ""
    meta_solver: str = ""
    members: list[Member] = field(default_factory=list)
    payoffs: dict[tuple[str, str], Cell] = field(default_factory=dict)
    metric_name: str = "exploitability"
    # (iteration, value), oldest first
    metric_history: list[tuple[int, float]] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    iteration: int = 0
    llm_calls: int = 0
    tokens: int = 0
    cost: float = 0.0
    games_played: int = 0
    closed: bool = False
    session_id: str = ""
    # How the session closed ("completed", "stopped", "error"), its message and event number.
    closed_reason: str = ""
    closed_message: str = ""
    closed_event: int = 0
    # 2: one population per seat (issue 23); the payoff matrix is seat 0's members (rows)
    # against seat 1's (columns), each cell the row member's return in its seat.
    populations: int = 1
    # Two populations: seat 0's value of the meta-game (seat 1's is its negation); None: unknown.
    meta_value: float | None = None

    @property
    def failed(self) -> bool:
        return self.closed_reason == "error"

    def seat_members(self, seat: int | None) -> list[Member]:
        """One seat's members in joining order (None: every member)."""
        return [m for m in self.members if seat is None or m.seat == seat]

    def opponents(self, member_id: str) -> list[Member]:
        """Whom a member plays: the other seat's population (two populations), else everyone."""
        member = self.member(member_id)
        if self.populations == 2 and member is not None and member.seat in (0, 1):
            return self.seat_members(1 - member.seat)
        return list(self.members)

    def member(self, member_id: str) -> Member | None:
        return next((m for m in self.members if m.id == member_id), None)

    def cell(self, row: str, col: str) -> Cell | None:
        return self.payoffs.get((row, col))

    def row(self, member_id: str) -> list[tuple[Member, Cell | None]]:
        """The member against each of its opponents (`opponents`), from its own seat."""
        return [(m, self.cell(member_id, m.id)) for m in self.opponents(member_id)]

    def lineage(self, member_id: str) -> list[Member]:
        """The member and its ancestors, newest first (stops at cycles)."""
        chain: list[Member] = []
        seen: set[str] = set()
        current = self.member(member_id)
        while current is not None and current.id not in seen:
            chain.append(current)
            seen.add(current.id)
            current = self.member(current.parent) if current.parent else None
        return chain

    def children(self, member_id: str) -> list[Member]:
        return [m for m in self.members if m.parent == member_id]


@dataclass(frozen=True)
class MemberView:
    """How the population views (table, meta-strategy, payoff matrix) list the members:
    by weight (the members with weight first, heaviest first, then the rest in joining order)
    or by id (joining order), and only those whose id or name contains `text` (the `/`
    filter; case does not matter).  A 200-member session listed p0…p10 at weight 0 first,
    the 35 members with weight off screen."""

    by_weight: bool = True
    text: str = ""

    def matches(self, member: Member) -> bool:
        needle = self.text.strip().lower()
        return not needle or needle in member.id.lower() or needle in member.name.lower()

    def members(self, members: list[Member]) -> list[Member]:
        shown = [m for m in members if self.matches(m)]
        if self.by_weight:  # sorted() is stable: equal weights (all the zeros) keep joining order
            shown = sorted(shown, key=lambda m: -m.weight if m.weight > 0 else 0.0)
        return shown

    def describe(self, shown: int, total: int) -> str:
        """The panel's note: the order, and the filter with how many it keeps."""
        order = "by weight" if self.by_weight else "by id"
        if self.text.strip():
            return f"/{self.text.strip()}: {shown} of {total} · {order}"
        return order


def bar(fraction: float, width: int) -> str:
    """A horizontal bar of `width` cells filled to `fraction`, in eighths."""
    eighths = "▏▎▍▌▋▊▉█"
    fraction = min(max(fraction, 0.0), 1.0)
    total = round(fraction * width * 8)
    full, rest = divmod(total, 8)
    text = "█" * full + (eighths[rest - 1] if rest else "")
    return text.ljust(width)


def block_plot(values: list[float], height: int, width: int | None = None, floor: float | None = None) -> list[str]:
    """Rows (top first) of a column chart made of block characters.

    Each value is one column (the last `width` values when there are more);
    the bottom row is `floor` (default: the lowest value), the highest value fills the column.
    """
    if not values or height <= 0:
        return [""] * max(height, 0)
    if width is not None and len(values) > width:
        values = values[-width:]
    low, high = min(values), max(values)
    if floor is not None:
        low = min(low, floor)
    span = high - low
    levels = height * 8
    rows = [[" "] * len(values) for _ in range(height)]
    partial = " ▁▂▃▄▅▆▇"
    for x, value in enumerate(values):
        # at least one eighth so a minimum is still visible
        level = levels if span == 0 else max(1, round((value - low) / span * levels))
        for r in range(height):  # r = 0 is the bottom row
            fill = level - r * 8
            char = "█" if fill >= 8 else (partial[fill] if fill > 0 else " ")
            rows[height - 1 - r][x] = char
    return ["".join(row) for row in rows]


@dataclass
class ReviewInfo:
    """Everything the review screen shows about one proposal.

    Built from the engine's review request by the bridge, so the screen
    depends on this shape only.
    """

    name: str
    oracle: str
    source: str
    parent: str | None = None
    parent_source: str | None = None
    rationale: str = ""
    llm_calls: list[dict] = field(default_factory=list)
    iteration: int = 0
    attempt: int = 1
    valid: bool = True
    validation: list[str] = field(default_factory=list)  # issues / smoke-run lines
    expected_payoff: float | None = None
    per_member: dict[str, float] = field(default_factory=dict)
    population_metrics: dict[str, float] | None = None
    # The expected payoff's standard error when the preview was sampled (None: exact, or no preview);
    # 0.0 when sampled too briefly to measure its noise.
    expected_stderr: float | None = None
    failure: str | None = None  # one-line failure summary (validation or preview)
    # Set when the oracle found nothing that works and handed over its last failed code
    # (`Proposal.failure`): why that code failed for the oracle.
    oracle_failure: str = ""
    proposal_id: str = ""
    # When this is a reviewer's edit: the versions it replaced, the oracle's
    # original first, as (proposal id, source, edited by, expected payoff measured for it).
    history: list[tuple[str, str, str | None, float | None]] = field(default_factory=list)
    edited_by: str | None = None
    # Set by the gate when the code or behaviour repeats a member or an earlier rejection.
    duplicate_of: str | None = None
    duplicate_reason: str = ""
    # Why the auto reviewer would reject it (`Preview.shortfall`: no improvement beyond the
    # noise margin), or None when it would not; the person may still accept.
    shortfall: str | None = None
    max_attempts: int = 0  # oracle attempts allowed per iteration (0: unknown)
    # Two populations: the seat the proposal is for (its preview is against the other
    # seat's members and mixture); None: one population.
    seat: int | None = None
    # Two populations: the seat's value of the meta-game, the bar its expected payoff must beat
    # (Kuhn's seat 0 is worth -1/18); None: one population (the bar is 0).
    seat_value: float | None = None
    # The sandbox limits the run raised above their defaults, one line ("" when none: issue 35).
    loosened_limits: str = ""
    # Population member id -> name (the members it is previewed against), to show names beside ids.
    member_names: dict[str, str] = field(default_factory=dict)
    # Per member: the standard error of `per_member`'s mean (sampled previews).
    member_stderr: dict[str, float] = field(default_factory=dict)
    # A progressive review (sampled games): the preview still being measured
    # (`engine.gate.LivePreview`, polled by the screen) and how far it is; None / "" once done.
    live_preview: Any = None
    measuring: str = ""

    @property
    def original_source(self) -> str | None:
        return self.history[0][1] if self.history else None


@dataclass(frozen=True)
class ReviewDecision:
    """What the person decided: accept, edit (with source), reject (with reason) or regenerate."""

    kind: str  # "accept" | "edit" | "reject" | "regenerate" | "cancel"
    source: str | None = None
    reason: str | None = None


@dataclass
class LaunchOptions:
    """A new session as chosen on the start screen or with `csro tui` flags."""

    game: str = "kuhn_poker"
    oracle: str = "best-response"
    model: str | None = None
    base_url: str | None = None
    meta_solver: str = "nash"
    episodes: int | None = None  # evaluation budget per matchup; None: the game's default
    seed: int | None = None  # None: a fresh secret seed, chosen when the session starts
    iterations: int | None = None  # run this many at once (each still reviewed)
    seed_policies: list[str] = field(default_factory=list)  # empty: the game's default seeds
    human_file: str | None = None  # the human oracle's policy file
    # Where sampled matches are played: "local" or "ray" (on the cluster at
    # ray_address; "" = $RAY_ADDRESS or a Ray started on this machine).
    backend: str = "local"
    ray_address: str = ""
    # The sandbox's chess clock (RunConfig fields of the same names); None: the default.
    move_budget: float | None = None
    budget_reserve: float | None = None
    init_budget: float | None = None
    populations: int = 1  # 2: one population per seat (RunConfig.populations)
    # Where the user lets an LLM key go (`csro tui --base-url/--trust-base-url`, the environment,
    # the user's config, a base URL typed into the form): not a setting, never recorded (issue 35).
    key_trust: KeyTrust | None = field(default=None, compare=False, repr=False)
    # `csro tui --config FILE`: the session's settings the form does not show (oracle_options,
    # the [llm] table, max_attempts, ...) come from it, as `csro run --config` takes them.
    config_file: str | None = None

    @classmethod
    def from_config(cls, config: Any, iterations: int | None = None, config_file: str | None = None) -> "LaunchOptions":
        """From a `RunConfig` (defaults < csro.toml < environment < flags, or a recorded run)."""
        return cls(
            game=config.game,
            oracle=config.oracle,
            model=config.model or None,
            base_url=config.base_url or None,
            meta_solver=config.solver,
            episodes=config.episodes,
            seed=config.seed,
            iterations=iterations,
            seed_policies=list(config.seed_policies),
            human_file=str(config.oracle_options.get("path")) if config.oracle_options.get("path") else None,
            backend=config.backend,
            ray_address=config.ray_address,
            move_budget=getattr(config, "move_budget", None),
            budget_reserve=getattr(config, "budget_reserve", None),
            init_budget=getattr(config, "init_budget", None),
            populations=int(getattr(config, "populations", 1) or 1),
            config_file=config_file,
        )

    def flags(self) -> dict[str, Any]:
        """As `load_run_config` flags (None: not given)."""
        return {
            "game": self.game,
            "oracle": self.oracle,
            "model": self.model,
            "base_url": self.base_url,
            "solver": self.meta_solver,
            "episodes": self.episodes,
            "seed": self.seed,
            "seed_policies": list(self.seed_policies) or None,
            "oracle_options": {"path": self.human_file} if self.human_file else None,
            "backend": self.backend,
            "ray_address": self.ray_address or None,
            "move_budget": self.move_budget,
            "budget_reserve": self.budget_reserve,
            "init_budget": self.init_budget,
            "populations": self.populations,
        }


@dataclass
class StartChoices:
    games: list[str] = field(default_factory=list)
    oracles: list[str] = field(default_factory=list)
    llm_oracles: set[str] = field(default_factory=set)  # the oracles that need a model
    file_oracles: set[str] = field(default_factory=set)  # the oracles that need a policy file
    solvers: list[str] = field(default_factory=list)
    # (session id, summary line) of recorded sessions, newest first
    sessions: list[tuple[str, str]] = field(default_factory=list)
