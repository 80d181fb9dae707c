"""Behaviour profiles (issue 22): known policies get known profiles, the distance is
0 exactly for the same behaviour written twice, and an added bluff differs in
exactly that situation.  Sandboxed policies throughout (the real host)."""

from __future__ import annotations

import pytest

from csro_tui.evaluation.participants import CodePolicy, resolve_participant
from csro_tui.games.registry import get_game
from csro_tui.profiles import compute
from csro_tui.profiles.compute import profile_policy
from csro_tui.profiles.describe import describe
from csro_tui.profiles.distance import clusters, compare, distance_matrix, effective_strategies
from csro_tui.profiles.hints import static_hints
from csro_tui.profiles.model import Profile

KUHN_CARD_RULE = """
class Policy:
    def __init__(self, player, game):
        pass

    def act(self, obs):
        facing = obs["to_call"] > 0
        if obs["card"] == "K":
            return 1
        if facing:
            return 1 if obs["card"] == "Q" else 0
        return 0
"""

# The same behaviour, written as a lookup table.
KUHN_CARD_TABLE = """
TABLE = {("K", False): 1, ("K", True): 1, ("Q", False): 0, ("Q", True): 1, ("J", False): 0, ("J", True): 0}


class Policy:
    def __init__(self, player, game):
        self.table = dict(TABLE)

    def act(self, obs):
        return self.table[(obs["card"], obs["to_call"] == 1)]
"""

# The card rule plus one bluff: bets the Jack when first to act.
KUHN_ONE_BLUFF = KUHN_CARD_RULE.replace(
    "        if facing:\n",
    '        if obs["card"] == "J" and obs["betting"] == [[]]:\n            return 1\n        if facing:\n',
)

BEAT_LAST = """
class Policy:
    def __init__(self, player, game):
        pass

    def act(self, obs):
        theirs = obs["opp_moves"]
        return (theirs[-1] + 1) % 3 if theirs else 0
"""

# Crashes as soon as the opponent has thrown Scissors.
CRASHES_ON_SCISSORS = """
class Policy:
    def __init__(self, player, game):
        pass

    def act(self, obs):
        if 2 in obs["opp_moves"][-1:]:
            raise RuntimeError("no plan for scissors")
        return 1
"""


@pytest.fixture(autouse=True)
def _fresh_profiles():
    compute._cache.clear()
    yield


def kuhn():
    return get_game("kuhn_poker")


def test_always_bet_in_kuhn_bets_and_calls_everywhere_it_is_reached():
    spec = kuhn()
    profile = profile_policy(spec, resolve_participant(spec, "seed:always_bet"))
    reached = [row for row in profile.situations if row.weight > 0]
    assert {row.label for row in reached} == {"first to act", "after a check", "facing a bet"}
    for row in reached:
        assert max(row.distribution, key=row.distribution.get) in ("bet", "call")
        assert max(row.distribution.values()) == pytest.approx(1.0)
    # Seat 0 holds each card a third of the time; it never checks, so never faces a bet after checking.
    first = [row for row in profile.situations if row.label == "first to act"]
    assert sorted(row.weight for row in first) == pytest.approx([1 / 3] * 3)
    assert all(row.weight == 0 for row in profile.situations if row.label == "checked, then facing a bet")
    words = describe(profile)
    assert "first to act (seat 0): always bets" in words
    assert "facing a bet (seat 1): always calls" in words


def test_the_same_behaviour_written_twice_is_at_distance_zero_with_no_differences():
    spec = kuhn()
    a = profile_policy(spec, CodePolicy("rule", KUHN_CARD_RULE))
    b = profile_policy(spec, CodePolicy("table", KUHN_CARD_TABLE))
    assert a.source_hash != b.source_hash
    comparison = compare(a, b)
    assert comparison.distance == 0.0
    assert comparison.stderr is None
    assert comparison.differences == []
    assert comparison.same_within_noise


