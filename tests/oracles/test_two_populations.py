"""Every oracle but best-response proposes for one seat (two populations, issue 23).

Each test hands an oracle an `OracleContext` built as the engine builds it with
`--populations 2`: `seat` is the seat the proposal will play, `population` and
`meta_strategy` are the OTHER seat's members and mixture (what it must beat),
`own_population` the seat's own members.  The previews here stand in for the
engine's seat-fixed preview: the candidate plays only `seat`, each opponent
only the other seat (Kuhn: exactly, from the sandboxed tables; RRPS: short
real matches, 20 throws, between two sandboxed hosts).

The LLM oracles talk through the real openai client to the scripted local
server (tests/llm_server.py); its replies are fixed test text, not model output.
"""

from __future__ import annotations

import math

import pytest

from csro_tui.evaluation.exact import policy_values, tabularize
from csro_tui.evaluation.participants import CodePolicy
from csro_tui.games.kuhn import KuhnSpec
from csro_tui.games.rrps import RRPSSpec
from csro_tui.errors import CsroError
from csro_tui.oracles.base import OracleContext
from csro_tui.oracles.evolve.search import EvolutionOracle, EvolutionSettings
from csro_tui.oracles.evolve.ast_mutation import ASTMutation
from csro_tui.oracles.llm.context import DEFAULT_PROMPT_BUDGET_TOKENS
from csro_tui.oracles.llm.mixture import probe_answers
from csro_tui.oracles.llm.prompts import BOTH_SEATS_NOTE, messages_tokens
from csro_tui.oracles.registry import ORACLES, make_oracle
from csro_tui.oracles.seed import SeedsExhausted
from csro_tui.records import PolicyRecord, Preview, Proposal
from csro_tui.same_code import normalized_code
from csro_tui.sandbox.failures import PolicyFailure
from csro_tui.sandbox.sandbox import PolicyHost
from tests.llm_server import ScriptedLLMServer, llm_server  # noqa: F401

pytestmark = pytest.mark.usefixtures("no_llm_env")

SEATS = [0, 1]

# ------------------------------------------------------------------ policies
KUHN_ALWAYS_PASS = '''
class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return 0
'''

KUHN_ALWAYS_BET = '''
class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return 1
'''

KUHN_CARD_SENSE = '''
class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        if obs["card"] == "K":
            return 1
        if obs["card"] == "Q" and obs["to_call"] == 0 and self.player == 1:
            return 1
        return 0
'''

# Bets and calls with the king only: worth exactly 0 in either seat against the mixture below.
KUHN_KING_ONLY = '''
class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return 1 if obs["card"] == "K" else 0
'''

# Seat-aware: Rock in seat 0, Paper in seat 1 (so a seat mix-up shows).
RRPS_ROCK_OR_PAPER = '''
class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return 0 if self.player == 0 else 1
'''

RRPS_CONSTANT = '''
class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return {move}
'''


def member(member_id: str, source: str, seat: int, origin: str = "seed") -> PolicyRecord:
    return PolicyRecord(id=member_id, name=member_id.split(":")[-1], source=source, origin=origin, seat=seat)


# ------------------------------------------------------------------ seat-fixed previews (the engine's stand-in)
def kuhn_seat_payoff(spec, source: str, opponent: str, seat: int) -> float:
    """The candidate's exact expected return in `seat` against `opponent` in the other seat."""
    mine = tabularize(spec, CodePolicy("candidate", source))
    theirs = tabularize(spec, CodePolicy("opponent", opponent))
    values = policy_values(spec, mine, theirs) if seat == 0 else policy_values(spec, theirs, mine)
    return float(values[seat])


