"""The oracle contract says what an oracle needs from a run and which LLM it calls.

The registry's entries say it (a model, a policy file, nothing; whether it reads
rejection reasons) and an LLM oracle declares its client and calls per proposal
(`Oracle.llm`, read by `oracle_llm`), so the TUI neither guesses from a name
prefix nor probes an oracle's attributes.
"""

from __future__ import annotations

import pytest

from csro_tui.oracles.base import LLMUse, oracle_llm
from csro_tui.oracles.registry import ORACLES, make_oracle, oracles_needing, reads_rejection_reasons

# A model and a server that are never called: making an oracle does not call it.
MODEL = {"model": "any-model", "base_url": "http://127.0.0.1:9/v1"}


def test_the_registry_says_what_each_oracle_needs():
    assert oracles_needing("model") == ["llm", "llm-refine", "llm-evolve"]
    assert oracles_needing("file") == ["human"]
    assert oracles_needing("nothing") == ["best-response", "seed", "evolve"]
    assert sorted(oracles_needing("model") + oracles_needing("file") + oracles_needing("nothing")) == sorted(ORACLES)


def test_only_the_llm_oracles_read_rejection_reasons():
    assert [name for name in ORACLES if reads_rejection_reasons(name)] == oracles_needing("model")
    assert not reads_rejection_reasons("not-an-oracle")


@pytest.mark.parametrize("name", ["llm", "llm-refine", "llm-evolve"])
def test_an_oracle_that_needs_a_model_declares_its_client_and_budget(name, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    oracle = make_oracle(name, {**MODEL, "budget": 5})
    use = oracle_llm(oracle)
    assert isinstance(use, LLMUse)
    assert callable(use.client.complete) and use.budget == 5


@pytest.mark.parametrize("name", ["best-response", "seed", "evolve"])
def test_an_oracle_that_needs_nothing_declares_no_llm(name):
    assert oracle_llm(make_oracle(name, MODEL if name == "evolve" else {})) is None


def test_an_oracle_without_the_optional_declaration_calls_no_llm():
    class Scripted:
        name = "scripted"
        backend = object()  # an attribute named like a client is not a declaration

        def propose(self, context):
            raise AssertionError("not called")

    assert oracle_llm(Scripted()) is None


def test_the_reject_screen_says_who_reads_the_reason():
    pytest.importorskip("textual")
    from csro_tui.tui.screens.reject import reason_note

    assert "next prompt" in reason_note("llm-evolve")
    assert "does not read reasons" in reason_note("evolve")
