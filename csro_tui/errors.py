"""User-facing errors: each carries a one-line message for the CLI or the UI."""

from __future__ import annotations


class CsroError(Exception):
    """Base for every error that should reach the user as one clear line."""

    # True for a name that is none of the known ones (a typo, usually; the
    # message has its "did you mean" and the list): the CLI adds a pointer to
    # the command's --help.
    unknown_name = False
    # True when trying the same again at once fails the same way (no server at the address,
    # a refused key): the engine stops the run instead of spending more oracle attempts on it.
    persistent = False


class UnknownGameError(CsroError):
    """A game name or OpenSpiel game string that cannot be used."""


class ConfigError(CsroError):
    """A bad flag, config file or environment value."""


class UnknownGameName(UnknownGameError):
    """A game name that is neither built in nor registered in OpenSpiel."""

    unknown_name = True


class UnknownName(ConfigError):
    """An oracle, meta-solver, seed policy or benchmark bot name that does not exist."""

    unknown_name = True


class SessionError(CsroError):
    """A session that is missing, corrupt or not a session at all."""


class NoUsableProposal(CsroError):
    """An oracle spent its budget and had no policy to propose (its candidates
    all failed). Ends the iteration, not the run: the next iteration's oracle
    sees a new context and may do better.

    `failed`, when set, is the oracle's last failed code as a `records.Proposal`
    (with `failure` saying why): the engine sends it to review instead, so a
    person sees the code and may fix it."""

    def __init__(self, message: str, failed: object | None = None) -> None:
        super().__init__(message)
        self.failed = failed


class EvaluationInterrupted(Exception):
    """Raised by an evaluation's progress callback to abandon it (a stop request).

    Every path of `evaluate_matchups` reports progress as it plays and ends
    its hosts and workers on the way out; nothing of the batch is kept.
    """
