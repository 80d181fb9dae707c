"""What the rest of csro-tui needs to know about one game.

A `GameSpec` wraps an OpenSpiel game with everything the CSRO loop needs
around it (docs/ARCHITECTURE.md, Contract 3):

- `new_view(player)` builds an `ObservationView`, which turns OpenSpiel states
  into the JSON observation one code policy receives (only what that player
  may know);
- `benchmark()` lists trusted `BenchmarkBot`s (RRPS competition bots, CFR+,
  always-call, ...) that run in the referee's process;
- `seed_policies()` returns hand-written policy modules to start populations;
- `rules_text` / `observation_text` explain the game and the observation to
  people and to the LLM; `example_observation(player)` is a real observation
  from a played state and `example_game(player)` the `game` dict a policy
  receives, both for showing the keys with real values;
- `presentation()` says how a person sees the game at the play screen
  (move labels, bet sizes, the table, rounds, the showdown:
  `games/presentation.py`);
- capabilities the rest asks for instead of a game's name or type:
  `exact` (small enough to tabularise), `history_is_state` (the referee's
  fast lockstep path), `mixture_probes` (how the LLM prompt shows what a
  mixture does), and for behaviour profiles (`csro_tui/profiles/`):
  `situation(obs)` (a decision named as a player would), `behaviour_probes()`
  (fixed opponents a repeated game's policy is profiled against) and
  `profile_episodes`.

No code outside `games/` branches on a particular game (tests/games/test_game_knowledge_stays_in_games.py).

Games live in their own modules (`rrps`, `kuhn`, `leduc`, `repeated_leduc`, `liars_dice`,
`generic`); `csro_tui.games.registry.get_game` builds them from a name.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence

import pyspiel

from csro_tui.games.presentation import Presentation

if TYPE_CHECKING:  # OpenSpiel's python policies are only needed for typing here
    from open_spiel.python import policy as openspiel_policy

    from csro_tui.games.presentation import Presentation


class ObservationView:
    """One player's view of one episode: OpenSpiel state -> JSON observation.

    A view is created per (episode, player) and may keep state between calls
    (move histories in repeated games).  The referee calls `observe` only when
    the player must act.  The returned dict is JSON-serialisable and always
    has "legal_actions" (list of int).
    """

    def __init__(self, player: int) -> None:
        self.player = player

    def observe(self, state: pyspiel.State) -> dict:
        raise NotImplementedError


class BotAgent(Protocol):
    """A benchmark bot playing one seat of one episode."""

    def step(self, state: pyspiel.State) -> int:
        """Choose an action for this agent's player at `state`."""
        ...

    def action_probabilities(self, state: pyspiel.State) -> dict[int, float] | None:
        """The distribution `step` samples from (tabular bots), else None."""
        ...


DistributionFn = Callable[[pyspiel.State], dict[int, float]]


def sample_action(distribution: dict[int, float], rng: random.Random) -> int:
    """Draw one action from {action: probability} with `rng` (deterministic order)."""
    actions = sorted(distribution)
    threshold = rng.random() * sum(distribution[a] for a in actions)
    cumulative = 0.0
    for action in actions:
        cumulative += distribution[action]
        if threshold < cumulative:
            return action
    # Rounding can leave threshold == total; the last positive action is right.
    return next(a for a in reversed(actions) if distribution[a] > 0)


class TabularAgent:
    """A bot defined by a distribution per state; samples with a seeded rng."""

    def __init__(self, player: int, seed: int, distribution: DistributionFn) -> None:
        self.player = player
        self._distribution = distribution
        self._rng = random.Random(seed)

    def action_probabilities(self, state: pyspiel.State) -> dict[int, float]:
        return self._distribution(state)

    def step(self, state: pyspiel.State) -> int:
        return sample_action(self._distribution(state), self._rng)


class BenchmarkBot:
    """A named, trusted opponent from a game's benchmark population.

    `make(player, seed)` returns a fresh `BotAgent` for one episode.
    `tabular_policy(game)` returns the bot as an OpenSpiel python policy for
    exact evaluation, or None when the bot is not tabular.
    """

    def __init__(
        self,
        name: str,
        description: str,
        make_agent: Callable[[int, int], BotAgent],
        tabular: Callable[[pyspiel.Game], "openspiel_policy.Policy"] | None = None,
    ) -> None:
        self.name = name
        self.description = description
        self._make_agent = make_agent
        self._tabular = tabular

    def make(self, player: int, seed: int) -> BotAgent:
        """A fresh agent for `player` in one episode, seeded with `seed`."""
        return self._make_agent(player, seed)

    @property
    def is_tabular(self) -> bool:
        return self._tabular is not None

    def tabular_policy(self, game: pyspiel.Game) -> "openspiel_policy.Policy | None":
        """This bot as an OpenSpiel policy over `game` (both seats), or None."""
        return self._tabular(game) if self._tabular is not None else None

    def __repr__(self) -> str:
        return f"BenchmarkBot({self.name!r})"