def test_one_added_bluff_differs_in_exactly_that_situation():
    spec = kuhn()
    honest = profile_policy(spec, CodePolicy("honest", KUHN_CARD_RULE))
    bluffer = profile_policy(spec, CodePolicy("bluffer", KUHN_ONE_BLUFF))
    comparison = compare(honest, bluffer)
    assert [d["situation"] for d in comparison.differences] == ["Jack, first to act (seat 0)"]
    (difference,) = comparison.differences
    assert difference["a"] == {"check": 1.0, "bet": 0.0}
    assert difference["b"] == {"check": 0.0, "bet": 1.0}
    assert 0 < comparison.distance < 1
    assert not comparison.same_within_noise


def test_two_populations_compare_a_seat_in_its_own_states_only():
    """A seat-1 member never plays seat 0: a bluff first to act (seat 0's state) is no
    difference between two seat-1 policies, and the distance of their seat-0 pair is the
    bluff's alone (issue 23's review said a seat-1 proposal differed 'first to act')."""
    spec = kuhn()
    honest = profile_policy(spec, CodePolicy("honest", KUHN_CARD_RULE))
    bluffer = profile_policy(spec, CodePolicy("bluffer", KUHN_ONE_BLUFF))
    in_seat_1 = compare(honest, bluffer, seat=1)
    assert in_seat_1.distance == 0.0 and in_seat_1.differences == []
    in_seat_0 = compare(honest, bluffer, seat=0)
    assert [d["situation"] for d in in_seat_0.differences] == ["Jack, first to act (seat 0)"]
    assert in_seat_0.distance > compare(honest, bluffer).distance > 0  # only seat 0's states weigh
    distances, _ = distance_matrix([honest, bluffer], seat=1)
    assert distances[0, 1] == 0.0


def test_reach_is_under_the_uniform_opponent_so_unreached_states_do_not_count():
    """Facing a bet after its own check is reached only by a policy that checks: 1/3 x 1/2 per card."""
    spec = kuhn()
    profile = profile_policy(spec, CodePolicy("rule", KUHN_CARD_RULE))
    rows = {(row.group, row.label, row.seat): row for row in profile.situations}
    assert rows[("Jack", "checked, then facing a bet", 0)].weight == pytest.approx(1 / 6)
    assert rows[("King", "checked, then facing a bet", 0)].weight == 0.0  # it bets the King
    assert rows[("Jack", "facing a bet", 1)].weight == pytest.approx(1 / 6)


def rrps():
    return get_game("rrps(num_repetitions=30)")


def test_beat_last_against_the_constant_probes_loses_nothing_after_its_first_throw():
    spec = rrps()
    profile = profile_policy(spec, CodePolicy("beat-last", BEAT_LAST), seed=7)
    constant = [probe for probe in profile.probes if probe.name.startswith("constant")]
    assert len(constant) == 3
    # Throw 1 is Rock whatever the probe plays (a tie, a loss, a win); every later throw wins.
    first_throw = {"constant rock": 0, "constant paper": -1, "constant scissors": 1}
    for probe in constant:
        assert probe.failure is None
        assert probe.mean == 29 + first_throw[probe.name]
        assert probe.thirds == [9.0 + first_throw[probe.name], 10.0, 10.0]
        assert probe.stops_falling_after == (1 if first_throw[probe.name] < 0 else 0)
    assert any(line.startswith("against constant paper:") and "losing nothing after move 1" in line
               for line in describe(profile))
    assert {probe.name for probe in profile.probes} >= {"cycling", "copying", "beat-last", "frequency-following", "uniform"}
    assert any("beats constant rock" in line for line in describe(profile))


def test_a_crash_against_a_probe_is_part_of_the_profile():
    spec = rrps()
    profile = profile_policy(spec, CodePolicy("fragile", CRASHES_ON_SCISSORS), seed=3)
    by_name = {probe.name: probe for probe in profile.probes}
    assert by_name["constant scissors"].failure and "scissors" in by_name["constant scissors"].failure
    assert by_name["constant scissors"].mean is None
    assert by_name["constant rock"].failure is None and by_name["constant rock"].mean == pytest.approx(30.0)
    assert any(line.startswith("fails against constant scissors") for line in describe(profile))
    # Views and distances never break on it: a failure is the largest difference.
    other = profile_policy(spec, CodePolicy("beat-last", BEAT_LAST), seed=3)
    comparison = compare(profile, other)
    assert any("constant scissors" in d["situation"] and "failure" in d["a"] for d in comparison.differences)


