class Policy:
    def __init__(self, player, game):
        self.player = player  # 0 or 1; game["action_names"] is ["Fold", "Call", "Raise"]

    def act(self, obs):
        legal = obs["legal_actions"]  # Fold (0) is only legal when facing a bet
        card = obs["card"]  # "J", "Q" or "K"
        pair = obs["public_card"] is not None and obs["public_card"] == card
        if (pair or card == "K") and 2 in legal:
            return 2  # Raise with a strong hand
        if obs["to_call"] > 0 and card == "J" and not pair:
            return 0  # Fold a weak hand to a bet
        return 1  # Call (or check)
