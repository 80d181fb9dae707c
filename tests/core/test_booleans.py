"""Yes and no typed as text mean the same to every reader of settings
(csro_tui/booleans.py): the run's configuration, an oracle's options and the
LLM client's settings take the same words and refuse the same others."""

import pytest

from csro_tui.booleans import parse_boolean
from csro_tui.config import load_run_config
from csro_tui.errors import ConfigError
from csro_tui.oracles.llm.client import LLMConfig
from csro_tui.oracles.options import OptionReader

SAID = [("1", True), ("TRUE", True), (" yes ", True), ("On", True),
        ("0", False), ("false", False), ("NO", False), ("off ", False), (True, True), (False, False)]


@pytest.fixture
def no_config_file(tmp_path, monkeypatch):
    """No csro.toml in the working directory to layer under the flags."""
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("said, meant", SAID)
def test_every_reader_takes_the_same_words(no_config_file, said, meant):
    assert parse_boolean(said) is meant
    assert load_run_config({"preview_benchmark": said}, env={}).preview_benchmark is meant
    assert OptionReader("zero-shot", {"flag": said}).boolean("flag", not meant) is meant
    assert LLMConfig.from_sources(flags={"stream": said}, env={}).stream is meant


@pytest.mark.parametrize("said", ["", "maybe", "2", "yess", "nope"])
def test_every_reader_refuses_other_words_in_one_line(no_config_file, said):
    assert parse_boolean(said) is None
    for read in (lambda: load_run_config({"preview_benchmark": said}, env={}),
                 lambda: OptionReader("zero-shot", {"flag": said}).boolean("flag", True),
                 lambda: LLMConfig.from_sources(flags={"stream": said}, env={})):
        with pytest.raises(ConfigError, match="true or false"):
            read()


def test_only_the_llm_client_refuses_a_number_for_a_switch(no_config_file):
    """A TOML number: the run and an oracle read 1 as "1" (as before), the LLM
    client's settings accept only text or a bool there (as before)."""
    assert load_run_config({"preview_benchmark": 0}, env={}).preview_benchmark is False
    assert OptionReader("zero-shot", {"flag": 1}).boolean("flag", False) is True
    with pytest.raises(ConfigError, match="true or false"):
        LLMConfig.from_sources(flags={"stream": 1}, env={})
