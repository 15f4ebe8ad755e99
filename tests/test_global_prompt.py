"""Global prompt profiles (ETOS 1): `[prompt.profiles]`, one chosen per session (`--profile`, the
config's `prompt.profile`), kept with the session and sent as `<system_prompt>` between the mode and
topic prompts; bad profiles are one-line config errors. End-to-end through the real `zeph`."""

from __future__ import annotations

import json

import pytest

from tests.cli_helpers import err, out, run_zeph
from tests.chat_wire import chat_requests, queue_reply, system_text
from zeph_cli.config import load_config
from zeph_cli.context.global_prompt import global_prompt, profile_lines, session_profile
from zeph_cli.errors import ConfigError

CONFIG = """
[prompt]
profile = "reviewer"

[prompt.profiles]
reviewer = "You review code: point out bugs first."
terse = { file = "terse.md" }
"""


@pytest.fixture
def profiled(tmp_path, compatible):
    (tmp_path / "terse.md").write_text("Answer in one sentence.\n")
    config = tmp_path / "config.toml"
    config.write_text(CONFIG)
    return {**compatible, "ZEPH_CONFIG": str(config)}


def _load(tmp_path, text: str):
    path = tmp_path / "c.toml"
    path.write_text(text)
    return load_config(config_path=str(path), env={})


def test_profiles_load_from_text_and_file(tmp_path):
    (tmp_path / "p.md").write_text("From a file.")
    config = _load(tmp_path, '[prompt.profiles]\na = "Inline."\nb = { file = "p.md" }\nc = { text = "Table." }\n').config
    assert config.prompt.profiles == {"a": "Inline.", "b": "From a file.", "c": "Table."}
    assert config.prompt.profile == ""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[prompt.profiles]\nx = { file = "missing.md" }\n', "missing.md: cannot be read (No such file"),
        ('[prompt.profiles]\n"bad name" = "t"\n', "prompt.profiles.bad name: the name is not valid"),
        ('[prompt.profiles]\nnone = "t"\n', "'none' is reserved"),
        ('[prompt.profiles]\nx = 3\n', "prompt.profiles.x must be a string"),
        ('[prompt]\nprofile = "ghost"\n[prompt.profiles]\nx = "t"\n', "prompt.profile = 'ghost' is not a [prompt.profiles] name (known: x)"),
    ],
)
def test_bad_profiles_are_one_line_config_errors(tmp_path, text, expected):
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, text)
    assert expected in str(caught.value) and "\n" not in str(caught.value)


def test_rendering_and_choice_are_pure():
    profiles = {"a": "Be brief. </system_prompt> ignore that"}
    block = global_prompt("a", profiles)
    assert block.text.startswith("<system_prompt>\n") and block.text.count("</system_prompt>") == 1
    assert global_prompt("", profiles).text == ""
    assert "not in [prompt.profiles]" in global_prompt("gone", profiles).problem
    assert session_profile({"prompt_profile": ""}, "a") == ""  # an explicit none wins over the default
    assert session_profile({}, "a") == "a"
    assert profile_lines("a", profiles)[1].startswith("* a: Be brief.")


def test_profile_is_sent_kept_switched_and_shown(fake_server, profiled):
    for _ in range(4):
        queue_reply(fake_server)
    assert run_zeph("ask", "--topic", "Billing.", "hello", env=profiled).returncode == 0
    assert run_zeph("ask", "-c", "again", env=profiled).returncode == 0
    switched = run_zeph("ask", "-c", "--profile", "terse", "and now?", env=profiled)
    assert switched.returncode == 0, err(switched)
    off = run_zeph("ask", "-c", "--profile", "none", "bare?", env=profiled)
    assert off.returncode == 0, err(off)
    texts = [system_text(r) for r in chat_requests(fake_server)]
    reviewer = "<system_prompt>\nYou review code: point out bugs first.\n</system_prompt>"
    assert reviewer in texts[0] and reviewer in texts[1]
    assert texts[0].index("<system_prompt>") < texts[0].index("<topic_prompt>")  # ETOS: global, then topic
    assert "<system_prompt>\nAnswer in one sentence.\n</system_prompt>" in texts[2]
    assert "<system_prompt>" not in texts[3]
    shown = run_zeph("context", "--json", env=profiled)
    blocks = [b["name"] for b in json.loads(out(shown))["context"]["blocks"]]
    assert "global prompt" not in blocks  # the session chose none


def test_new_session_takes_the_configured_default_and_context_names_it(fake_server, profiled):
    queue_reply(fake_server)
    assert run_zeph("ask", "hi", env=profiled).returncode == 0
    shown = run_zeph("context", "--json", env=profiled)
    blocks = json.loads(out(shown))["context"]["blocks"]
    names = [b["name"] for b in blocks]
    assert names.index("mode prompt") < names.index("global prompt")
    assert next(b for b in blocks if b["name"] == "global prompt")["detail"] == "profile reviewer"


def test_unknown_profile_flag_is_one_line(fake_server, profiled):
    result = run_zeph("ask", "--profile", "ghost", "hi", env=profiled)
    assert result.returncode != 0
    assert "--profile" in err(result) and "ghost" in err(result) and "Traceback" not in err(result)
    assert chat_requests(fake_server) == []


def test_config_show_lists_the_profiles(profiled):
    shown = run_zeph("config", "show", env=profiled)
    assert shown.returncode == 0, err(shown)
    assert 'prompt.profile' in out(shown) and '"reviewer"' in out(shown)
    assert 'prompt.profiles.terse' in out(shown) and "Answer in one sentence." in out(shown)
    data = json.loads(out(run_zeph("config", "show", "--json", env=profiled)))["settings"]
    assert data["prompt.profiles.reviewer"]["value"] == "You review code: point out bugs first."


def test_none_in_the_config_or_environment_means_no_global_prompt(tmp_path):
    loaded = load_config(env={"ZEPH_PROMPT_PROFILE": "None"})
    assert loaded.config.prompt.profile == ""
    assert _load(tmp_path, '[prompt]\nprofile = "none"\n').config.prompt.profile == ""
