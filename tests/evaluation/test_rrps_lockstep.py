"""The RRPS fast path (evaluation/rrps_lockstep.py) against OpenSpiel.

OpenSpiel stays the referee of record: every match here is played twice
with the real sandbox, once through the fast path (no OpenSpiel state, the
column wire) and once through the general lockstep (an OpenSpiel state and
an RRPSView per episode, observations one dict per request), and the two
must agree on every throw of every episode, every return and every failure.
"""

from __future__ import annotations

import pytest

from csro_tui.evaluation import lockstep as general
from csro_tui.evaluation import referee, rrps_lockstep
from csro_tui.evaluation.participants import BotPolicy, CodePolicy
from csro_tui.evaluation.referee import MatchJob, play_matches
from csro_tui.games.registry import get_game
from csro_tui.sandbox.failures import FailureCategory
from csro_tui.sandbox.sandbox import PolicyHost

SPEC = get_game("rrps(num_repetitions=25)")


def code(name: str, act_body: str, init_body: str = "pass") -> CodePolicy:
    source = (
        "import random\n\n"
        "class Policy:\n"
        "    def __init__(self, player, game):\n"
        "        self.rng = random.Random(game['seed'])\n"
        "        self.player = player\n"
        f"        {init_body}\n\n"
        "    def act(self, obs):\n"
        + "".join(f"        {line}\n" for line in act_body.splitlines())
    )
    return CodePolicy(name, source)


SEEDS = SPEC.seed_policies()
FREQUENCY = CodePolicy("frequency_counter", SEEDS["frequency_counter"])
MARKOV = CodePolicy("markov_predictor", SEEDS["markov_predictor"])
# Reads every key of the observation: any difference in what it is sent shows.
EVERYTHING = code(
    "everything",
    "assert obs['legal_actions'] == [0, 1, 2] and len(obs['my_moves']) == len(obs['opp_moves']) == obs['round']\n"
    "return (obs['round'] + 2 * obs['my_score'] + sum(obs['my_moves']) + 2 * sum(obs['opp_moves'])"
    " + self.player) % 3",
)
# Distributions: the referee samples them with each episode's generator.
MIXED = code("mixed", "return {0: 0.5, 1: 0.3, 2: 0.2} if obs['round'] % 3 else self.rng.randrange(3)")
# Changes its lists in place (the host must notice and get them whole again).
MUTATOR = code(
    "mutator",
    "obs['opp_moves'].sort()\n"
    "if obs['round'] % 4 == 1:\n"
    "    obs['my_moves'].append(7)\n"
    "if obs['round'] % 5 == 2:\n"
    "    obs['my_moves'].clear()\n"
    "obs['legal_actions'].append(9)\n"
    "return (len(obs['my_moves']) + sum(obs['opp_moves'][-3:])) % 3",
)
CRASHES_LATE = code("crashes_late", "if obs['round'] == 17:\n    raise ValueError('late')\nreturn 1")


def play_both(jobs, monkeypatch):
    """(fast results, fast throws, general results, general throws); throws
    per (job, episode index) as a list of (seat 0, seat 1) moves."""
    captured = {}

    def keep(kind):
        def close(self):
            captured[kind] = self
            original_close(self)
        return close

    original_close = general.Lockstep.close
    records: dict = {}
    original_record = general.Lockstep._record

    def record(self, episode):
        history = episode.state.history()
        records[(episode.match.index, episode.index)] = list(zip(history[0::2], history[1::2]))
        original_record(self, episode)

    monkeypatch.setattr(general.Lockstep, "close", keep("lockstep"))
    # One lockstep each way, whatever the hosts' memory would split into waves.
    monkeypatch.setattr(referee, "episodes_per_host", lambda limits: 10_000)
    fast = play_matches(SPEC, jobs)
    fast_lockstep = captured.pop("lockstep")
    assert isinstance(fast_lockstep, rrps_lockstep.RRPSLockstep)
    fast_throws = {
        (fast_lockstep.row_match[row].index, fast_lockstep.row_index[row]): fast_lockstep.throws_of(row)
        for row in range(len(fast_lockstep.row_match))
    }
    monkeypatch.setattr(rrps_lockstep, "applies", lambda spec, jobs: False)
    monkeypatch.setattr(general.Lockstep, "_record", record)
    slow = play_matches(SPEC, jobs)
    assert type(captured.pop("lockstep")) is general.Lockstep
    return fast, fast_throws, slow, records


