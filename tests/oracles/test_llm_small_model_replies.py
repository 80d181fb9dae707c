"""Replies a small model gives, and the specific feedback each one earns (issue 14).

Through the real openai client against the scripted local server
(tests/llm_server.py) and the real gate on Kuhn poker (sandboxed, exact).
Every reply below is fixed test text written for these tests - the
mistakes are the kinds issue 14 saw from a 1.5B model, but no model wrote
them.  The one good policy is the exact best-response oracle's output, not
a model's.
"""

from __future__ import annotations


import pytest

from csro_tui.engine.evaluator import GameEvaluator
from csro_tui.engine.gate import Gate, GateSettings
from csro_tui.engine.duplicates import KnownPolicy
from csro_tui.games.registry import get_game
from csro_tui.oracles.base import OracleContext
from csro_tui.records import PolicyRecord
from csro_tui.oracles.best_response import BestResponseOracle
from csro_tui.oracles.candidates import NoUsableCandidate
from csro_tui.oracles.llm.conversation import code_from_reply
from csro_tui.oracles.llm.hints import failure_hint
from csro_tui.oracles.llm.prompts import PromptLibrary, messages_tokens
from csro_tui.oracles.registry import make_oracle
from tests.llm_server import ScriptedReply, llm_server  # noqa: F401

KUHN = get_game("kuhn_poker")
SEEDS = KUHN.seed_policies()

HEAD = "class Policy:\n    def __init__(self, player, game):\n        self.player = player\n\n"
ACTION_NAME = HEAD + "    def act(self, obs):\n        return 'Bet' if obs['card'] == 'K' else 'Pass'\n"
RETURNS_NONE = HEAD + "    def act(self, obs):\n        if obs['card'] == 'K':\n            return 1\n"
GAME_KEY = "class Policy:\n    def __init__(self, player, game):\n        self.card = game['obs']['card']\n\n" \
           "    def act(self, obs):\n        return 0\n"
OBS_KEY = HEAD + "    def act(self, obs):\n        return 1 if obs['hand'] == 'K' else 0\n"
WRONG_SIGNATURE = HEAD + "    def act(self, obs, legal_actions):\n        return legal_actions[0]\n"
# The seed with a new docstring and comments: what issue 14 saw the model do.
SEED_COPY = SEEDS["always_bet"].replace(
    '"""Always bet (hand-written seed policy for Kuhn poker, not LLM-generated).', '"""My aggressive policy.'
).replace("BET = 1", "BET = 1  # bet")


# The developer's own key, endpoint or LLM settings never leak in (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("no_llm_env")


def fenced(code: str, before: str = "Here is my policy.", after: str = "") -> str:
    return f"{before}\n\n```python\n{code}```\n{after}"


def kuhn_context(iteration: int = 1) -> OracleContext:
    population = [PolicyRecord(f"p{i}", name, source, "seed") for i, (name, source) in enumerate(SEEDS.items())]
    weights = [1 / len(population)] * len(population)
    by_id = {m.id: w for m, w in zip(population, weights)}
    gate = Gate(GameEvaluator(KUHN, workers=1), GateSettings())
    known = [KnownPolicy(m.id, f"member {m.name} ({m.id})", m.source) for m in population]
    return OracleContext(
        spec=KUHN, iteration=iteration, population=population, meta_strategy=weights,
        preview=lambda source: gate.check(source, population, by_id, key="robust", known=known),
    )


def user_prompts(server) -> list[str]:
    return [request["messages"][-1]["content"] for request in server.chat_requests]


def options(server, **extra) -> dict:
    return {"base_url": server.base_url, "model": "scripted-model", "max_retries": 0, "timeout": 10.0, **extra}