def rrps_seat_payoff(spec, source: str, opponent: str, seat: int) -> float:
    """The candidate's return in `seat` over one whole (short) RRPS match against `opponent`."""
    state = spec.load().new_initial_state()
    views = {seat: spec.new_view(seat), 1 - seat: spec.new_view(1 - seat)}
    with PolicyHost(source, spec.game_info(), name="candidate") as mine, \
            PolicyHost(opponent, spec.game_info(), name="opponent") as theirs:
        hosts = {seat: mine, 1 - seat: theirs}
        for player, host in hosts.items():
            host.start()
            host.new_episodes([(0, player, 0)])
        while not state.is_terminal():
            moves = []
            for player in (0, 1):
                answer = hosts[player].act([(0, views[player].observe(state))])[0]
                moves.append(max(answer, key=answer.get) if isinstance(answer, dict) else int(answer))
            state.apply_actions([int(move) for move in moves])
    return float(state.returns()[seat])


def seat_preview(spec, seat: int, opponents, weights, own, play, calls=None):
    """A preview of a candidate in `seat` against the other seat's members, with the gate's
    duplicate rule judged within the seat's own population."""

    def preview(source: str) -> Preview:
        if calls is not None:
            calls.append(source)
        try:
            per_member = {m.id: play(spec, source, m.source, seat) for m in opponents}
        except PolicyFailure as failure:
            return Preview(math.nan, {}, failure=failure)
        total = sum(weights)
        expected = sum(w * per_member[m.id] for m, w in zip(opponents, weights)) / total
        same = [m for m in own if normalized_code(m.source) == normalized_code(source)]
        return Preview(expected, per_member, duplicate_of=same[0].id if same else None,
                       duplicate_reason=f"same code as {same[0].id}" if same else "")

    return preview


def kuhn_context(seat: int, **extra) -> OracleContext:
    """Kuhn, two populations: the seat's own members and the other seat's, seeds in both."""
    spec = KuhnSpec()
    own = [member(f"seed-{seat}:always_pass", KUHN_ALWAYS_PASS, seat),
           member(f"mine-{seat}:card_sense", KUHN_CARD_SENSE, seat, origin="llm")]
    opponents = [member(f"seed-{1 - seat}:always_pass", KUHN_ALWAYS_PASS, 1 - seat),
                 member(f"seed-{1 - seat}:always_bet", KUHN_ALWAYS_BET, 1 - seat)]
    weights = [0.25, 0.75]
    return OracleContext(
        spec=spec, iteration=2, population=opponents, meta_strategy=weights, seat=seat, own_population=own,
        preview=seat_preview(spec, seat, opponents, weights, own, kuhn_seat_payoff), **extra,
    )


def rrps_context(seat: int, opponents=None, weights=None, **extra) -> OracleContext:
    spec = RRPSSpec(num_repetitions=20)
    own = [member(f"seed-{seat}:constant_rock", RRPS_CONSTANT.format(move=0), seat)]
    opponents = opponents or [member(f"seed-{1 - seat}:rock_or_paper", RRPS_ROCK_OR_PAPER, 1 - seat)]
    weights = weights or [1.0 / len(opponents)] * len(opponents)
    return OracleContext(
        spec=spec, iteration=2, population=opponents, meta_strategy=weights, seat=seat, own_population=own,
        preview=seat_preview(spec, seat, opponents, weights, own, rrps_seat_payoff), **extra,
    )


def test_every_oracle_can_propose_for_a_seat():
    # best-response is the core engineer's; every other oracle here proposes per seat.
    assert all(entry.two_populations for entry in ORACLES.values())


# ------------------------------------------------------------------ seed
@pytest.mark.parametrize("seat", SEATS)
def test_seed_proposes_for_its_seat_the_best_seed_not_in_its_own_population(seat):
    context = kuhn_context(seat)
    # The seat's own population holds always_pass; the opponents hold always_bet, which
    # is no reason to skip it for this seat.
    proposal = make_oracle("seed").propose(context)

    assert proposal.seat == seat
    assert proposal.name in {"always_bet", "card_rules", "uniform"}
    ranked = {name: kuhn_seat_payoff(context.spec, source, KUHN_ALWAYS_BET, seat) * 0.75
              + kuhn_seat_payoff(context.spec, source, KUHN_ALWAYS_PASS, seat) * 0.25
              for name, source in context.spec.seed_policies().items()}
    assert proposal.name == max(sorted(ranked), key=lambda name: ranked[name])
    assert f"seat {seat}" in proposal.rationale


