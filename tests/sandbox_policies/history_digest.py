"""Checks the lists it receives against digests computed by the test.

Returns 1 when every list matches obs["expect"][key], else 0; then mutates
its copies, which must not corrupt later reconstructions.
"""


def digest(value):
    text = repr(value)
    h = 0
    for ch in text:
        h = (h * 131 + ord(ch)) % 1000000007
    return h


class Policy:
    def __init__(self, player, game):
        pass

    def act(self, obs):
        expect = obs["expect"]
        ok = all(digest(obs.get(key)) == value for key, value in expect.items())
        for value in obs.values():
            if isinstance(value, list) and value is not obs["legal_actions"]:
                value.append("junk")
                value.reverse()
        return 1 if ok else 0
