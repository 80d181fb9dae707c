"""Repeated Rock-Paper-Scissors (RRPS) against the RoShamBo competition bots.

The game is OpenSpiel's `repeated_game(stage_game=matrix_rps(),
num_repetitions=N)`, a simultaneous-move game: at each node the referee asks
both players and calls `state.apply_actions`.

Observation cost.  A match is 1000 throws, so the view must be O(1) per
move: it keeps the two move lists and appends to the *same* list objects on
each call (the sandbox transport sends only the appended suffix of a list
that grows), and it reads only the newest joint action from the state (the
game's recall-1 observation tensor), never the whole history.

Benchmark bots.  The 43 bots of the first International RoShamBo
Programming Competition, as shipped in the open_spiel wheel
(`pyspiel.make_roshambo_bot`).  What we found by running them:

- 35 of them draw random numbers from the C library's process-global
  `random()`; only copybot, debruijn81, freqbot2, multibot, pibot, rockbot,
  rotatebot and textbot never do.  Left alone, their play depends on every
  other `random()` call in the process (e.g. other episodes run in
  lockstep).  `RoshamboAgent` therefore gives each agent its own glibc
  random state (`initstate` seeded with the episode seed) and installs it
  around every `bot.step` (`setstate`), under a lock: with that, every bot is
  deterministic given (opponent's moves, seed), whatever else of ours runs.
  The lock cannot hold off foreign C threads: a Ray worker's own threads
  call random() (measured), so the Ray backend plays matches in a child
  process of its actor, never in the actor itself.  Where
  the C library lacks `initstate`/`setstate` (not glibc/BSD), the bots run
  unseeded and `SEEDABLE_BOTS` is False.
- `make_roshambo_bot(player, name, num_throws)` accepts num_throws != 1000
  and sizes each bot's history for it, except that `greenberg` clears a
  1000-long table whatever num_throws is (heap corruption below 1000), so it
  is always built for max(num_throws, 1000) throws.  A bot must be stepped at
  every throw of its episode (it re-reads the last joint action each step).
"""

from __future__ import annotations

import ctypes
import threading
from functools import lru_cache

import pyspiel

from csro_tui.errors import UnknownGameError
from csro_tui.games.base import BenchmarkBot, GameSpec, MixtureProbe, ObservationView
from csro_tui.games.presentation import YOU, PlayState, Presentation, Round, outcome_word, signed
from csro_tui.games import behaviour

ROCK, PAPER, SCISSORS = 0, 1, 2
ACTION_NAMES = ["Rock", "Paper", "Scissors"]
DEFAULT_REPETITIONS = 1000

# Bots that never call random(): observed by running each one twice with
# different seeds against the same opponent; see the module docstring.
DETERMINISTIC_BOTS = frozenset(
    {"copybot", "debruijn81", "freqbot2", "multibot", "pibot", "rockbot", "rotatebot", "textbot"}
)


def rrps_game_string(num_repetitions: int) -> str:
    return f"repeated_game(stage_game=matrix_rps(),num_repetitions={num_repetitions})"


def throw_score(mine: int, theirs: int) -> int:
    """+1 if `mine` beats `theirs`, -1 if it loses, 0 for a tie."""
    return (0, 1, -1)[(mine - theirs) % 3]


RULES_TEXT = """\
Repeated Rock-Paper-Scissors (RRPS), two players, {n} throws in one match.
Each throw both players choose at the same time: 0 = Rock, 1 = Paper,
2 = Scissors. Paper beats Rock, Scissors beats Paper, Rock beats Scissors.
A win scores +1, a loss -1, a tie 0; your return is the sum over all throws
(wins minus losses), so it lies between -{n} and +{n}. Zero-sum.
Playing uniformly at random guarantees 0 on average against anyone but wins
nothing: points come from predicting the opponent's patterns (constant moves,
cycles, reactions to your last move, frequency counting, history matching)
while staying hard to predict yourself. The benchmark opponents are the 43
bots of the first International RoShamBo Programming Competition, from
trivial (rockbot) to strong meta-predictors (iocainebot, greenberg).
"""

