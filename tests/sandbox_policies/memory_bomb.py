"""Allocates without bound in act.

bytes(n) is calloc'ed, so the pages are never touched: without an
address-space limit this would loop until the deadline, with one it fails
fast with MemoryError.  With obs["numpy"], one impossible numpy array.
"""


class Policy:
    def __init__(self, player, game):
        self.blocks = []

    def act(self, obs):
        if obs.get("numpy"):
            import numpy

            return int(numpy.ones(10**11).sum())
        while True:
            self.blocks.append(bytes(64 * 2**20))
