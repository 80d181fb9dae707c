"""Any two-player zero-sum OpenSpiel game, through its own strings.

The observation is what OpenSpiel offers a player: its information-state
string and observation string (None where the game provides none), the
legal actions and their names.  The benchmark is a uniform-random bot; the
seeds are a uniform-random and a first-legal-action policy.  No exact
evaluation.
"""

from __future__ import annotations

import pyspiel
from open_spiel.python import policy as openspiel_policy

from csro_tui.games.base import (
    BenchmarkBot,
    GameSpec,
    ObservationView,
    TabularAgent,
    uniform_distribution,
)
from csro_tui.games.presentation import PlayMove, PlayState, Presentation, one_line_text, short_value

# Above this many distinct actions, game_info lists no names per id (chess
# has 4672); the observation still names each legal action.
MAX_NAMED_ACTIONS = 1000

OBSERVATION_TEXT = """\
obs keys (generic OpenSpiel game):
- info_state: OpenSpiel's information-state string for you (everything you
  have observed so far), or None if the game has none.
- observation: OpenSpiel's observation string for you (the current view,
  possibly without memory), or None if the game has none.
- legal_actions: the action ids you may play now.
- legal_action_names: the name of each legal action, aligned with
  legal_actions.
"""


def _safe(call, *args):
    try:
        return call(*args)
    except pyspiel.SpielError:
        return None


class GenericView(ObservationView):
    """Stateless view built from OpenSpiel's per-player strings."""

    def __init__(self, player: int, game_type: pyspiel.GameType) -> None:
        super().__init__(player)
        self._has_info_state = game_type.provides_information_state_string
        self._has_observation = game_type.provides_observation_string

    def observe(self, state: pyspiel.State) -> dict:
        player = self.player
        legal = state.legal_actions(player)
        return {
            "info_state": _safe(state.information_state_string, player) if self._has_info_state else None,
            "observation": _safe(state.observation_string, player) if self._has_observation else None,
            "legal_actions": list(legal),
            "legal_action_names": [state.action_to_string(player, a) for a in legal],
        }


class GenericPresentation(Presentation):
    """OpenSpiel's own strings: what the opponent saw is the view OpenSpiel printed for it."""

    def opponent_saw(self, session: PlayState, index: int, move: PlayMove) -> str:
        obs = move.observation or {}
        seen = obs.get("observation") or obs.get("info_state")
        parts = [f"saw {one_line_text(seen)}" if seen else "saw nothing OpenSpiel prints for it"]
        names = obs.get("legal_action_names")
        if names:
            parts.append(f"could play {short_value(list(names))}")
        return "; ".join(parts)


class GenericSpec(GameSpec):
    """Adapter for an OpenSpiel game string (checked by the registry)."""

    exact = False
    default_episodes = 100
    seed_dir = "generic"
    observation_text = OBSERVATION_TEXT

    def __init__(self, game_string: str, game: pyspiel.Game) -> None:
        super().__init__()
        self.name = game_string
        self.game_string = game_string
        self._game = game
        game_type = game.get_type()
        self.title = game_type.long_name
        self.params = _json_params(game.get_parameters())
        self.rules_text = _rules_text(game_string, game)

    def action_names(self) -> list[str]:
        game = self.load()
        count = game.num_distinct_actions()
        if count > MAX_NAMED_ACTIONS:
            return []
        names = []
        for action in range(count):
            name = _safe(game.action_to_string, 0, action)
            names.append(name if name and not name.startswith("Action(id=") else str(action))
        return names

    def new_view(self, player: int) -> ObservationView:
        return GenericView(player, self.load().get_type())

    def presentation(self) -> Presentation:
        return GenericPresentation(self)

    def benchmark(self) -> list[BenchmarkBot]:
        def make(player: int, seed: int) -> TabularAgent:
            return TabularAgent(
                player, seed, lambda state: uniform_distribution(state.legal_actions(player))
            )

        return [
            BenchmarkBot(
                "uniform_random",
                "Uniform over the legal actions",
                make,
                lambda game: openspiel_policy.UniformRandomPolicy(game),
            )
        ]


def _json_params(params: dict) -> dict:
    """OpenSpiel parameters as plain JSON values (nested games become dicts)."""
    return {
        key: _json_params(value) if isinstance(value, dict) else value
        for key, value in params.items()
    }


def _rules_text(game_string: str, game: pyspiel.Game) -> str:
    game_type = game.get_type()
    dynamics = (
        "Both players choose at the same time at each step."
        if game_type.dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS
        else "Players take turns."
    )
    chance = (
        "" if game_type.chance_mode == pyspiel.GameType.ChanceMode.DETERMINISTIC
        else " The game has chance events (dice, cards, ...)."
    )
    information = (
        "perfect information" if game_type.information == pyspiel.GameType.Information.PERFECT_INFORMATION
        else "imperfect information: you do not see everything"
    )
    return (
        f"{game_type.long_name} (OpenSpiel game '{game_string}'), two players, "
        f"{information}. {dynamics}{chance}\n"
        f"The rules are OpenSpiel's implementation of {game_type.long_name}; "
        f"the observation strings show the state as OpenSpiel prints it.\n"
        f"Returns are zero-sum, between {game.min_utility():g} and "
        f"{game.max_utility():g} for a player; {game.num_distinct_actions()} "
        f"distinct action ids exist, but only obs['legal_actions'] may be played.\n"
        f"Parameters: {game.get_parameters()}.\n"
    )