def test_each_small_model_mistake_is_fed_back_specifically_until_a_policy_clears_the_gate(llm_server):
    context = kuhn_context()
    good = BestResponseOracle().propose(context).source
    llm_server.script(
        fenced(SEED_COPY),
        fenced(ACTION_NAME),
        fenced(RETURNS_NONE),
        fenced(GAME_KEY),
        fenced(OBS_KEY),
        fenced(WRONG_SIGNATURE),
        # Cut off at max_tokens inside the code block.
        ScriptedReply(text="I will bet with kings.\n\n```python\nclass Policy:\n    def __init__(self, pl",
                      finish_reason="length"),
        fenced(good, before="Bet kings, bluff some jacks.", after="This should beat the mixture."),
    )
    oracle = make_oracle("llm-refine", options(llm_server, budget=8))

    proposal = oracle.propose(context)

    assert proposal.source == good.rstrip("\n") + "\n"
    prompts = user_prompts(llm_server)
    assert len(prompts) == 8
    # What the model is told after each reply (the next request's last message):
    assert "REJECTED AS A COPY: same code as member always_bet (p0)" in prompts[1]
    # What lost, exactly: always-bet bets a Jack into the mixture, which costs it most.
    assert "Where your policy loses value against the mixture (computed exactly" in prompts[1]
    assert "card J, betting so far: none: you play Bet 1.00; Pass (0) would gain" in prompts[1]
    assert "`act` returned text" in prompts[2] and "'Bet' is 1" in prompts[2]
    assert "`act` returned None" in prompts[3] and 'return obs["legal_actions"][0]' in prompts[3]
    assert "The `game` dict has no key 'obs'" in prompts[4] and "Observations are not in `game`" in prompts[4]
    assert "`obs` has no key 'hand'; its keys are: card, round, betting" in prompts[5]
    assert "Use exactly `def __init__(self, player, game):` and `def act(self, obs):`" in prompts[6]
    assert "cut off at max_tokens" in prompts[7] and "Write a shorter module" in prompts[7]
    # Tracebacks reach the model too.
    assert "Traceback" in prompts[4] and "game['obs']" in prompts[4]
    assert "Stopped: threshold +0.000 reached" in proposal.rationale
    # Every prompt is recorded with its size, and fits an 8k context with room for a reply.
    sizes = [call["prompt_estimated_tokens"] for call in proposal.llm_calls]
    assert len(sizes) == 8 and max(sizes) < 6000
    assert "tokens (estimated)" in proposal.rationale


def test_the_first_prompt_shows_the_game_dict_real_observations_an_example_and_the_mixture(llm_server):
    context = kuhn_context()
    llm_server.script(fenced(BestResponseOracle().propose(context).source))

    make_oracle("llm", options(llm_server)).propose(context)

    system = llm_server.chat_requests[0]["messages"][0]["content"]
    user = llm_server.chat_requests[0]["messages"][-1]["content"]
    assert '"action_names": ["Pass", "Bet"]' in system and '"seed": 12345' in system
    assert 'obs = {"card": ' in system and '"legal_actions": [0, 1]' in system
    # The example is a plan keyed the way the evaluation names situations ("card K, betting so far: Pass, Bet").
    assert "## A minimal correct policy for this game" in system and '("K", "Pass, Bet"): 1' in system
    # The meta-strategy's probabilities in every Kuhn information state (12 of them).
    mixture = user.split("## How the opponent mixture plays", 1)[1]
    assert "seat 0, card K, betting so far: none: Pass 0.17, Bet 0.83" in mixture
    assert mixture.count("\n- seat ") == 12
    # With every state described, the opponents are named, not shown as code (it would say nothing more).
    opponents = user.split("## Opponents", 1)[1].split("## How the opponent mixture plays", 1)[0]
    assert "by name and weight" in opponents and "class Policy" not in opponents
    assert all(f"(id {m.id}), weight" in opponents for m in context.population)


def test_refining_from_the_example_edits_working_code_and_never_proposes_the_example(llm_server):
    # Against the uniform mixture of the seeds, the example policy already beats the threshold:
    # the oracle must still ask, and a reply returning the example unchanged is sent back.
    context = kuhn_context()
    example = PromptLibrary().example_policy(KUHN)
    edited = example.replace('("Q", "Bet"): 0', '("Q", "Bet"): 1')  # call with a Queen
    llm_server.script(fenced(example, before="The example is fine."), fenced(edited, before="Call with Q."))
    oracle = make_oracle("llm-refine", options(llm_server, budget=3, start="example"))

    proposal = oracle.propose(context)

    assert proposal.source == edited and proposal.parent is None
    assert llm_server.pending == 0 and len(llm_server.chat_requests) == 2
    first, second = llm_server.chat_requests
    # The first call already refines the example, with its evaluation against the mixture.
    assert "# Task: improve a policy" in first["messages"][-1]["content"]
    assert '("K", "Pass, Bet"): 1' in first["messages"][-1]["content"].split("## The policy", 1)[1]
    assert "Expected payoff against the meta-strategy" in first["messages"][-1]["content"]
    # The unchanged copy is not scored; the next prompt, a new conversation, says what happened.
    assert len(second["messages"]) == 2 and second["messages"][0] == first["messages"][0]
    assert "YOUR LAST ANSWER RETURNED THIS POLICY UNCHANGED" in second["messages"][-1]["content"]
    assert "Linear refinement from the game's example policy" in proposal.rationale
    assert "1. root: " in proposal.rationale \
        and "2. refines 1: failed: the policy it was asked to improve, unchanged" in proposal.rationale