def test_a_sampled_profile_is_reproducible_from_its_seed_and_comparable_with_noise():
    spec = rrps()
    uniform = resolve_participant(spec, "seed:uniform_random")
    first = profile_policy(spec, uniform, seed=11).to_dict()
    compute._cache.clear()
    again = profile_policy(spec, uniform, seed=11)
    assert again.to_dict() == first
    assert Profile.from_dict(first).to_dict() == first
    beat_last = profile_policy(spec, CodePolicy("beat-last", BEAT_LAST), seed=11)
    comparison = compare(again, beat_last)
    assert comparison.stderr is not None and comparison.stderr > 0
    assert comparison.distance > 2 * comparison.stderr
    assert any(d["situation"].startswith("against constant") for d in comparison.differences)
    itself = compare(again, profile_policy(spec, uniform, seed=11))
    assert itself.distance == 0.0 and itself.same_within_noise


def test_liars_dice_profiles_name_situations_by_dice_and_bid():
    spec = get_game("liars_dice")
    profile = profile_policy(spec, resolve_participant(spec, "seed:" + sorted(spec.seed_policies())[0]), seed=5,
                             episodes=40)
    assert profile.kind == "sampled"
    assert {probe.name for probe in profile.probes} == {bot.name for bot in spec.benchmark()}
    assert all(probe.episodes == 40 for probe in profile.probes)
    names = [row.name for row in profile.situations]
    assert any(name.startswith("holding ") and ("opening bid" in name or "after " in name) for name in names)
    for row in profile.situations:
        assert sum(row.distribution.values()) == pytest.approx(1.0)


def test_diversity_of_a_population_with_a_duplicate():
    spec = kuhn()
    profiles = [
        profile_policy(spec, CodePolicy("rule", KUHN_CARD_RULE)),
        profile_policy(spec, CodePolicy("table", KUHN_CARD_TABLE)),
        profile_policy(spec, resolve_participant(spec, "seed:always_bet")),
    ]
    distances, errors = distance_matrix(profiles)
    assert clusters(distances, errors) == [[0, 1], [2]]
    # Two behaviours under equal weight: between 1 (one behaviour) and 2 (two fully apart).
    assert effective_strategies([0.5, 0.5, 0.0], distances) == pytest.approx(1.0)
    both = effective_strategies([0.5, 0.0, 0.5], distances)
    assert 1.0 < both <= 2.0
    assert both == pytest.approx(1 / (0.5 + 0.5 * (1 - distances[0, 2])))


def test_static_hints_name_the_line():
    source = (
        "import random\n"
        "class Policy:\n"
        "    def __init__(self, player, game):\n"
        "        self.counts = [0, 0, 0]\n"
        "        self.rng = random.Random(game['seed'])\n"
        "        self.unused = 5\n"
        "    def update(self, obs, action):\n"
        "        self.counts[action] += 1\n"
        "    def act(self, obs):\n"
        "        if random.random() < 0.1:\n"
        "            return self.rng.choice(obs['legal_actions'])\n"
        "        return max(range(3), key=lambda a: self.counts[a])\n"
    )
    hints = [(hint.line, hint.message.split(":")[0]) for hint in static_hints(source)]
    assert (6, "self.unused is written but never read") in hints
    assert (7, "method update() is never called") in hints
    assert any(line == 10 and "random.random()" in message for line, message in hints)
    assert not any("self.rng" in message or "self.counts" in message for _, message in hints)


# Loops forever once the opponent has thrown Paper.
HANGS_ON_PAPER = """
class Policy:
    def __init__(self, player, game):
        pass

    def act(self, obs):
        while 1 in obs["opp_moves"][-1:]:
            pass
        return 0
"""


def test_a_timeout_against_a_probe_is_part_of_the_profile():
    from csro_tui.sandbox.sandbox import SandboxLimits

    spec = get_game("rrps(num_repetitions=6)")
    limits = SandboxLimits(move_timeout=0.5, call_grace=0.5)
    profile = profile_policy(spec, CodePolicy("hangs", HANGS_ON_PAPER), seed=2, limits=limits)
    by_name = {probe.name: probe for probe in profile.probes}
    assert by_name["constant paper"].failure and "time" in by_name["constant paper"].failure.lower()
    assert by_name["constant rock"].failure is None and by_name["constant rock"].mean == 0.0
    assert by_name["constant scissors"].mean == pytest.approx(6.0)