@pytest.mark.parametrize("seat", SEATS)
def test_seed_on_rrps_skips_seeds_in_its_own_seat_and_reads_only_its_seats_rejections(seat):
    seeds = RRPSSpec().seed_policies()
    rejected_elsewhere = Proposal(source=seeds["cycle"], oracle="seed", name="cycle", seat=1 - seat)
    rejected_here = Proposal(source=seeds["uniform_random"], oracle="seed", name="uniform_random", seat=seat)
    context = rrps_context(seat, rejections=[(rejected_elsewhere, "not for that seat"), (rejected_here, "no")])
    context.own_population = [member(f"seed-{seat}:{name}", seeds[name], seat)
                              for name in ("constant_rock", "beat_last", "frequency_counter", "markov_predictor")]

    proposal = make_oracle("seed").propose(context)

    # Left for this seat: cycle (rejected only for the other seat) and uniform_random (rejected here).
    assert (proposal.name, proposal.seat) == ("cycle", seat)


def test_seed_says_it_has_finished_when_every_seed_is_in_its_own_seat():
    context = kuhn_context(1)
    context.own_population = [member(f"seed-1:{name}", source, 1) for name, source in context.spec.seed_policies().items()]
    with pytest.raises(SeedsExhausted, match=r"in the population of seat 1 \(second to act\)"):
        make_oracle("seed").propose(context)


# ------------------------------------------------------------------ human
@pytest.mark.parametrize("seat", SEATS)
def test_human_proposes_the_file_for_the_seat(tmp_path, seat):
    both, second = tmp_path / "both.py", tmp_path / "second.py"
    both.write_text(KUHN_CARD_SENSE)
    second.write_text(KUHN_ALWAYS_BET)
    oracle = make_oracle("human", {"path": str(both), "path_seat1": str(second)})

    kuhn = oracle.propose(kuhn_context(seat))
    rrps = oracle.propose(rrps_context(seat))

    for proposal in (kuhn, rrps):
        assert proposal.seat == seat
        assert proposal.source == (KUHN_ALWAYS_BET if seat == 1 else KUHN_CARD_SENSE)
        assert proposal.name == f"{'second' if seat == 1 else 'both'}-2-s{seat}"


def test_human_without_a_file_for_the_seat_says_which_option_to_set(tmp_path):
    only_first = tmp_path / "first.py"
    only_first.write_text(KUHN_CARD_SENSE)
    oracle = make_oracle("human", {"path_seat0": str(only_first)})
    assert oracle.propose(kuhn_context(0)).source == KUHN_CARD_SENSE
    with pytest.raises(Exception, match="no policy file for seat 1: --oracle-option path_seat1=FILE"):
        oracle.propose(kuhn_context(1))
    with pytest.raises(Exception, match="does not exist"):
        make_oracle("human", {"path_seat1": str(tmp_path / "typo.py")})


# ------------------------------------------------------------------ evolve
def small_evolve(**settings) -> EvolutionOracle:
    defaults = dict(budget=4, islands=1, children=2, finalists=1, game_seeds=False, reevaluation_episodes=0)
    return EvolutionOracle(ASTMutation(), EvolutionSettings(**(defaults | settings)), name="evolve")


@pytest.mark.parametrize("seat", SEATS)
def test_evolve_derives_from_its_own_seat_and_scores_against_the_other(seat):
    context = kuhn_context(seat)
    oracle = small_evolve()

    proposal = oracle.propose(context)

    assert proposal.seat == seat and proposal.name == f"evolve-2-s{seat}"
    members = {p.member_id for p in oracle.last_database.programs.values() if p.member_id is not None}
    assert members == {m.id for m in context.own_population}  # parents: the seat's own members only
    assert proposal.parent in members
    # Its fitness is the seat-fixed payoff against the other seat's mixture.
    champion = oracle.last_database.programs[oracle.last_search.champion_id]
    expected = sum(w * kuhn_seat_payoff(context.spec, champion.source, m.source, seat)
                   for m, w in zip(context.population, context.meta_strategy))
    assert champion.fitness == pytest.approx(expected)
    assert normalized_code(champion.source) not in {normalized_code(m.source) for m in context.own_population}


