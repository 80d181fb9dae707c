class Policy:
    def __init__(self, player, game):
        self.player = player  # 0 or 1; game["action_names"] is ["1-1", "1-2", ..., "Liar"]

    def act(self, obs):
        sides, liar = obs["dice_sides"], obs["liar"]  # the highest face (sides) is wild
        mine = obs["my_dice"]  # e.g. [3]: your own dice only
        bids = [a for a in obs["legal_actions"] if a != liar]  # every higher bid, lowest first
        for action in bids:
            quantity, face = action // sides + 1, action % sides + 1
            have = sum(1 for die in mine if die == face or die == sides)
            if have >= quantity:
                return action  # the lowest bid your own dice make true
        return liar if liar in obs["legal_actions"] else bids[0]  # call the last bid a lie