OBSERVATION_TEXT = """\
obs keys (RRPS):
- round: number of throws already played (0 on the first throw).
- my_moves: your moves so far, oldest first (0 Rock, 1 Paper, 2 Scissors).
- opp_moves: the opponent's moves so far, aligned with my_moves.
- my_score: your wins minus losses so far.
- legal_actions: always [0, 1, 2].
my_moves and opp_moves only grow, by one entry per throw; read the newest
entries (e.g. opp_moves[-1]) and keep running counts on self instead of
rescanning the whole lists every throw.
"""


class RRPSView(ObservationView):
    """Move lists that grow in place by one joint action per throw."""

    def __init__(self, player: int) -> None:
        super().__init__(player)
        self._my_moves: list[int] = []
        self._opp_moves: list[int] = []
        self._score = 0

    def observe(self, state: pyspiel.State) -> dict:
        played = state.move_number()  # completed throws
        seen = len(self._my_moves)
        if played == seen + 1:
            # The recall-1 observation tensor is one-hot of the last joint
            # action: [p0 Rock, p0 Paper, p0 Scissors, p1 Rock, ...].
            tensor = state.observation_tensor(self.player)
            joint = (tensor.index(1.0, 0, 3), tensor.index(1.0, 3, 6) - 3)
            self._record(joint[self.player], joint[1 - self.player])
        elif played > seen:
            # Skipped calls: catch up once from the full history.
            history = state.history()
            for t in range(seen, played):
                self._record(history[2 * t + self.player], history[2 * t + 1 - self.player])
        return {
            "round": played,
            "my_moves": self._my_moves,
            "opp_moves": self._opp_moves,
            "my_score": self._score,
            "legal_actions": [ROCK, PAPER, SCISSORS],
        }

    def _record(self, mine: int, theirs: int) -> None:
        self._my_moves.append(mine)
        self._opp_moves.append(theirs)
        self._score += throw_score(mine, theirs)


# --------------------------------------------------------------------------
# Per-agent C random() state for the RoShamBo bots (see module docstring).


class _LibcRandomState:
    """A private glibc random() state, installed only while a bot steps."""

    _STATE_BYTES = 128  # glibc's default TYPE_3 generator, as srandom() uses
    _lock = threading.Lock()
    _libc = None

    @classmethod
    def libc(cls):
        if cls._libc is None:
            try:
                libc = ctypes.CDLL(None)
                libc.initstate.restype = ctypes.c_void_p
                libc.initstate.argtypes = [ctypes.c_uint, ctypes.c_void_p, ctypes.c_size_t]
                libc.setstate.restype = ctypes.c_void_p
                libc.setstate.argtypes = [ctypes.c_void_p]
                cls._libc = libc
            except (OSError, AttributeError):
                cls._libc = False
        return cls._libc

    def __init__(self, seed: int) -> None:
        libc = self.libc()
        self._buffer = ctypes.create_string_buffer(self._STATE_BYTES)
        with self._lock:
            previous = libc.initstate(seed & 0xFFFFFFFF, self._buffer, self._STATE_BYTES)
            libc.setstate(previous)

    def run(self, function, *args):
        libc = self.libc()
        with self._lock:
            previous = libc.setstate(self._buffer)
            try:
                return function(*args)
            finally:
                libc.setstate(previous)


SEEDABLE_BOTS = bool(_LibcRandomState.libc())


class RoshamboAgent:
    """One RoShamBo competition bot playing one seat of one episode."""

    def __init__(self, player: int, bot_name: str, num_throws: int, seed: int) -> None:
        self.player = player
        self.bot_name = bot_name
        # greenberg clears 1000 entries regardless of its size (see docstring).
        capacity = max(num_throws, 1000) if bot_name == "greenberg" else num_throws
        self._random_state = _LibcRandomState(seed) if SEEDABLE_BOTS else None
        self._bot = pyspiel.make_roshambo_bot(player, bot_name, capacity)

    def step(self, state: pyspiel.State) -> int:
        if self._random_state is None:
            return self._bot.step(state)
        return self._random_state.run(self._bot.step, state)

    def action_probabilities(self, state: pyspiel.State) -> None:
        return None


