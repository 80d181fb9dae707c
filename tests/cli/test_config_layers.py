"""One layering for the run and the LLM client: defaults < csro.toml < environment < flags (issue 28)."""

from __future__ import annotations

import pytest

from csro_tui.config import load_run_config
from csro_tui.engine.setup import oracle_options
from csro_tui.errors import ConfigError
from csro_tui.oracles.llm.backend import make_backend, read_llm_settings
from csro_tui.oracles.options import OptionReader


def client_config(config, env):
    """The LLMConfig the llm oracle's client would be built with for this run configuration."""
    options = OptionReader("llm", oracle_options(config))
    return make_backend(read_llm_settings(options), env=env).config


def write(tmp_path, text):
    path = tmp_path / "csro.toml"
    path.write_text(text)
    return path


def test_an_llm_table_beside_a_run_table_is_used(tmp_path):
    path = write(tmp_path, '[run]\ngame = "kuhn_poker"\noracle = "llm"\n\n'
                           '[llm]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m-file"\ntemperature = 0.2\n'
                           'max_tokens = 900\n')
    config = load_run_config({}, config_file=path, env={})
    assert (config.model, config.base_url) == ("m-file", "http://127.0.0.1:9/v1")
    client = client_config(config, env={})
    assert (client.model, client.base_url, client.temperature, client.max_tokens) == (
        "m-file", "http://127.0.0.1:9/v1", 0.2, 900)
    # Recorded with the session, so a resume builds the same client.
    assert config.to_record()["llm"] == {"temperature": 0.2, "max_tokens": 900}


def test_an_llm_table_alone_is_used_too(tmp_path):
    path = write(tmp_path, '[llm]\nmodel = "m-file"\n')
    assert load_run_config({}, config_file=path, env={}).model == "m-file"


@pytest.mark.parametrize("layer, expected", [
    ("file", ("m-file", "http://127.0.0.1:1/v1", 0.1)),
    ("env", ("m-env", "http://127.0.0.1:2/v1", 0.3)),
    ("flags", ("m-flag", "http://127.0.0.1:3/v1", 0.5)),
])
def test_each_layer_beats_the_one_below_for_the_llm_settings(tmp_path, layer, expected):
    path = write(tmp_path, '[llm]\nmodel = "m-file"\nbase_url = "http://127.0.0.1:1/v1"\ntemperature = 0.1\n')
    env = {}
    flags = {}
    if layer in ("env", "flags"):
        env = {"CSRO_LLM_MODEL": "m-env", "OPENAI_BASE_URL": "http://127.0.0.1:2/v1", "CSRO_LLM_TEMPERATURE": "0.3"}
    if layer == "flags":
        flags = {"model": "m-flag", "base_url": "http://127.0.0.1:3/v1", "oracle_options": {"temperature": 0.5}}
    config = load_run_config(flags, config_file=path, env=env)
    client = client_config(config, env=env)
    assert (client.model, client.base_url, client.temperature) == expected


def test_a_top_level_model_in_the_file_is_below_the_environment(tmp_path):
    path = write(tmp_path, 'model = "m-file"\n')
    assert load_run_config({}, config_file=path, env={"CSRO_LLM_MODEL": "m-env"}).model == "m-env"
    assert load_run_config({}, config_file=path, env={}).model == "m-file"


def test_the_defaults_when_no_layer_says(tmp_path):
    config = load_run_config({}, env={})
    client = client_config(config, env={"OPENAI_API_KEY": "k"})
    assert (client.model, client.base_url, client.temperature) == ("gpt-4o-mini", None, 0.7)


def test_bad_llm_tables_are_one_line_each(tmp_path):
    path = write(tmp_path, '[run]\ngame = "kuhn_poker"\n[llm]\ntemprature = 0.2\n')
    with pytest.raises(ConfigError, match=r"unknown key 'temprature' in \[llm\] \(did you mean temperature\?\)"):
        load_run_config({}, config_file=path, env={})
    path = write(tmp_path, '[llm]\napi_key = "sk-x"\n')
    with pytest.raises(ConfigError, match="api_key is not read from a file") as error:
        load_run_config({}, config_file=path, env={})
    assert "sk-x" not in str(error.value)
    path = write(tmp_path, '[llm]\ntemperature = "hot"\n')
    with pytest.raises(ConfigError, match="temperature must be a number"):
        load_run_config({}, config_file=path, env={})
    path = write(tmp_path, 'model = "a"\n[llm]\nmodel = "b"\n')
    with pytest.raises(ConfigError, match="model is set twice"):
        load_run_config({}, config_file=path, env={})


def test_every_table_beside_run_counts_and_unknown_ones_are_named(tmp_path):
    path = write(tmp_path, '[run]\noracle = "human"\n[oracle_options]\npath = "p.py"\n')
    assert load_run_config({}, config_file=path, env={}).oracle_options == {"path": "p.py"}
    path = write(tmp_path, '[run]\ngame = "kuhn_poker"\n[lm]\nmodel = "x"\n')
    with pytest.raises(ConfigError, match=r"unknown setting 'lm' \(did you mean llm\?\)"):
        load_run_config({}, config_file=path, env={})


def test_tables_are_layered_key_by_key(tmp_path):
    path = write(tmp_path, '[run]\noracle = "llm"\n[oracle_options]\ncandidates = 2\ntop_k = 4\n')
    config = load_run_config({"oracle_options": {"top_k": 6, "temperature": 0.3}}, config_file=path, env={})
    assert config.oracle_options == {"candidates": 2, "top_k": 6, "temperature": 0.3}
