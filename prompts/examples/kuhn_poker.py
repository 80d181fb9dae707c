class Policy:
    def __init__(self, player, game):
        self.player = player  # 0 or 1; game["action_names"] is ["Pass", "Bet"]

    def act(self, obs):
        card = obs["card"]  # "J", "Q" or "K"
        facing_bet = obs["to_call"] > 0
        if card == "K":
            return 1  # Bet, or Call when facing a bet
        if card == "J" and not facing_bet:
            return {0: 0.7, 1: 0.3}  # a distribution: mostly check, sometimes bluff
        return 0  # Pass: check, or fold when facing a bet
