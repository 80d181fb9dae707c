class Policy:
    def __init__(self, player, game):
        self.player = player
        self.counts = [0, 0, 0]  # how often the opponent played Rock, Paper, Scissors

    def act(self, obs):
        if obs["opp_moves"]:
            self.counts[obs["opp_moves"][-1]] += 1  # only the newest move is new
        likely = self.counts.index(max(self.counts))  # the opponent's most frequent move
        return (likely + 1) % 3  # the move that beats it: Paper beats Rock, and so on