def test_a_recorded_exact_profile_compares_as_the_computed_one():
    """Recorded profiles leave out the information-state strings; rows align by position."""
    spec = kuhn()
    honest = profile_policy(spec, CodePolicy("honest", KUHN_CARD_RULE))
    bluffer = profile_policy(spec, CodePolicy("bluffer", KUHN_ONE_BLUFF))
    recorded = Profile.from_dict(bluffer.to_record())
    assert all(row.key == "" for row in recorded.situations)
    assert compare(honest, recorded).differences == compare(honest, bluffer).differences
    assert compare(honest, recorded).distance == compare(honest, bluffer).distance


def test_a_difference_the_opponent_never_allows_weighs_nothing_under_that_opponent():
    """Two policies that differ only when facing a bet: apart under the uniform opponent,
    the same under an opponent that never bets (as the review's meta-strategy distance)."""
    import copy

    from csro_tui.evaluation.exact import game_tables

    calls_queen = KUHN_CARD_RULE
    folds_queen = KUHN_CARD_RULE.replace('return 1 if obs["card"] == "Q" else 0', "return 0")
    spec = kuhn()
    a = profile_policy(spec, CodePolicy("calls", calls_queen))
    b = profile_policy(spec, CodePolicy("folds", folds_queen))
    assert compare(a, b).distance > 0
    never_bets = copy.copy(game_tables(spec).template)
    never_bets.action_probability_array[:] = [1.0, 0.0]  # Pass everywhere
    assert compare(a, b, opponent_reach=compute.opponent_reach(spec, never_bets)).distance == 0.0


def test_leduc_words_say_once_what_is_the_same_on_every_board():
    spec = get_game("leduc_poker")
    words = describe(profile_policy(spec, resolve_participant(spec, "seed:always_call")))
    boards = [line for line in words if "board" in line]
    assert boards and all("board " in line and "/" in line.split("board ")[1].split(":")[0] for line in boards)
    assert "pre-flop: check, check; board J/Q/K: first to act (seat 0): always checks" in words  # boards in the holdings' order


def test_leduc_lists_every_situation_once_though_suits_make_two_states_of_it():
    """Leduc's two suits give two information states for each situation a player can tell
    apart; the differences (diff, review, Compare) and the profile listing name each once,
    with both states' reach summed."""
    from collections import Counter

    from csro_tui.profiles.model import merged_by_name
    from csro_tui.profiles.report import profile_lines

    spec = get_game("leduc_poker")
    calls = profile_policy(spec, resolve_participant(spec, "seed:always_call"))
    rules = profile_policy(spec, resolve_participant(spec, "seed:card_rules"))
    assert max(Counter(row.name for row in calls.situations).values()) > 1  # the states do share names
    for comparison in (compare(calls, rules), compare(Profile.from_dict(calls.to_record()), rules)):
        names = [d["situation"] for d in comparison.differences]
        assert names and len(names) == len(set(names))
        first = next(d for d in comparison.differences if d["situation"] == "King, pre-flop: first to act (seat 0)")
        assert first["reach"]["a"] == pytest.approx(1 / 3)  # either King: a third of the deals
        assert first["a"] == {"check": 1.0, "bet": 0.0}
    listed = [line.split("  reach")[0].strip() for line in profile_lines(calls) if " reach " in line]
    assert listed and len(listed) == len(set(listed))
    merged = merged_by_name(calls.situations)
    assert len({row.name for row in merged}) == len(merged)
    assert sum(row.weight for row in merged) == pytest.approx(sum(row.weight for row in calls.situations))


