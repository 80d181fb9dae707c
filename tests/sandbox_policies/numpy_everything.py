"""Valid: every allowed module in use, numpy's submodules included, with memory
grown and freed (what scripts/host_syscalls.py measures the seccomp allow-list on)."""
import bisect, collections, dataclasses, functools, heapq, itertools, math, random, re, statistics, typing
import numpy as np


@dataclasses.dataclass
class Memo:
    seen: list = dataclasses.field(default_factory=list)


class Policy:
    def __init__(self, player, game):
        self.rng = np.random.default_rng(game["seed"])
        self.py = random.Random(game["seed"])
        self.memo = Memo()
        self.big = None

    def act(self, obs):
        legal = obs["legal_actions"]
        a = self.rng.standard_normal((64, 64))
        np.linalg.solve(a + 64 * np.eye(64), np.ones(64))
        np.linalg.eig(a[:16, :16]); np.linalg.svd(a[:16, :16]); np.linalg.lstsq(a, np.ones(64), rcond=None)
        np.linalg.inv(a + 64 * np.eye(64)); np.linalg.cholesky(a @ a.T + np.eye(64))
        np.fft.fft(a[0]); np.fft.rfft2(a)
        np.polynomial.polynomial.polyfit(np.arange(10.0), np.arange(10.0) ** 2, 2)
        np.einsum("ij,jk->ik", a, a); np.sort(a, axis=None); np.argsort(a[0])
        np.unique(legal); np.union1d(legal, legal); np.setdiff1d(legal, legal[:1])  # these import numpy.ma
        self.rng.choice(len(legal), p=np.ones(len(legal)) / len(legal)); self.rng.integers(0, 10, 100)
        np.random.RandomState(1).rand(3); np.random.Generator(np.random.PCG64(1)).random(3)
        self.big = np.zeros(8_000_000) if self.big is None else None  # 64 MB, freed next call
        np.exp(np.clip(a, -5, 5)).sum(); np.argmax(a, axis=1); np.cumsum(a); np.histogram(a, bins=10)
        statistics.mean([1, 2, 3]); statistics.pstdev([1.0, 2.0]); re.findall(r"(\d+)", "a1b22")
        heapq.nlargest(2, [3, 1, 2]); bisect.insort(self.memo.seen, self.py.random())
        collections.Counter(legal).most_common(1); list(itertools.permutations(legal, 2))
        functools.reduce(lambda x, y: x + y, legal); typing.cast(int, 1); math.lgamma(3.5)
        print("thinking", legal, file=None)
        try:
            {}["missing"]
        except KeyError:
            pass
        return legal[int(self.rng.integers(len(legal)))]