def summary(result):
    failure = result.failure
    return (result.a, result.b, result.returns, result.seeds, result.episodes, result.mean, result.stderr,
            failure.category if failure else None, failure.policy if failure else None)


def test_the_fast_path_plays_exactly_as_openspiel(monkeypatch):
    jobs = [
        MatchJob(FREQUENCY, MARKOV, 6, 11),
        MatchJob(EVERYTHING, MIXED, 4, 12),
        MatchJob(MUTATOR, FREQUENCY, 4, 13),  # FREQUENCY's host serves two matches
    ]
    fast, fast_throws, slow, slow_throws = play_both(jobs, monkeypatch)
    assert [summary(r) for r in fast] == [summary(r) for r in slow]
    assert all(r.failure is None and r.episodes == job.episodes for r, job in zip(fast, jobs))
    for key, throws in slow_throws.items():
        assert fast_throws[key] == throws, key
        assert len(throws) == SPEC.num_repetitions
    assert len(fast_throws) == len(slow_throws) == 14
    # The distributions were sampled (not only their first action played).
    mixed_moves = {move for (match, _), throws in fast_throws.items() if match == 1 for pair in throws for move in pair}
    assert mixed_moves == {0, 1, 2}


def test_a_long_lockstep_of_the_seed_policies_plays_as_openspiel(monkeypatch):
    jobs = [MatchJob(FREQUENCY, MARKOV, 40, 51), MatchJob(MARKOV, MIXED, 20, 52)]
    fast, fast_throws, slow, slow_throws = play_both(jobs, monkeypatch)
    assert [summary(r) for r in fast] == [summary(r) for r in slow]
    assert fast_throws == slow_throws and len(fast_throws) == 60


def test_a_failure_ends_only_its_matches_as_in_openspiel(monkeypatch):
    jobs = [MatchJob(CRASHES_LATE, MARKOV, 2, 21), MatchJob(FREQUENCY, MARKOV, 2, 22)]
    fast, fast_throws, slow, slow_throws = play_both(jobs, monkeypatch)
    assert [summary(r) for r in fast] == [summary(r) for r in slow]
    crashed, clean = fast
    assert crashed.failure.category is FailureCategory.CRASH and crashed.failure.policy == "crashes_late"
    assert "late" in crashed.failure.message and crashed.episodes == 0
    assert clean.failure is None and clean.episodes == 2
    for key, throws in slow_throws.items():
        assert fast_throws[key] == throws


def test_bots_and_self_play_take_the_general_path():
    assert rrps_lockstep.applies(SPEC, [MatchJob(FREQUENCY, MARKOV, 2, 1)])
    assert not rrps_lockstep.applies(SPEC, [MatchJob(FREQUENCY, BotPolicy("rockbot"), 2, 1)])
    assert not rrps_lockstep.applies(SPEC, [MatchJob(FREQUENCY, FREQUENCY, 2, 1)])
    assert not rrps_lockstep.applies(get_game("kuhn_poker"), [MatchJob(FREQUENCY, MARKOV, 2, 1)])
    assert referee.play_match  # the referee picks the path (play_matches)


# -- the column wire on its own ------------------------------------------------------

KEYS = ["round", "history", "legal_actions"]
ECHO = code("echo", "return (obs['round'] + sum(obs['history']) + len(obs['history'])) % 3")