@dataclass(frozen=True)
class MixtureProbe:
    """A fixed sequence of moves a simultaneous-move game's prompt plays against
    each mixture member to show how it answers (`move(t)` at throw t, seat 0)."""

    label: str  # "Rock every throw"
    move: Callable[[int], int]


@dataclass(frozen=True)
class Situation:
    """A decision named the way a player would (behaviour profiles): `group` is what
    the player holds ("King"), `label` what happened so far ("facing a bet"), and
    `moves` the word for each action there ({0: "fold", 1: "call"}; empty: the
    game's action names)."""

    group: str
    label: str
    moves: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.group}, {self.label}" if self.group else self.label


def uniform_distribution(legal_actions: list[int]) -> dict[int, float]:
    """Equal probability on every legal action."""
    return {a: 1.0 / len(legal_actions) for a in legal_actions}


class GameSpec:
    """Everything csro-tui knows about one game (see module docstring).

    Subclasses set the class attributes and implement `new_view` and
    `benchmark`.  `name` round-trips through `registry.get_game`; a spec
    pickles as its name, so worker processes rebuild it from the registry.
    """

    name: str
    title: str
    game_string: str  # what pyspiel.load_game receives
    rules_text: str
    observation_text: str
    exact: bool = False  # small enough to tabularise (Kuhn, Leduc)
    default_episodes: int = 100
    # Episodes per member of a sampled preview when the run sets none (None: the
    # gate's default, 10).  A game whose episode returns are all-or-nothing sets
    # more: Liar's Dice's +-1 needs ~200 for the gate's noise margin to let a
    # real improvement through.
    preview_episodes: int | None = None
    # How population metrics weigh the benchmark bots: "uniform" = every bot
    # counts the same (PopReturn is the plain mean over bots, as in OpenSpiel's
    # roshambo_population_example.py).
    benchmark_weighting: str = "uniform"
    seed_dir: str = ""  # folder under games/seeds/ holding this game's seeds
    # The joint-action history is the whole state and the observation is the
    # RRPS view's (round, my_moves, opp_moves, my_score) over Rock-Paper-
    # Scissors throws: code-vs-code matches may then run without OpenSpiel
    # states (evaluation/rrps_lockstep.py; OpenSpiel stays the referee of record).
    history_is_state: bool = False
    # Fixed move sequences the LLM prompt plays against each weighted member to
    # show what the mixture does (simultaneous-move games; oracles/llm/mixture.py).
    # Exact games describe the mixture from its tables instead; others say nothing.
    mixture_probes: Sequence[MixtureProbe] = ()
    # Each seat's part in the rules' words, for the LLM prompt of a two-population
    # run ("you play seat 1 (second to act)"); empty: the seat number says it all.
    seat_roles: Sequence[str] = ()
    # Episodes per opponent of a sampled behaviour profile (csro_tui/profiles/):
    # short games need many to show frequencies; a long repeated match a few.
    profile_episodes: int = 200

    def __init__(self) -> None:
        self._game: pyspiel.Game | None = None
        self.params: dict[str, Any] = {}

    def load(self) -> pyspiel.Game:
        """The OpenSpiel game, loaded once per spec."""
        if self._game is None:
            self._game = pyspiel.load_game(self.game_string)
        return self._game

    def action_names(self) -> list[str]:
        """Name of every action id (index = id)."""
        game = self.load()
        return [game.action_to_string(0, a) for a in range(game.num_distinct_actions())]

    def game_info(self) -> dict:
        """The `game` dict a policy receives (Contract 1), minus player and seed."""
        game = self.load()
        return {
            "name": self.name,
            "num_players": game.num_players(),
            "num_actions": game.num_distinct_actions(),
            "action_names": self.action_names(),
            "rules": self.rules_text,
            "params": dict(self.params),
        }

    def new_view(self, player: int) -> ObservationView:
        raise NotImplementedError

    def presentation(self) -> "Presentation":
        """How the play screen shows this game (games/presentation.py); the default
        shows any game from its observation."""
        return Presentation(self)

    def situation(self, observation: dict) -> Situation:
        """The decision `observation` shows, named as a player would, for behaviour
        profiles (csro_tui/profiles/).  The default names it by OpenSpiel's
        observation (or information-state) string; games with cards or dice say
        what the player holds and what happened so far."""
        text = observation.get("observation") or observation.get("info_state") or ""
        text = " ".join(str(text).split())
        return Situation("", text[:70] + ("…" if len(text) > 70 else "") or "(no observation)", {})

    def frequency_conditions(self, observation: dict) -> Sequence[str]:
        """The conditions under which a behaviour profile counts how often each move is made
        at `observation` ("all throws", "after its own Rock", ...: RRPS); empty: none (the
        situations say it)."""
        return ()

    def behaviour_probes(self) -> Sequence[BenchmarkBot]:
        """Fixed, trusted opponents a policy is played against to see what it does
        (repeated games: constant, cycling, ... players).  Empty: an exact game is
        profiled from its table, other games by their moves against the benchmark."""
        return ()

    def example_observation(self, player: int = 0, *, decisions: int = 3, seed: int = 0) -> dict:
        """A real observation `player` receives: at its `decisions`-th decision of one episode
        (or its last, if the episode ends sooner; `example_decision` says which one it is)."""
        return self.example_decision(player, decisions=decisions, seed=seed)[0]

    def example_decision(self, player: int = 0, *, decisions: int = 3, seed: int = 0) -> tuple[dict, int]:
        """A real observation `player` receives, and at which of its decisions (1 for the first).

        The episode is played from the start with seeded random moves for
        both players (chance sampled, automatic actions applied as the
        referee does), `player`'s view observing at each of its decisions
        as it would in a match; the observation at the `decisions`-th one,
        or at its last if the episode ends sooner, is returned (a deep copy,
        JSON-serialisable, with "legal_actions").  Used by the LLM prompts
        and `csro games GAME` to show the obs keys with real values; the
        keys are documented in `observation_text`.
        """
        import copy

        rng = random.Random(seed)
        state = self.load().new_initial_state()
        view = self.new_view(player)
        seen: dict | None = None
        count = 0
        while not state.is_terminal() and count < max(1, decisions):
            if state.is_chance_node():
                outcomes = state.chance_outcomes()
                state.apply_action(sample_action(dict(outcomes), rng))
                continue
            auto = self.auto_action(state)
            if auto is not None:
                state.apply_action(auto)
                continue
            if state.is_simultaneous_node():
                seen = copy.deepcopy(view.observe(state))
                count += 1
                state.apply_actions([rng.choice(state.legal_actions(p)) for p in range(state.num_players())])
                continue
            if state.current_player() == player:
                seen = copy.deepcopy(view.observe(state))
                count += 1
            state.apply_action(rng.choice(state.legal_actions()))
        if seen is None:
            raise ValueError(f"{self.name}: player {player} never acts in the example episode")
        return seen, count

    def example_game(self, player: int = 0, seed: int = 12345) -> dict:
        """The `game` dict a policy's `__init__` receives (Contract 1), with example player and seed."""
        return dict(self.game_info(), player=player, seed=seed)

    def auto_action(self, state: pyspiel.State) -> int | None:
        """An action the referee applies itself (no policy is asked), or None."""
        return None

    def benchmark(self) -> list[BenchmarkBot]:
        raise NotImplementedError

    def benchmark_bot(self, name: str) -> BenchmarkBot:
        """The benchmark bot called `name` (KeyError if there is none)."""
        for bot in self.benchmark():
            if bot.name == name:
                return bot
        raise KeyError(f"{self.name} has no benchmark bot {name!r}")

    def seed_policies(self) -> dict[str, str]:
        """Hand-written seed policies: file stem -> policy module source."""
        folder = resources.files("csro_tui.games").joinpath("seeds", self.seed_dir)
        if not self.seed_dir or not folder.is_dir():
            return {}
        return {
            entry.name.removesuffix(".py"): entry.read_text(encoding="utf-8")
            for entry in sorted(folder.iterdir(), key=lambda e: e.name)
            if entry.name.endswith(".py") and not entry.name.startswith("_")
        }

    def __reduce__(self):
        # Specs hold a loaded pyspiel game; rebuilding from the name is cheaper
        # and keeps worker processes on the same registry code path.
        from csro_tui.games.registry import get_game  # start-up time: importing it loads numpy, open_spiel

        return (get_game, (self.name,))

    def __repr__(self) -> str:
        return f"<GameSpec {self.name}>"
