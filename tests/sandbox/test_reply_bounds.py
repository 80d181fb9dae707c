"""The wire's bounds: a reply is read only up to what its request allows.

An honest host's largest replies (every answer at its longest, printed
output, resync entries and failure texts of characters JSON escapes to 12
bytes) fit the bound of their request, so their failures are the policy's
own; a longer line fails the host, named, before anything is parsed.  The
corpus's forge_*/takeover_* reply cases play the attacks in real matches.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from csro_tui.sandbox.channel import HostChannel
from csro_tui.sandbox.checks import HostFault, check_reply
from csro_tui.sandbox.failures import FailureCategory, PolicyFailure
from csro_tui.sandbox.wire import FAILURE_TEXT_CHARS, TYPE_NAME_CHARS, act_reply_bound, reply_bound
from csro_tui.sandbox.sandbox import PolicyHost, SandboxLimits

LIMITS = SandboxLimits(init_timeout=30.0, move_timeout=10.0, batch_timeout=10.0, memory_mb=512)
GAME = {"name": "test", "num_players": 2, "num_actions": 3, "action_names": ["a", "b", "c"], "params": {}}
WIDE = "\U0001F600"  # one character, 12 bytes in the host's JSON (a surrogate pair's two escapes)
LEGAL = list(range(50))


def make_host(source: str) -> PolicyHost:
    return PolicyHost(source, GAME, name="policy", limits=LIMITS)


def failure_of(source: str, obs: dict) -> PolicyFailure:
    with make_host(source) as host:
        host.new_episodes([(1, 0, 0)])
        with pytest.raises(PolicyFailure) as caught:
            host.act([(1, obs)])
    return caught.value


def test_the_longest_honest_answers_fit_their_bound(sandbox_mode):
    """Distributions over every legal action with the longest floats, a
    printed head of wide characters and a resync entry under a wide key: the
    reply fits, and the failure is the parent's verdict on the answers."""
    key = WIDE * 40
    source = f"""
class Policy:
    def __init__(self, player, game):
        pass

    def act(self, obs):
        print({WIDE!r} * 2000)
        obs[{key!r}].append(1)  # changed in place: the host asks for it whole (resync)
        return {{action: -2.2250738585072014e-308 for action in obs["legal_actions"]}}
"""
    with make_host(source) as host:
        host.new_episodes([(episode, 0, episode) for episode in range(3)])
        with pytest.raises(PolicyFailure) as caught:
            host.act([(episode, {"legal_actions": LEGAL, key: [1, 2, 3]}) for episode in range(3)])
    assert caught.value.category is FailureCategory.MALFORMED
    assert "is negative" in caught.value.message, caught.value.message


@pytest.mark.parametrize("answer, expected", [
    (f"type({WIDE * 500!r}, (), {{}})()", "act returned a " + WIDE * TYPE_NAME_CHARS + ";"),
    ("{**{a: 0.0 for a in range(100, 90_000)}, 0: 1.0}", None),  # zero weight on illegal ids: left out, legal
    ("{**{a: 0.0 for a in range(100, 90_000)}, 0: 0.5, 10**6: 0.5}", "to action 1000000, which is not legal"),
    (f"{{0: 0.5, type({WIDE * 500!r}, (), {{}})(): 0.5, **{{a: 0.0 for a in range(60)}}}}",
     "distribution key of type " + WIDE * TYPE_NAME_CHARS + " is not"),
], ids=["long_type_name", "zeros_on_illegal_ids", "zeros_then_illegal", "long_key_type_name"])
def test_answers_of_any_size_come_back_within_their_bound(answer, expected, monkeypatch):
    monkeypatch.setenv("CSRO_SANDBOX", "rlimits")
    source = f"class Policy:\n    def __init__(self, player, game):\n        pass\n\n    def act(self, obs):\n" \
             f"        return {answer}\n"
    if expected is None:
        with make_host(source) as host:
            host.new_episodes([(1, 0, 0)])
            assert host.act([(1, {"legal_actions": LEGAL})]) == [{0: 1.0}]
        return
    failure = failure_of(source, {"legal_actions": LEGAL})
    assert expected in failure.message, failure.message
    assert "where its request allows" not in failure.message