def send(host, episodes, round_number, length, items, whole=()):
    return host.send_act_columns(
        episodes, keys=KEYS, same={"round": round_number, "legal_actions": [0, 1, 2]},
        grown={"history": (length, items)}, whole=list(whole),
    )


def test_columns_answer_as_dicts_do():
    info = SPEC.game_info()
    with PolicyHost(ECHO.source, info) as columns, PolicyHost(ECHO.source, info) as dicts:
        for host in (columns, dicts):
            host.new_episodes([(1, 0, 5), (2, 1, 6)])
        histories = {1: [], 2: []}
        for round_number in range(6):
            whole = [(0, "history", []), (1, "history", [])] if round_number == 0 else []
            items = [histories[e][-1] if round_number else 0 for e in (1, 2)]
            assert send(columns, [1, 2], round_number, max(round_number - 1, 0), items, whole)
            by_column = columns.receive_act()
            by_dict = dicts.act([(e, {"round": round_number, "history": histories[e], "legal_actions": [0, 1, 2]})
                                 for e in (1, 2)])
            assert by_column == by_dict
            for e, answer in zip((1, 2), by_column):
                histories[e].append(answer + e)


def test_columns_refuse_caller_mistakes_and_keep_the_host():
    with PolicyHost(ECHO.source, SPEC.game_info()) as host:
        host.new_episodes([(1, 0, 5)])
        with pytest.raises(ValueError, match="not running"):
            send(host, [3], 0, 0, [0], [(0, "history", [])])
        with pytest.raises(ValueError, match="twice"):
            send(host, [1, 1], 0, 0, [0, 0])
        with pytest.raises(ValueError, match="exactly one"):
            host.send_act_columns([1], keys=["round", "legal_actions"], same={"legal_actions": [0, 1, 2]})
        with pytest.raises(ValueError, match="2 items for 1"):
            send(host, [1], 0, 0, [0, 0])
        with pytest.raises(ValueError, match="scalars"):
            host.send_act_columns([1], keys=["legal_actions"], same={"legal_actions": [[0], [1]]})
        assert host.failure is None
        assert send(host, [1], 0, 0, [0], [(0, "history", [])])
        assert host.receive_act() == [0]


def test_a_wrong_length_is_the_host_failing_out_of_step():
    with PolicyHost(ECHO.source, SPEC.game_info()) as host:
        host.new_episodes([(1, 0, 5)])
        send(host, [1], 0, 0, [0], [(0, "history", [])])
        host.receive_act()
        send(host, [1], 1, 3, [2])  # the host holds an empty list, not 3 items
        with pytest.raises(Exception) as raised:
            host.receive_act()
        assert "out of step" in str(raised.value)
        assert host.failure is not None


def test_a_list_changed_in_place_must_be_sent_whole_next():
    sorter = code("sorter", "obs['history'].reverse()\nreturn len(obs['history']) % 3")
    with PolicyHost(sorter.source, SPEC.game_info()) as host:
        host.new_episodes([(1, 0, 5)])
        send(host, [1], 0, 0, [0], [(0, "history", [])])
        host.receive_act()
        assert host.dropped_lists == set()  # an empty list reversed is the same list
        send(host, [1], 1, 0, [2])
        assert host.receive_act() == [1]
        send(host, [1], 2, 1, [1])
        host.receive_act()
        assert host.dropped_lists == {(1, "history")}  # [2, 1] reversed in place
        with pytest.raises(ValueError, match="sent whole"):
            send(host, [1], 3, 2, [0])
        assert send(host, [1], 3, 2, [0], [(0, "history", [2, 1, 0])])
        assert host.receive_act() == [0]
        assert host.dropped_lists == {(1, "history")}  # reversed again


