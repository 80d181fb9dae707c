"""Deterministic data for screen tests and snapshots (no clocks, fixed numbers)."""

from __future__ import annotations

from textual.app import App

from csro_tui.tui.model import Cell, DashboardData, Member, ReviewInfo, StartChoices

ALWAYS_CALL = '''\
class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return 1
'''

BLUFFER = '''\
import random


class Policy:
    def __init__(self, player, game):
        self.rng = random.Random(game["seed"])

    def act(self, obs):
        if self.rng.random() < 0.3:
            return 1
        return obs["legal_actions"][0]
'''


# A Kuhn policy a scripted LLM reply carries (test text, not model output).
KUHN_POLICY = '''\
class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        if obs["card"] == "K" and 1 in obs["legal_actions"]:
            return 1
        return obs["legal_actions"][0]
'''


def sample_data() -> DashboardData:
    members = [
        Member("p0", "always_call", "seed", None, 0.25, ALWAYS_CALL, 0, {"exploitability": 0.5}),
        Member("p1", "br_1", "best-response", "p0", 0.5, BLUFFER, 1, {"exploitability": 0.25}),
        Member("p2", "br_2", "best-response", "p1", 0.25, BLUFFER, 2, {"exploitability": 0.125}),
    ]
    values = {("p0", "p1"): -0.5, ("p0", "p2"): 0.25, ("p1", "p2"): -0.125}
    payoffs = {}
    for (a, b), v in values.items():
        payoffs[(a, b)] = Cell(v, 0.0, 0, True)
        payoffs[(b, a)] = Cell(-v, 0.0, 0, True)
    for m in members:
        payoffs[(m.id, m.id)] = Cell(0.0, 0.0, 0, True, self_play=True)  # as adapt makes it
    return DashboardData(
        game="kuhn_poker",
        oracle="best-response",
        meta_solver="nash",
        members=members,
        payoffs=payoffs,
        metric_name="exploitability",
        metric_history=[(0, 0.5), (1, 0.25), (2, 0.125)],
        log=["#1 session started", "#2 policy p0 added", "#3 policy p1 added", "#4 policy p2 added"],
        iteration=2,
        llm_calls=0,
    )


def sample_review() -> ReviewInfo:
    return ReviewInfo(
        name="br_3",
        oracle="best-response",
        source=BLUFFER.replace("0.3", "0.2"),
        parent="p1",
        parent_source=BLUFFER,
        rationale="Bluff less often: the population calls too much.",
        llm_calls=[
            {
                "purpose": "propose",
                "model": "test-model",
                "base_url": "http://127.0.0.1:1/v1",
                "messages": [
                    {"role": "system", "content": "You write poker policies."},
                    {"role": "user", "content": "Beat the mixture."},
                ],
                "response": "```python\nclass Policy: ...\n```",
                "finish_reason": "stop",
                "prompt_tokens": 12,
                "completion_tokens": 7,
                "latency_s": 1.5,
                "cost_usd": 0.0021,
                "attempts": 1,
                "error": None,
            }
        ],
        iteration=3,
        attempt=1,
        valid=True,
        validation=["ok: static checks", "ok: smoke run against p0, p1, p2"],
        expected_payoff=0.0625,
        per_member={"p0": 0.5, "p1": -0.125, "p2": 0.0},
    )


class ScreenApp(App):
    """Shows one screen over constructed data, with the app's stylesheet."""

    CSS_PATH = "../../csro_tui/tui/app.tcss"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]  # as CsroApp's
    VERTICAL_BREAKPOINTS = [(0, "-short"), (36, "-tall")]

    def __init__(self, make_screen, **kwargs):
        super().__init__(**kwargs)
        self.make_screen = make_screen
        self.results = []

    def on_mount(self) -> None:
        self.push_screen(self.make_screen(), self.results.append)


def record_sample_session(root, session_id: str = "sample-kuhn") -> list:
    """Write a small recorded session (two policies, one iteration) under `root`."""
    from csro_tui.records import PolicyRecord, Preview, Proposal, ValidationResult
    from csro_tui.sessions import events as ev
    from csro_tui.sessions.store import SessionStore

    store = SessionStore(root)
    p0 = PolicyRecord("p0", "always_call", ALWAYS_CALL, "seed")
    proposal = Proposal(BLUFFER, "best-response", "br_1", parent="p0", rationale="exploit calling")
    p1 = PolicyRecord("p1", "br_1", BLUFFER, "best-response", parent="p0", iteration=1)
    events = [
        ev.SessionStarted(session_id=session_id, game="kuhn_poker", oracle="best-response", solver="nash", config={}, versions={}),
        ev.IterationStarted(iteration=0),
        ev.PolicyAdded(policy=p0),
        ev.MetaSolved(solver="nash", population=["p0"], strategy=[1.0]),
        ev.MetricsComputed(iteration=0, population_size=1, meta_strategy={"p0": 1.0}, meta_nash_conv=0.0, exploitability=0.5),
        ev.IterationFinished(iteration=0, accepted="p0"),
        ev.IterationStarted(iteration=1),
        ev.ProposalCreated(proposal_id="i1a1", iteration=1, attempt=1, proposal=proposal),
        ev.ProposalValidated(proposal_id="i1a1", validation=ValidationResult(valid=True, smoke={"p0": 0.5}, smoke_episodes=2)),
        ev.ProposalPreviewed(proposal_id="i1a1", preview=Preview(0.5, {"p0": 0.5}), exact=True),
        ev.ProposalDecided(proposal_id="i1a1", action="accept", decided_by="tui"),
        ev.PolicyAdded(policy=p1, proposal_id="i1a1"),
        ev.PayoffsEvaluated(entries=[ev.PayoffRecord("p1", "p0", 0.5, exact=True)]),
        ev.MetaSolved(solver="nash", population=["p0", "p1"], strategy=[0.0, 1.0]),
        ev.MetricsComputed(iteration=1, population_size=2, meta_strategy={"p0": 0.0, "p1": 1.0}, meta_nash_conv=0.0, exploitability=0.25),
        ev.IterationFinished(iteration=1, accepted="p1", attempts=1),
        ev.SessionClosed(reason="completed"),
    ]
    with store.create(session_id) as writer:
        for event in events:
            writer.append(event)
    return events