@lru_cache(maxsize=None)
def roshambo_bot_names() -> tuple[str, ...]:
    return tuple(sorted(pyspiel.roshambo_bot_names()))


# How the LLM prompt shows what the mixture's members do: their first throws
# against these fixed sequences (oracles/llm/mixture.py).
PROBES = (
    MixtureProbe("Rock every throw", lambda t: ROCK),
    MixtureProbe("Paper every throw", lambda t: PAPER),
    MixtureProbe("Scissors every throw", lambda t: SCISSORS),
    MixtureProbe("the cycle Rock, Paper, Scissors, ...", lambda t: t % 3),
)


class RRPSPresentation(Presentation):
    """Throw by throw: your throw first, then the bot's; a running score."""

    round_unit = "round"
    move_verb = "throw"
    move_keys = {"r": ROCK, "p": PAPER, "s": SCISSORS}

    def rounds_total(self) -> int:
        return int(self.spec.params["num_repetitions"])

    def rounds(self, session: PlayState) -> list[Round]:
        mine = [m for m in session.moves if m.who == YOU]
        theirs = [m for m in session.moves if m.who != YOU]
        rows, total = [], 0.0
        for n, (a, b) in enumerate(zip(mine, theirs), start=1):
            score = float(throw_score(a.action, b.action))
            total += score
            rows.append(Round(n, a.action_name, b.action_name, score, total=total))
        return rows

    def table(self, session: PlayState) -> list[tuple[str, str]]:
        done = self.rounds(session)
        rows = [("Round", f"{len(done) + 1} of {self.rounds_total()}")]
        total = done[-1].total if done else 0.0
        wins = sum(1 for r in done if r.result > 0)
        losses = sum(1 for r in done if r.result < 0)
        rows.append(("Score", f"{signed(total)} (won {wins}, lost {losses}, tied {len(done) - wins - losses})"))
        if done:
            last = done[-1]
            rows.append(("Last throw", f"you {last.mine}, them {last.theirs}: you {outcome_word(last.result)}"))
        return rows


class RRPSSpec(GameSpec):
    title = "Repeated Rock-Paper-Scissors"
    observation_text = OBSERVATION_TEXT
    exact = False
    history_is_state = True  # the referee's fast path: evaluation/rrps_lockstep.py
    mixture_probes = PROBES
    default_episodes = 20
    profile_episodes = 4  # per probe: a 1000-throw match shows a policy's answer in one pass
    seed_dir = "rrps"

    def __init__(self, num_repetitions: int = DEFAULT_REPETITIONS) -> None:
        super().__init__()
        if not isinstance(num_repetitions, int) or isinstance(num_repetitions, bool) or num_repetitions < 1:
            raise UnknownGameError(f"rrps: num_repetitions must be a positive integer, got {num_repetitions!r}")
        self.num_repetitions = num_repetitions
        self.params = {"num_repetitions": num_repetitions}
        self.name = "rrps" if num_repetitions == DEFAULT_REPETITIONS else f"rrps(num_repetitions={num_repetitions})"
        self.game_string = rrps_game_string(num_repetitions)
        self.rules_text = RULES_TEXT.format(n=num_repetitions)

    def action_names(self) -> list[str]:
        return list(ACTION_NAMES)

    def new_view(self, player: int) -> ObservationView:
        return RRPSView(player)

    def presentation(self) -> Presentation:
        return RRPSPresentation(self)

    def behaviour_probes(self) -> list[BenchmarkBot]:
        return behaviour.rrps_probes()

    def frequency_conditions(self, observation: dict) -> list[str]:
        return behaviour.rrps_conditions(observation)

    def benchmark(self) -> list[BenchmarkBot]:
        return [self._roshambo_bot(name) for name in roshambo_bot_names()]

    def _roshambo_bot(self, name: str) -> BenchmarkBot:
        num_throws = self.num_repetitions
        randomness = "deterministic" if name in DETERMINISTIC_BOTS else "randomised (seeded per episode)"
        return BenchmarkBot(
            name,
            f"RoShamBo competition bot '{name}', {randomness}",
            lambda player, seed: RoshamboAgent(player, name, num_throws, seed),
        )