def test_each_sampled_position_of_a_grown_list_is_checked_after_act():
    # The host samples a grown list at 0, n/4, n/2, 3n/4 and its end (n items
    # once this throw's is appended); a change at any of them is caught, the
    # list dropped and the next batch must send it whole.
    for position in ("0", "n >> 2", "n >> 1", "(3 * n) >> 2", "n - 1"):
        changer = code("changer", "h = obs['history']\nn = len(h)\n"
                       f"if n == 8:\n    h[{position}] = 2 - h[{position}]\nreturn 0")
        with PolicyHost(changer.source, SPEC.game_info()) as host:
            host.new_episodes([(1, 0, 5), (2, 1, 6)])
            send(host, [1, 2], 0, 0, [0, 0], [(0, "history", []), (1, "history", [])])
            host.receive_act()
            for length in range(1, 9):
                send(host, [1, 2], length, length - 1, [0, 0])
                host.receive_act()
            assert host.dropped_lists == {(1, "history"), (2, "history")}, position
            with pytest.raises(ValueError, match="sent whole"):
                send(host, [1, 2], 9, 8, [0, 0])


SLOW = code("slow", "total = 0\nfor i in range(400000):\n    total += i\nreturn total % 3")


def test_the_time_limit_blames_the_slow_side_as_in_openspiel(monkeypatch):
    jobs = [MatchJob(SLOW, FREQUENCY, 2, 31)]
    results = {}
    for path, applies in (("fast", rrps_lockstep.applies), ("general", lambda spec, jobs: False)):
        monkeypatch.setattr(rrps_lockstep, "applies", applies)
        results[path] = play_matches(SPEC, jobs, match_seconds=0.2)[0]
    for result in results.values():
        assert result.failure is not None and result.failure.category is FailureCategory.TIMEOUT
        assert result.failure.policy == "slow" and "overran its limit of 0.2 s" in result.failure.message
        assert result.episodes == 0


def test_progress_reaches_every_match():
    seen = []
    play_matches(SPEC, [MatchJob(FREQUENCY, MARKOV, 2, 41), MatchJob(MARKOV, EVERYTHING, 2, 42)],
                 progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (2.0, 2)
    assert all(total == 2 for _, total in seen)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)


def test_seat_fixed_matches_play_as_openspiel_on_the_fast_path(monkeypatch):
    # Seat-fixed jobs (two populations) beside a seat-swapped one, FREQUENCY's host in both
    # seats across jobs; an odd episode count is played as asked.
    jobs = [
        MatchJob(FREQUENCY, MARKOV, 3, 61, 0),
        MatchJob(MIXED, FREQUENCY, 4, 62, 1),
        MatchJob(MARKOV, EVERYTHING, 2, 63),
        MatchJob(EVERYTHING, MUTATOR, 2, 64, 1),
    ]
    fast, fast_throws, slow, slow_throws = play_both(jobs, monkeypatch)
    assert [summary(r) for r in fast] == [summary(r) for r in slow]
    assert [(r.seat, r.episodes, r.failure) for r in fast] == [(0, 3, None), (1, 4, None), (None, 2, None), (1, 2, None)]
    assert fast_throws == slow_throws and len(fast_throws) == 11
    # a's return is its own seat's score: seat 0's in job 0, seat 1's in job 1.
    for (match, episode), throws in fast_throws.items():
        seat = jobs[match].seat
        if seat is not None:
            score0 = sum(int(rrps_lockstep.SCORE[first, second]) for first, second in throws)
            assert fast[match].returns[episode] == (score0 if seat == 0 else -score0)


def test_a_seat_fixed_failure_ends_only_its_matches_as_in_openspiel(monkeypatch):
    jobs = [MatchJob(MARKOV, CRASHES_LATE, 2, 71, 1), MatchJob(FREQUENCY, MARKOV, 3, 72, 1)]
    fast, _, slow, _ = play_both(jobs, monkeypatch)
    assert [summary(r) for r in fast] == [summary(r) for r in slow]
    assert fast[0].failure.policy == "crashes_late" and fast[0].episodes == 0
    assert fast[1].failure is None and fast[1].episodes == 3
