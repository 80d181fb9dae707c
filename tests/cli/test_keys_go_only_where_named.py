"""Issue 35: an API key goes only to a base URL (and from a variable) the user named.

A crafted `csro.toml`, `--config` file or recorded session may say where
requests go and which variable is the key; none of them may send a key on its
own.  Each case runs `csro run` against a scripted server on 127.0.0.1 that
expects the secret: `authorized` on a request means the secret arrived.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from csro_tui.cli import main
from csro_tui.sessions.store import EVENTS_FILE
from tests.llm_server import ScriptedLLMServer

SECRET = "sk-issue35-do-not-send"
ALWAYS_PAPER = '''Always paper.

```python
class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return 1
```
'''
RUN_FLAGS = ["--game", "rrps(num_repetitions=50)", "--oracle", "llm", "--seeds", "constant_rock",
             "--benchmark", "off", "--episodes", "2", "--smoke-episodes", "1", "--model", "scripted-model",
             "--oracle-option", "max_retries=0"]


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A clean user environment: the secret in OPENAI_API_KEY and STOLEN_SECRET, no base URL, an empty ~/.config."""
    for name in ("OPENAI_BASE_URL", "CSRO_LLM_BASE_URL", "CSRO_BASE_URL", "CSRO_CONFIG", "CSRO_LLM_API_KEY",
                 "CSRO_SESSIONS_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("STOLEN_SECRET", SECRET)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    work = tmp_path / "checkout"
    work.mkdir()
    monkeypatch.chdir(work)
    return tmp_path


@pytest.fixture
def server():
    with ScriptedLLMServer(api_key=SECRET) as scripted:
        yield scripted


def secret_arrived(server: ScriptedLLMServer) -> bool:
    return any(request.authorized for request in server.requests)


def run(*extra: str) -> int:
    return main(["run", *RUN_FLAGS, "--iterations", "1", *extra])


CRAFTED_FILES = {
    "top-level base_url": 'base_url = "{url}"\n',
    "[llm] base_url": '[llm]\nbase_url = "{url}"\n',
    "[oracle_options] base_url": '[oracle_options]\nbase_url = "{url}"\n',
    "[oracle_options] llm_file_settings": '[oracle_options]\nllm_file_settings = {{ base_url = "{url}" }}\n',
    "a [trust] table of its own": '[trust]\nbase_urls = ["{url}"]\nbase_url = "{url}"\n',
}


@pytest.mark.parametrize("case", sorted(CRAFTED_FILES))
def test_a_csro_toml_cannot_send_the_key_to_its_base_url(home, server, capsys, case):
    Path("csro.toml").write_text(CRAFTED_FILES[case].format(url=server.base_url))
    assert run() == 2
    err = capsys.readouterr().err
    assert not secret_arrived(server)
    assert SECRET not in err and len(err.strip().splitlines()) == 1, err
    if "trust" not in case:
        assert f"not sending OPENAI_API_KEY to 127.0.0.1:{server.port}" in err and "--trust-base-url" in err, err


def test_a_config_file_named_with_dash_dash_config_is_a_file_too(home, server, capsys):
    (home / "shared.toml").write_text(f'base_url = "{server.base_url}"\n')
    assert run("--config", str(home / "shared.toml")) == 2
    assert not secret_arrived(server)
    assert "not sending OPENAI_API_KEY" in capsys.readouterr().err


def test_a_file_cannot_choose_which_variable_is_sent(home, server, capsys):
    # Even to the URL the user named: the file chose the variable.
    Path("csro.toml").write_text('[oracle_options]\napi_key_env = "STOLEN_SECRET"\n')
    assert run("--base-url", server.base_url) == 2
    assert not secret_arrived(server)
    err = capsys.readouterr().err
    assert f"not sending STOLEN_SECRET to 127.0.0.1:{server.port}" in err and "--api-key-env STOLEN_SECRET" in err and "--trust-base-url" in err


def test_the_key_goes_to_a_url_named_on_the_command_line(home, server, capsys):
    Path("csro.toml").write_text('base_url = "http://127.0.0.1:9/v1"\n')
    server.script(ALWAYS_PAPER)
    assert run("--base-url", server.base_url, "--session-dir", str(home / "s")) == 0, capsys.readouterr().err
    assert server.chat_requests and all(r.authorized for r in server.requests)


def test_the_key_goes_to_a_url_from_the_environment(home, server, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    server.script(ALWAYS_PAPER)
    assert run("--session-dir", str(home / "s")) == 0, capsys.readouterr().err
    assert server.chat_requests and secret_arrived(server)


def test_trust_base_url_confirms_the_files_settings(home, server, capsys):
    Path("csro.toml").write_text(f'base_url = "{server.base_url}"\n[oracle_options]\napi_key_env = "STOLEN_SECRET"\n')
    server.script(ALWAYS_PAPER)
    assert run("--trust-base-url", "--session-dir", str(home / "s")) == 0, capsys.readouterr().err
    assert server.chat_requests and secret_arrived(server)


def test_a_trust_in_the_users_own_config_counts(home, server, capsys):
    user = home / "xdg" / "csro"
    user.mkdir(parents=True)
    (user / "config.toml").write_text(f'[trust]\nbase_urls = ["{server.base_url}/"]\napi_key_envs = ["STOLEN_SECRET"]\n')
    Path("csro.toml").write_text(f'base_url = "{server.base_url}"\n[oracle_options]\napi_key_env = "STOLEN_SECRET"\n')
    server.script(ALWAYS_PAPER)
    assert run("--session-dir", str(home / "s")) == 0, capsys.readouterr().err
    assert server.chat_requests and secret_arrived(server)


def test_a_base_url_in_the_users_own_config_is_the_users(home, server, capsys):
    user = home / "xdg" / "csro"
    user.mkdir(parents=True)
    (user / "config.toml").write_text(f'base_url = "{server.base_url}"\n')
    server.script(ALWAYS_PAPER)
    assert run("--session-dir", str(home / "s")) == 0, capsys.readouterr().err
    assert server.chat_requests and secret_arrived(server)


def test_resuming_a_received_session_does_not_send_the_key_to_its_url(home, server, capsys):
    server.script(ALWAYS_PAPER)
    sender = home / "sender"
    assert run("--base-url", server.base_url, "--session-dir", str(sender)) == 0, capsys.readouterr().err
    (session,) = [p for p in sender.iterdir() if (p / EVENTS_FILE).exists()]
    received = home / "received"
    shutil.copytree(session, received / session.name)
    before = len(server.requests)

    code = main(["run", "--resume", session.name, "--iterations", "2", "--session-dir", str(received)])
    err = capsys.readouterr().err
    assert code == 2 and f"not sending OPENAI_API_KEY to 127.0.0.1:{server.port}" in err, err
    assert len(server.requests) == before

    server.script(ALWAYS_PAPER)
    code = main(["run", "--resume", session.name, "--iterations", "2", "--session-dir", str(received),
                 "--trust-base-url"])
    assert code == 0, capsys.readouterr().err
    assert len(server.requests) > before and all(r.authorized for r in server.requests[before:])


def test_an_llm_error_names_the_host_and_the_variable(home, server, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-key")
    assert run("--base-url", server.base_url, "--session-dir", str(home / "s")) != 0
    output = capsys.readouterr()
    assert f"authentication failed (401) at 127.0.0.1:{server.port}: check OPENAI_API_KEY" in output.out + output.err


def test_a_sweep_file_cannot_send_the_key_to_its_base_url(home, server, capsys):
    sweep = home / "sweep.toml"
    sweep.write_text(f'name = "received"\niterations = 1\nseeds = [1]\n[options]\ngame = "rrps(num_repetitions=50)"\n'
                     f'oracle = "llm"\nseed_policies = ["constant_rock"]\nbenchmark = "off"\nepisodes = 2\n'
                     f'smoke_episodes = 1\nmodel = "scripted-model"\nbase_url = "{server.base_url}"\n')
    code = main(["sweep", str(sweep), "--sessions-dir", str(home / "s"), "--workers", "1"])
    output = capsys.readouterr()
    assert code != 0 and "not sending OPENAI_API_KEY" in output.out + output.err, output
    assert not secret_arrived(server)


def test_every_llm_error_names_the_host_and_where_the_key_came_from(home, monkeypatch):
    from csro_tui.oracles.llm.client import LLMClient, LLMConfig, LLMError
    from csro_tui.oracles.llm.keys import KeyTrust
    from tests.llm_server import closed_port_url

    url = closed_port_url()
    host = url.split("//", 1)[1].split("/", 1)[0]
    messages = [{"role": "user", "content": "hi"}]
    sent = LLMClient(LLMConfig(base_url=url, max_retries=0), key_trust=KeyTrust(confirmed=True))
    with pytest.raises(LLMError) as refused:
        sent.complete(messages, purpose="test")
    assert f"{host}/v1 refused the connection" in str(refused.value)
    assert str(refused.value).endswith("(key from OPENAI_API_KEY)") and SECRET not in str(refused.value)
    monkeypatch.delenv("OPENAI_API_KEY")
    unsent = LLMClient(LLMConfig(base_url=url, max_retries=0))
    with pytest.raises(LLMError) as refused:
        unsent.complete(messages, purpose="test")
    assert str(refused.value).endswith("(no key sent; it would come from OPENAI_API_KEY)")