def test_words_claim_a_result_or_a_trend_only_beyond_its_noise():
    """With two seat-swapped pairs a standard error is itself a guess: 'beats' and 'worse as
    the match goes on' need Student's t at the gate's level (z = 2), not 2 standard errors."""
    from csro_tui.profiles.model import PROBES, ProbeRow

    def words(episodes: int, trend_stderr: float) -> str:
        probe = ProbeRow("uniform", "uniform random throws", mean=9.0, stderr=3.0, thirds=[20.0, -4.5, -6.5],
                         trend_stderr=trend_stderr, episodes=episodes, moves=1000)
        return "\n".join(describe(Profile("rrps", "p", "h", PROBES, seed=0, probes=[probe], payoff_scale=1000.0)))

    few = words(4, 10.0)
    assert "beats" not in few and "worse as the match goes on" not in few
    assert "against uniform: +9 per match (thirds +20 / -4.5 / -6.5)" in few
    many = words(40, 0.0)
    assert "beats uniform" in many and "worse as the match goes on" in many


def test_a_mixed_move_everywhere_is_not_said_to_be_always_made():
    spec = kuhn()
    words = describe(profile_policy(spec, resolve_participant(spec, "seed:uniform")))
    assert "first to act (seat 0): checks 50%, bets 50%, whatever it holds" in words
    assert not any("always" in line for line in words)


def test_match_results_read_as_whole_numbers_from_a_hundred_up():
    from csro_tui.profiles.report import distribution_text, figure

    assert [figure(-1000.0), figure(998.4), figure(-21.5), figure(0.0), figure(750.0, signed=False)] == [
        "-1000", "+998", "-21.5", "+0", "750"]
    assert distribution_text({"mean": -1000.0, "stderr": 750.0, "thirds": [-334.0, -333.0, -333.0]}) == (
        "-1000 ± 750 (thirds -334 / -333 / -333)")


def test_float_noise_in_a_result_reads_as_zero():
    """An exact head to head of +1.388e-17 (two best responses that tie) read as such."""
    from csro_tui.profiles.report import figure

    assert figure(1.3877787807814457e-17, digits=4) == "+0"
    assert figure(-1.3877787807814457e-17) == "+0"
    assert figure(0.0555, digits=3) == "+0.0555"


def test_a_seated_liars_dice_profile_plays_only_its_seat():
    """Two populations: a seat's member never plays the other seat, so its sampled
    profile holds only its seat's situations and results (seat 1 never opens the bidding)."""
    spec = get_game("liars_dice")
    honest = resolve_participant(spec, "seed:honest")
    seat0 = profile_policy(spec, honest, seed=5, episodes=40, seat=0)
    seat1 = profile_policy(spec, honest, seed=5, episodes=40, seat=1)
    both = profile_policy(spec, honest, seed=5, episodes=40)
    assert (seat0.seat, seat1.seat, both.seat) == (0, 1, None)
    assert {row.seat for row in seat0.situations} == {0} and {row.seat for row in seat1.situations} == {1}
    assert {row.seat for row in both.situations} == {None}
    assert any("opening bid" in row.label for row in seat0.situations)
    assert not any("opening bid" in row.label for row in seat1.situations)
    assert all(row.name.endswith("(seat 1)") for row in seat1.situations)
    assert all(probe.episodes == 40 and probe.failure is None for probe in seat1.probes)
    # The two seats' results are their own (the cache keeps them apart).
    assert [p.mean for p in seat0.probes] != [p.mean for p in seat1.probes]
    assert compare(seat0, seat1).distance > 0
    assert "seat" not in both.to_dict() and Profile.from_dict(seat1.to_dict()).to_dict() == seat1.to_dict()


def test_a_seated_rrps_profile_plays_only_its_seat_and_stays_reproducible():
    spec = rrps()
    beat_last = CodePolicy("beat-last", BEAT_LAST)
    seat1 = profile_policy(spec, beat_last, seed=7, episodes=4, seat=1)
    assert seat1.seat == 1 and {row.seat for row in seat1.situations} <= {1}
    constant = {probe.name: probe for probe in seat1.probes if probe.name.startswith("constant")}
    # Seat 1 plays as seat 0 does in this symmetric game: Rock first, then every throw wins.
    assert constant["constant paper"].mean == 28 and constant["constant paper"].episodes == 4
    compute._cache.clear()
    assert profile_policy(spec, beat_last, seed=7, episodes=4, seat=1).to_dict() == seat1.to_dict()