def test_failure_texts_are_cut_to_fit_their_bound(sandbox_mode):
    source = f"""
class Policy:
    def __init__(self, player, game):
        pass

    def act(self, obs):
        print({WIDE!r} * 10_000)
        raise ValueError({WIDE!r} * 1_000_000)
"""
    failure = failure_of(source, {"legal_actions": LEGAL})
    assert failure.category is FailureCategory.CRASH
    assert failure.message.startswith("ValueError: " + WIDE * 100)
    assert len(failure.message) <= FAILURE_TEXT_CHARS


def test_a_line_longer_than_its_request_allows_is_refused_unparsed():
    """The channel reads no further than the bound (and one 64 kB read): a
    10 MB line costs the parent no more, and the failure says both sizes."""
    writer = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdout.buffer.write(b'[' * 10_000_000 + b'\\n')"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )
    try:
        channel = HostChannel(writer, max_message_bytes=64 << 20)
        with pytest.raises(HostFault) as caught:
            channel.read_line(100_000)
        assert len(channel._buffer) <= 100_000 + (1 << 16)
    finally:
        writer.kill()
        writer.wait()
        writer.stdin.close()
        writer.stdout.close()
    category, message = caught.value.args
    assert category is FailureCategory.MALFORMED
    assert message.startswith("host sent a reply of over ") and message.endswith(
        " bytes where its request allows at most 100000")


def test_a_whole_line_over_the_bound_is_refused_with_its_size():
    writer = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdout.buffer.write(b'x' * 5000 + b'\\n')"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )
    try:
        writer.wait()
        channel = HostChannel(writer, max_message_bytes=64 << 20)
        with pytest.raises(HostFault) as caught:
            channel.read_line(4999)
    finally:
        writer.stdin.close()
        writer.stdout.close()
    assert caught.value.args[1] == "host sent a reply of 5000 bytes where its request allows at most 4999"


def test_only_a_failure_report_may_be_longer_than_an_answer():
    bound = act_reply_bound(2000, answers=2, legal_actions=6)
    assert bound.ok_bytes < bound.any_bytes == reply_bound(2000).any_bytes
    answer = {"seq": 3, "ok": True, "answers": [0, 1]}
    assert check_reply(answer, 3, "act", bound.ok_bytes, bound.ok_bytes) is answer
    with pytest.raises(HostFault) as caught:
        check_reply(answer, 3, "act for 2 episode(s)", bound.ok_bytes + 1, bound.ok_bytes)
    assert caught.value.args[1] == (f"host sent a reply of {bound.ok_bytes + 1} bytes where its request allows "
                                    f"at most {bound.ok_bytes} while act for 2 episode(s)")
    failure = {"seq": 3, "ok": False, "category": "crash", "message": "x"}
    assert check_reply(failure, 3, "act", bound.any_bytes, bound.ok_bytes) is failure


def test_the_host_leaves_out_only_what_the_parent_would_not_read(monkeypatch):
    """Random dict answers: the entries the host now sends get the verdict
    (the distribution, or the failure and its words) that every entry got
    when it sent them all."""
    import random

    monkeypatch.setattr(sys, "dont_write_bytecode", sys.dont_write_bytecode)  # host_main sets it on import
    from csro_tui.sandbox import host_main
    from csro_tui.sandbox.checks import check_distribution

    answer_types = host_main._AnswerTypes(TYPE_NAME_CHARS)
    rng = random.Random(34)
    legal = [0, 2, 3, 7]
    keys = [0, 1, 2, 3, 4, 7, 9, 10**6, -5, 1 << 70, "x", 2.0, True, None]
    values = [0.0, -0.0, 0.5, 1.0, 0.25, 0, 1, -0.1, float("nan"), float("inf"), "p", None, 1 << 1100]

    def verdict(pairs):
        try:
            return check_distribution(pairs, legal, 1)
        except HostFault as fault:
            return fault.args

    for _ in range(3000):
        answer = {rng.choice(keys): rng.choice(values) for _ in range(rng.randint(1, 8))}
        every_entry = [[answer_types.action_id(k), answer_types.probability(v)] for k, v in answer.items()]
        sent = answer_types.distribution(answer, legal)
        assert verdict(sent) == verdict(every_entry), answer
        assert len(sent) <= len(legal) + 1