@pytest.mark.parametrize("seat", SEATS)
def test_evolve_on_rrps_proposes_for_the_seat_and_carries_over_per_seat(seat):
    oracle = small_evolve(budget=2, children=2, carry_over=2)
    context = rrps_context(seat)

    proposal = oracle.propose(context)

    assert proposal.seat == seat
    assert set(oracle._carried) == {seat}  # what this search found seeds only this seat's next search
    # Against Rock (seat 0) or Paper (seat 1), the constant-Rock parent's mutants are scored in the seat.
    best = oracle.last_database.programs[oracle.last_search.champion_id]
    assert best.fitness == pytest.approx(rrps_seat_payoff(context.spec, best.source, RRPS_ROCK_OR_PAPER, seat))


def test_evolve_does_not_repeat_code_rejected_for_its_seat_but_may_take_the_other_seats():
    context = kuhn_context(0)
    first = small_evolve().propose(context)
    context.rejections = [(Proposal(first.source, "evolve", "x", seat=1), "rejected for seat 1")]
    assert normalized_code(small_evolve().propose(context).source) == normalized_code(first.source)
    context.rejections = [(Proposal(first.source, "evolve", "x", seat=0), "rejected for seat 0")]
    assert normalized_code(small_evolve().propose(context).source) != normalized_code(first.source)


# ------------------------------------------------------------------ LLM oracles
def options(server: ScriptedLLMServer, **extra) -> dict:
    return {"base_url": server.base_url, "model": "scripted-model", "max_retries": 0, "timeout": 30.0,
            "stream": False, **extra}


def fenced(source: str) -> str:
    return f"A plan in one sentence.\n\n```python\n{source.strip()}\n```\n"


def user_text(request: dict) -> str:
    return request["messages"][-1]["content"]


@pytest.mark.parametrize("seat", SEATS)
def test_llm_prompt_on_kuhn_names_the_seat_and_describes_only_the_other_seats_mixture(llm_server, seat):
    llm_server.script(fenced(KUHN_KING_ONLY))
    context = kuhn_context(seat)

    proposal = make_oracle("llm", options(llm_server)).propose(context)

    assert proposal.seat == seat and proposal.name == f"llm-2-s{seat}"
    prompt = user_text(llm_server.chat_requests[0])
    role = "first to act" if seat == 0 else "second to act"
    assert f"You play seat {seat} ({role}) in every game" in prompt
    assert BOTH_SEATS_NOTE not in prompt
    mixture = prompt.split("## How the opponent mixture plays", 1)[1].split("\n## ", 1)[0]
    assert f"mixture, always in seat {1 - seat} ({'second' if seat == 0 else 'first'} to act)." in mixture
    situations = [line for line in mixture.splitlines() if line.startswith("- seat")]
    assert situations and all(line.startswith(f"- seat {1 - seat},") for line in situations)
    # The opponent's situations: seat 0 acts on 3 cards x 2 histories, seat 1 on 3 x 2.
    assert len(situations) == 6
    # always_bet has weight 0.75, always_pass 0.25: with a K seat 0 bets 0.75 of the time.
    if seat == 1:
        assert "- seat 0, card K, betting so far: none: Pass 0.25, Bet 0.75" in mixture
    # Opponents are the other seat's members; the seat's own members are not opponents.
    assert f"seed-{1 - seat}:always_bet" in prompt and f"mine-{seat}:card_sense" not in prompt
    assert f"for seat {seat} ({role}), against the other seat's meta-strategy" in proposal.rationale


