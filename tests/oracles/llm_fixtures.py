"""Shared by the LLM oracle tests: fixture replies (test text, not model output), oracle
options and a client for the scripted server (tests/llm_server.py), and a toy-game context."""

from __future__ import annotations

from csro_tui.engine.gate import Gate, GateSettings
from csro_tui.oracles.base import OracleContext
from csro_tui.oracles.llm.client import LLMClient, LLMConfig
from csro_tui.records import PolicyRecord
from tests.fakes import ToyEvaluator, ToySpec, toy_policy
from tests.llm_server import ScriptedLLMServer


def code_reply(value: float, *, note: str = "Plan in one line.", extra: str = "") -> str:
    """A fixture reply: a sentence, then a toy policy in a python fence."""
    return f"{note}\n\n```python\n{toy_policy(value, extra=extra)}```\n"


def options(server: ScriptedLLMServer, **extra) -> dict:
    return {"base_url": server.base_url, "model": "scripted-model", "max_retries": 0, "timeout": 5.0, **extra}


def client(base_url: str, **overrides) -> LLMClient:
    """A client whose backoff waits are skipped."""
    settings = {"model": "scripted-model", "base_url": base_url, "timeout": 5.0, "max_retries": 2, **overrides}
    return LLMClient(LLMConfig(**settings), retry_base_delay=0.01, sleep=lambda seconds: None)


def toy_context(population=None, weights=None, rejections=(), iteration=1, seed=0) -> OracleContext:
    """A context whose preview is the engine's gate over the toy game."""
    population = population or [PolicyRecord("p0", "zero", toy_policy(0.0), "seed")]
    weights = weights or [1.0 / len(population)] * len(population)
    by_id = {m.id: w for m, w in zip(population, weights)}
    gate = Gate(ToyEvaluator(), GateSettings())
    return OracleContext(
        spec=ToySpec(),
        iteration=iteration,
        population=list(population),
        meta_strategy=list(weights),
        rejections=list(rejections),
        preview=lambda source: gate.check(source, population, by_id, key=f"test-{iteration}"),
        seed=seed,
    )


def user_message(request: dict) -> str:
    return request["messages"][-1]["content"]