# A two-population Kuhn session (issue 23), recorded as docs/POP2 says the engine records one.
# The payoffs are test data, not measurements; they make the meta-game mixed:
#             p1      p3          (seat 1)
#   p0     +0.50   -0.25          (seat 0; each cell seat 0's return)
#   p2     -0.25   +0.25
# Both seats play 0.4 / 0.6 and seat 0's value is +0.05.
TWO_POPULATION_PAYOFFS = {("p0", "p1"): 0.5, ("p0", "p3"): -0.25, ("p2", "p1"): -0.25, ("p2", "p3"): 0.25}


def record_two_population_session(root, session_id: str = "kuhn-2pop") -> list:
    """Write a closed two-population Kuhn session under `root`: seeds in both seats (p0 seat 0,
    p1 seat 1), then one iteration that accepted a proposal per seat (p2 seat 0, p3 seat 1)."""
    from csro_tui.games.registry import get_game
    from csro_tui.records import PolicyRecord, Preview, Proposal, ValidationResult
    from csro_tui.sessions import events as ev
    from csro_tui.sessions.store import SessionStore

    seeds = get_game("kuhn_poker").seed_policies()
    bet, rules = seeds["always_bet"], seeds["card_rules"]
    store = SessionStore(root)
    p0 = PolicyRecord("p0", "always_bet", bet, "seed", seat=0)
    p1 = PolicyRecord("p1", "always_bet", bet, "seed", seat=1)
    p2 = PolicyRecord("p2", "br_seat0", rules, "best-response", parent="p0", iteration=1, seat=0)
    p3 = PolicyRecord("p3", "br_seat1", rules, "best-response", parent="p1", iteration=1, seat=1)
    for_seat0 = Proposal(rules, "best-response", "br_seat0", parent="p0", rationale="best response to seat 1", seat=0)
    for_seat1 = Proposal(rules, "best-response", "br_seat1", parent="p1", rationale="best response to seat 0", seat=1)
    pay = TWO_POPULATION_PAYOFFS
    events = [
        ev.SessionStarted(session_id=session_id, game="kuhn_poker", oracle="best-response", solver="nash",
                          config={"game": "kuhn_poker", "populations": 2}, versions={}),
        ev.IterationStarted(iteration=0),
        ev.PolicyAdded(policy=p0),
        ev.PolicyAdded(policy=p1),
        ev.PayoffsEvaluated(entries=[ev.PayoffRecord("p0", "p1", pay[("p0", "p1")], exact=True)]),
        ev.MetaSolved(solver="nash", population=["p0", "p1"], strategy=[1.0, 1.0], value=0.5),
        ev.MetricsComputed(iteration=0, population_size=2, meta_strategy={"p0": 1.0, "p1": 1.0}, meta_nash_conv=0.0,
                           exploitability=0.75),
        ev.IterationFinished(iteration=0, accepted="p0"),
        ev.IterationStarted(iteration=1),
        ev.ProposalCreated(proposal_id="i1a1", iteration=1, attempt=1, proposal=for_seat0),
        ev.ProposalValidated(proposal_id="i1a1", validation=ValidationResult(valid=True)),
        ev.ProposalPreviewed(proposal_id="i1a1", preview=Preview(-0.25, {"p1": -0.25}), exact=True),
        ev.ProposalCreated(proposal_id="i1a2", iteration=1, attempt=1, proposal=for_seat1),
        ev.ProposalValidated(proposal_id="i1a2", validation=ValidationResult(valid=True)),
        ev.ProposalPreviewed(proposal_id="i1a2", preview=Preview(0.25, {"p0": 0.25}), exact=True),
        ev.ProposalDecided(proposal_id="i1a1", action="accept", decided_by="tui"),
        ev.ProposalDecided(proposal_id="i1a2", action="accept", decided_by="tui"),
        ev.PolicyAdded(policy=p2, proposal_id="i1a1"),
        ev.PolicyAdded(policy=p3, proposal_id="i1a2"),
        ev.PayoffsEvaluated(entries=[ev.PayoffRecord(r, c, pay[(r, c)], exact=True)
                                     for r, c in (("p2", "p1"), ("p0", "p3"), ("p2", "p3"))]),
        ev.MetaSolved(solver="nash", population=["p0", "p2", "p1", "p3"], strategy=[0.4, 0.6, 0.4, 0.6], value=0.05),
        ev.MetricsComputed(iteration=1, population_size=4, meta_strategy={"p0": 0.4, "p2": 0.6, "p1": 0.4, "p3": 0.6},
                           meta_nash_conv=0.0, exploitability=0.3),
        ev.IterationFinished(iteration=1, accepted="p2", attempts=2),
        ev.SessionClosed(reason="completed"),
    ]
    with store.create(session_id) as writer:
        for event in events:
            writer.append(event)
    return events


# The start form's choices in its tests (a fixed list, not the registry's).
CHOICES = StartChoices(
    games=["kuhn_poker", "leduc_poker", "rrps", "repeated_leduc"],
    oracles=["best-response", "seed", "human", "llm"],
    llm_oracles={"llm"},
    file_oracles={"human"},
    solvers=["nash", "uniform"],
)