@pytest.mark.parametrize("seat", SEATS)
def test_llm_prompt_on_rrps_probes_the_opponents_in_their_seat(llm_server, seat):
    llm_server.script(fenced(RRPS_CONSTANT.format(move=2)))
    proposal = make_oracle("llm", options(llm_server)).propose(rrps_context(seat))

    assert proposal.seat == seat
    prompt = user_text(llm_server.chat_requests[0])
    assert f"You play seat {seat} in every game" in prompt  # RRPS has no words for its seats
    assert f"(they play seat {1 - seat}, you seat {seat})" in prompt
    # The seat-aware opponent throws Rock in seat 0 and Paper in seat 1: the probes show its seat's.
    throw = "R" if seat == 1 else "P"
    assert f"against Rock every throw: {' '.join([throw] * 10)}" in prompt


def test_probe_answers_put_the_member_in_the_seat_asked_for():
    spec = RRPSSpec(num_repetitions=20)
    assert probe_answers(spec, RRPS_ROCK_OR_PAPER, lambda t: 0, 5, seat=0) == [0] * 5
    assert probe_answers(spec, RRPS_ROCK_OR_PAPER, lambda t: 0, 5) == [1] * 5  # seat 1 unless asked


def test_one_population_prompts_say_both_seats(llm_server):
    llm_server.script(fenced(KUHN_CARD_SENSE))
    context = kuhn_context(0)
    context.seat, context.own_population = None, []
    make_oracle("llm", options(llm_server)).propose(context)
    prompt = user_text(llm_server.chat_requests[0])
    assert BOTH_SEATS_NOTE in prompt and "You play seat" not in prompt


@pytest.mark.parametrize("seat", SEATS)
def test_refine_feeds_back_the_seats_payoffs_and_stops_at_the_seats_value(llm_server, seat):
    # Against the mixture (0.25 pass, 0.75 bet) never betting is worth -0.75 in either seat (below the
    # seat's bar, -0.6), betting with the king only exactly 0 (above the bar, but not above 0).
    context = kuhn_context(seat, seat_value=-0.6)
    never_bets = KUHN_ALWAYS_PASS.replace("self.player = player", "self.seat = player")
    for source, value in ((never_bets, -0.75), (KUHN_KING_ONLY, 0.0)):
        assert context.preview(source).expected_payoff == pytest.approx(value)
    llm_server.script(fenced(never_bets), fenced(KUHN_KING_ONLY))
    oracle = make_oracle("llm-refine", options(llm_server, budget=4))

    proposal = oracle.propose(context)

    assert proposal.seat == seat and proposal.name == f"refine-2-s{seat}"
    assert len(llm_server.chat_requests) == 2  # the second attempt cleared -0.6 (not 0)
    assert "threshold -0.600 (the seat's meta-game value -0.600 + 0)" in proposal.rationale
    assert "Stopped: threshold -0.600 reached" in proposal.rationale
    refine_prompt = user_text(llm_server.chat_requests[1])
    assert f"You play seat {seat}" in refine_prompt
    assert f"your return per episode, in seat {seat}" in refine_prompt
    losses = refine_prompt.split("Where your policy loses value", 1)[1] if "Where your policy loses value" in refine_prompt else ""
    assert losses and f"- seat {seat}," in losses and f"- seat {1 - seat}," not in losses


def test_refine_from_a_member_starts_from_the_seats_own_heaviest_member(llm_server):
    context = kuhn_context(1, own_meta_strategy=[0.9, 0.1])
    llm_server.script(fenced(KUHN_KING_ONLY))
    proposal = make_oracle("llm-refine", options(llm_server, start="member", budget=1, threshold=5.0)).propose(context)

    assert proposal.parent == "seed-1:always_pass"
    assert KUHN_ALWAYS_PASS.strip() in user_text(llm_server.chat_requests[0])

    context = kuhn_context(1)  # no own weights from the engine: the newest own member
    llm_server.script(fenced(KUHN_KING_ONLY))
    proposal = make_oracle("llm-refine", options(llm_server, start="member", budget=1, threshold=5.0)).propose(context)
    assert proposal.parent == "mine-1:card_sense"


