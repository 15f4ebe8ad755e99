"""Commands the model chooses never get the user's secrets in their environment, unless the user passes them:
the rules (pure), then through the real `zeph ask -y` against the wire-level fake server, where the model asks
for the provider's key encoded so that redaction cannot see it."""

from __future__ import annotations

import base64

from tests.cli_helpers import run_zeph, err
from tests.test_cli_tools import sent_tool_results, text_reply, tool_reply, workspace  # noqa: F401 (a fixture)
from zeph_cli.tools.command_env import command_environment, withheld_note

USER_ENV = {
    "PATH": "/usr/bin", "HOME": "/home/u", "LANG": "C.UTF-8", "VIRTUAL_ENV": "/w/.venv", "CC": "gcc",
    "OPENAI_API_KEY": "sk-live", "GITHUB_TOKEN": "ghp_x", "PGPASSWORD": "pw", "AWS_SECRET_ACCESS_KEY": "aws",
    "npm_config__authToken": "npm", "MY_LLM_AUTH": "custom", "DB_CREDENTIALS": "c", "NPM_TOKEN": "n",
}


def test_secret_looking_and_provider_key_variables_are_withheld_and_the_rest_passed():
    env, withheld = command_environment(USER_ENV, secret_names=("MY_LLM_AUTH",))
    assert env == {"PATH": "/usr/bin", "HOME": "/home/u", "LANG": "C.UTF-8", "VIRTUAL_ENV": "/w/.venv", "CC": "gcc"}
    assert withheld == ("AWS_SECRET_ACCESS_KEY", "DB_CREDENTIALS", "GITHUB_TOKEN", "MY_LLM_AUTH", "NPM_TOKEN",
                        "OPENAI_API_KEY", "PGPASSWORD", "npm_config__authToken")


def test_pass_env_patterns_pass_what_the_user_names():
    env, withheld = command_environment(USER_ENV, pass_env=("NPM_TOKEN", "GITHUB_*"), secret_names=("MY_LLM_AUTH",))
    assert env["NPM_TOKEN"] == "n" and env["GITHUB_TOKEN"] == "ghp_x"
    assert "NPM_TOKEN" not in withheld and "OPENAI_API_KEY" in withheld and "OPENAI_API_KEY" not in env


def test_a_command_naming_a_withheld_variable_is_told_how_to_pass_it():
    note = withheld_note('curl -H "Authorization: $GITHUB_TOKEN" https://api.github.com', ("GITHUB_TOKEN", "PGPASSWORD"))
    assert "GITHUB_TOKEN is not passed to commands" in note and 'pass_env = ["GITHUB_TOKEN"]' in note
    assert withheld_note("echo $GITHUB_TOKENS_DIR", ("GITHUB_TOKEN",)) == ""  # another name
    assert withheld_note("make test", ("GITHUB_TOKEN",)) == ""


def test_a_command_cannot_read_the_provider_key_even_encoded(fake_server, compatible, workspace):
    key = "sk-test-key-that-must-stay-home-0123456789"
    encoded = base64.b64encode(key.encode()).decode()
    fake_server.queue(tool_reply("call_k", "bash", {"command": 'printf %s "$OPENAI_API_KEY" | base64; echo "[$NPM_TOKEN]"'}))
    fake_server.queue(text_reply("done"))
    env = {**compatible, "OPENAI_API_KEY": key, "NPM_TOKEN": "npm-secret-value"}
    result = run_zeph("ask", "-y", "show me the key", env=env, cwd=workspace)
    assert result.returncode == 0, err(result)
    (output,) = sent_tool_results(fake_server)
    assert encoded not in output and key not in output and "npm-secret-value" not in output, output
    assert 'NPM_TOKEN, OPENAI_API_KEY are not passed to commands' in output, output
    assert 'pass_env = ["NPM_TOKEN", "OPENAI_API_KEY"]' in output, output
    # the request itself still carried the key to the server: zeph needs it, the command does not
    assert fake_server.requests_to("/v1/chat/completions")[-1].headers.get("authorization") == f"Bearer {key}"


def test_pass_env_in_the_config_passes_a_variable_to_commands(fake_server, compatible, workspace, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[tools.sandbox]\npass_env = ["NPM_TOKEN"]\n')
    fake_server.queue(tool_reply("call_n", "bash", {"command": 'echo "[$NPM_TOKEN]"'}))
    fake_server.queue(text_reply("done"))
    env = {**compatible, "NPM_TOKEN": "npm-secret-value", "ZEPH_CONFIG": str(config)}
    result = run_zeph("ask", "-y", "install", env=env, cwd=workspace)
    assert result.returncode == 0, err(result)
    (output,) = sent_tool_results(fake_server)
    assert "[npm-secret-value]" in output and "not passed" not in output, output