def test_losses_name_the_entry_of_a_plan_keyed_like_the_example():
    from csro_tui.oracles.llm.mixture import situation_losses

    example = PromptLibrary().example_policy(KUHN)
    always_bet = PolicyRecord("p0", "always_bet", SEEDS["always_bet"], "seed")
    text = situation_losses(KUHN, example, [(always_bet, 1.0)])
    # Against always-bet, calling with a Queen wins the pot the example gives away by folding.
    assert ('- seat 0, card Q, betting so far: Pass, Bet (your entry ("Q", "Pass, Bet")): you play Pass 1.00; '
            'Bet (1) would gain +1.00 each time') in text
    # Code without such a table gets the situation alone.
    plain = situation_losses(KUHN, SEEDS["always_bet"], [(PolicyRecord("p1", "c", example, "seed"), 1.0)])
    assert "your entry" not in plain and "card " in plain


def test_a_refine_chain_from_the_example_with_no_usable_reply_proposes_nothing(llm_server):
    context = kuhn_context()
    llm_server.script("No code.", "Still none.")
    oracle = make_oracle("llm-refine", options(llm_server, budget=2, start="example"))
    with pytest.raises(NoUsableCandidate, match="budget of 2 calls used"):
        oracle.propose(context)


def test_rrps_opponents_are_described_by_their_answers_to_probes():
    from csro_tui.oracles.llm.mixture import describe_mixture

    spec = get_game("rrps")
    seeds = spec.seed_policies()
    members = [(PolicyRecord("p0", "beat_last", seeds["beat_last"], "seed"), 0.75),
               (PolicyRecord("p1", "uniform_random", seeds["uniform_random"], "seed"), 0.25)]
    text = describe_mixture(spec, members)
    # beat_last plays what beats your last throw: Paper against Rock, and so on.
    assert "against Rock every throw: P P P P P P P P P P" in text
    assert "against Scissors every throw: P R R R R R R R R R" in text
    assert "- uniform_random (id p1, weight 0.250):\n  against Rock every throw: ? ? ? ?" in text


def test_prose_around_unfenced_code_and_name_keyed_distributions():
    reply = "Sure! Here it is:\n" + HEAD + "    def act(self, obs):\n        return 1\n\nThat bets always."
    source, reason = code_from_reply(reply)
    assert reason is None and source.startswith("class Policy")
    hint = failure_hint("malformed: distribution key of type str is not an action id (episode 0)", KUHN)
    assert "{0: 0.5, 1: 0.5}" in hint and "'Pass' is 0" in hint
    assert failure_hint("everything is fine", KUHN) == ""


def test_prompts_fit_an_8k_context_for_every_registered_game_with_a_full_population():
    library = PromptLibrary()
    for name in ("kuhn_poker", "leduc_poker", "rrps", "repeated_leduc"):
        spec = get_game(name)
        from csro_tui.oracles.llm.prompts import OpponentBrief

        briefs = [OpponentBrief(f"p{i}", n, 1 / 8, s) for i, (n, s) in enumerate(list(spec.seed_policies().items()) * 3)]
        messages = library.best_response_messages(spec, briefs[:8], budget_tokens=5000, mixture="x" * 3000)
        assert messages_tokens(messages) <= 5000, name


def test_code_left_at_the_top_level_gets_its_own_advice():
    hint = failure_hint("crash: KeyError: card in module load (policy.py line 5, in act) (candidate)", KUHN)
    assert hint.startswith("Code outside the class runs when the module is loaded")
    # Key errors are advised on whether the sandbox quotes the key or not.
    for line in ("crash: KeyError: 'hand' in act (episode 0)", "crash: KeyError: hand in act (episode 0)"):
        assert "`obs` has no key 'hand'; its keys are: card, round" in failure_hint(line, KUHN)
    # A module used without its import is told to import it, a name of its own to define it.
    missing_import = "crash: NameError: name 'random' is not defined in Policy.__init__ (episode 0)"
    assert "make `import random` the first line" in failure_hint(missing_import, KUHN)
    assert "define it" in failure_hint("crash: NameError: name 'PLAN' is not defined in act (episode 0)", KUHN)


def test_csro_run_says_when_copies_keep_the_run_from_improving(llm_server, tmp_path, capsys):
    from csro_tui.cli import main

    copy = fenced(SEED_COPY, before="I bet always.")
    llm_server.script(*[copy] * 6)
    code = main(["run", "--game", "kuhn_poker", "--oracle", "llm", "--base-url", llm_server.base_url,
                 "--model", "scripted", "--iterations", "1", "--max-attempts", "2", "--review", "auto",
                 "--seeds", "always_bet", "--session-dir", str(tmp_path), "--workers", "1"])
    out = capsys.readouterr().out
    assert code == 0
    assert "rejected: duplicate: same code as member always_bet (p0)" in out
    assert "iteration 1: not improving: no policy accepted in the last 1 iteration" in out