@pytest.mark.parametrize("seat", SEATS)
def test_llm_evolve_mutates_own_seat_programs_and_names_the_seat(llm_server, seat):
    edit = ("Bet with the queen too.\n<<<<<<< SEARCH\n        return 0\n=======\n"
            "        return 1 if obs[\"card\"] == \"Q\" else 0\n>>>>>>> REPLACE\n")
    llm_server.script(edit, edit)
    oracle = make_oracle("llm-evolve", options(llm_server, budget=2, islands=1, children=2, game_seeds=False,
                                                finalists=1, reevaluation_episodes=0))
    context = kuhn_context(seat)

    proposal = oracle.propose(context)

    assert proposal.seat == seat
    members = {p.member_id for p in oracle.last_database.programs.values() if p.member_id is not None}
    assert members == {m.id for m in context.own_population}
    for request in llm_server.chat_requests:
        prompt = user_text(request)
        assert f"You play seat {seat}" in prompt and f"your return per episode, in seat {seat}" in prompt
        assert f"seed-{1 - seat}:always_bet" in prompt  # payoffs against the other seat's members


def test_prompts_stay_within_the_budget_with_two_populations(llm_server):
    # Many long opponents in the other seat: the prompt still fits the default budget.
    padding = "\n".join(f"    # note {i}: " + "x" * 60 for i in range(40))
    opponents = [member(f"seed-0:p{i}", RRPS_CONSTANT.format(move=i % 3) + padding, 0) for i in range(12)]
    llm_server.script(fenced(RRPS_CONSTANT.format(move=1)))
    make_oracle("llm", options(llm_server, opponent_format="code")).propose(rrps_context(1, opponents=opponents))
    request = llm_server.chat_requests[0]
    assert messages_tokens(request["messages"]) <= DEFAULT_PROMPT_BUDGET_TOKENS
    assert "left out" in user_text(request) and "You play seat 1" in user_text(request)


def test_without_the_engines_seat_preview_the_seed_oracle_refuses_a_seat():
    context = kuhn_context(0)
    context.preview = None  # its own fallback plays seats swapped: not the seat's game
    with pytest.raises(CsroError, match="needs the engine's preview to rank seeds for a seat"):
        make_oracle("seed").propose(context)


def test_evolve_reevaluates_a_seats_finalists_only_through_the_engines_play_candidate():
    from types import SimpleNamespace

    from csro_tui.oracles.evolve.fitness import Fitness

    context = rrps_context(1)
    assert not Fitness(context, reevaluation_episodes=10).reevaluates  # the referee fallback swaps seats
    asked = []

    def play_candidate(source, members, episodes):
        asked.append(([m.id for m, _seed in members], episodes))
        return [SimpleNamespace(mean=0.5, failure=None) for _ in members]

    context.play_candidate = play_candidate
    fitness = Fitness(context, reevaluation_episodes=10)
    assert fitness.reevaluates and fitness.reevaluate(RRPS_CONSTANT.format(move=1)) == pytest.approx(0.5)
    assert asked == [(["seed-0:rock_or_paper"], 10)]  # the other seat's members


def test_refines_bar_is_the_seats_value_plus_the_threshold_as_the_auto_reviewers():
    oracle = make_oracle("llm-refine", {"model": "m", "base_url": "http://127.0.0.1:9/v1", "threshold": 0.1})
    assert oracle.threshold_for(kuhn_context(0, seat_value=-1 / 18)) == pytest.approx(0.1 - 1 / 18)
    assert oracle.threshold_for(kuhn_context(1)) == pytest.approx(0.1)  # no value given: the threshold alone
    one_population = kuhn_context(0, seat_value=None)
    one_population.seat = None
    assert oracle.threshold_for(one_population) == pytest.approx(0.1)


def test_refines_rationale_shows_a_seat_value_of_zero_without_a_sign_flip(llm_server):
    llm_server.script(fenced(KUHN_KING_ONLY))
    proposal = make_oracle("llm-refine", options(llm_server, budget=1)).propose(kuhn_context(1, seat_value=-0.0))
    assert "(the seat's meta-game value +0.000 + 0)" in proposal.rationale
