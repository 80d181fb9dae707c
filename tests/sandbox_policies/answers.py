"""Returns whatever kind of answer obs["kind"] asks for (good and bad)."""


class Policy:
    def __init__(self, player, game):
        pass

    def act(self, obs):
        kind = obs["kind"]
        legal = obs["legal_actions"]
        if kind == "illegal":
            return 99
        if kind == "illegal_dist":
            return {legal[0]: 0.5, 99: 0.5}
        if kind == "zero_on_illegal":
            return {legal[0]: 0.25, legal[1]: 0.75, 99: 0.0}
        if kind == "nan":
            return {legal[0]: float("nan"), legal[1]: 1.0}
        if kind == "negative":
            return {legal[0]: -0.5, legal[1]: 1.5}
        if kind == "bad_sum":
            return {legal[0]: 0.5, legal[1]: 0.4}
        if kind == "unnormalised":
            return {legal[0]: 0.3333333, legal[1]: 0.6666667}
        if kind == "string":
            return "rock"
        if kind == "float":
            return 1.0
        if kind == "bool":
            return True
        if kind == "none":
            return None
        if kind == "string_key":
            return {str(legal[0]): 1.0}
        if kind == "empty_dist":
            return {}
        return legal[-1]
