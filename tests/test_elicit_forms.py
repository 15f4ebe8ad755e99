"""A server's form (MCP elicitation) outside the chat app: the checks both front ends apply to the typed
values, and `zeph ask`'s questions on the terminal (read from a real pipe, as from a terminal)."""

from __future__ import annotations

import asyncio
import importlib.util
import io
import json
import os
from pathlib import Path

import pytest

from zeph_cli.frontends.cli.approval_prompt import TerminalApprover
from zeph_cli.frontends.cli.elicit_prompt import TerminalElicitor
from zeph_cli.frontends.form_values import FormError, choice_value, field_hint, field_label, text_value
from zeph_cli.tools.elicitation import ElicitationAnswer, ElicitationField, ElicitationRequest
from tests.cli_helpers import err, out, run_zeph
from tests.mcp_reference import EVERYTHING, needs_node_servers
from tests.scripted_model import CHAT_PATH, ScriptedModel

ASKS_FORMS = importlib.util.find_spec("zeph_cli.features.mcp.elicit") is not None

NAME = ElicitationField("name", "string", title="Name", required=True, min_length=2, max_length=5)
AGE = ElicitationField("age", "integer", minimum=1, maximum=100)
RATIO = ElicitationField("ratio", "number", title="Ratio", maximum=1)


@pytest.mark.parametrize(("field", "typed", "value"), [
    (NAME, "Ada", "Ada"),
    (AGE, " 42 ", 42),
    (AGE, "", None),  # not required: left out
    (RATIO, "0.25", 0.25),
    (ElicitationField("when", "string", format="date"), "2026-11-28", "2026-11-28"),
    (ElicitationField("at", "string", format="date-time"), "2026-11-28T22:45:00Z", "2026-11-28T22:45:00Z"),
    (ElicitationField("mail", "string", format="email"), "ada@example.org", "ada@example.org"),
    (ElicitationField("site", "string", format="uri"), "https://example.org/x", "https://example.org/x"),
])
def test_typed_values_the_fields_take(field, typed, value):
    assert text_value(field, typed) == value


@pytest.mark.parametrize(("field", "typed", "error"), [
    (NAME, "", "Name is required"),
    (NAME, "A", "Name takes at least 2 characters"),
    (NAME, "Adelaide", "Name takes at most 5 characters"),
    (AGE, "4.5", "age takes a whole number"),
    (AGE, "0", "age is at least 1"),
    (AGE, "101", "age is at most 100"),
    (RATIO, "nan", "Ratio takes a number"),
    (RATIO, "1.5", "Ratio is at most 1"),
    (ElicitationField("when", "string", format="date"), "28/11/2026", "when takes a date (YYYY-MM-DD)"),
    (ElicitationField("mail", "string", format="email"), "ada", "mail takes an email address"),
    (ElicitationField("site", "string", format="uri"), "example", "site takes a URI"),
])
def test_typed_values_the_fields_refuse_in_one_line(field, typed, error):
    with pytest.raises(FormError) as refused:
        text_value(field, typed)
    assert str(refused.value).startswith(error) and "\n" not in str(refused.value)


def test_choices_labels_and_hints():
    pet = ElicitationField("pet", "enum", choices=("cat", "dog"), required=True)
    assert choice_value(pet, "dog") == "dog"
    with pytest.raises(FormError, match="pet is required: pick one"):
        choice_value(pet, None)
    with pytest.raises(FormError, match="pet takes one of: cat, dog"):
        choice_value(pet, "cow")
    assert field_label(NAME) == "Name (name) *" and field_label(AGE) == "age"
    assert field_hint(AGE) == "integer, 1–100" and field_hint(NAME) == "2–5 characters"


# ---- on the terminal (zeph ask) ------------------------------------------------------------------


FORM = ElicitationRequest("everything", "Please provide inputs\x1b[2J for the following fields:", (
    NAME,
    ElicitationField("check", "boolean", title="Agree", description="Agree to the terms"),
    AGE,
    ElicitationField("hero", "enum", title="Hero", choices=("hero-1", "hero-2"), choice_titles=("Superman", "Green Lantern"),
                     default="hero-1"),
))


async def ask_on_terminal(request: ElicitationRequest, typed: str, *, close: bool = True) -> tuple[ElicitationAnswer, str]:
    """Ask `request` on a terminal whose input is `typed` (then the end of input, with `close`)."""
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    out = io.StringIO()
    os.write(write_end, typed.encode())
    if close:
        os.close(write_end)
    try:
        answer = await asyncio.wait_for(TerminalElicitor(TerminalApprover(read_end, out))(request), timeout=30)
    finally:
        os.close(read_end)
        if not close:
            os.close(write_end)
    return answer, out.getvalue()


async def test_zeph_ask_asks_a_form_field_by_field_and_asks_again_after_a_wrong_answer():
    answer, shown = await ask_on_terminal(FORM, "y\n\nA\nAda\ny\n500\n7\n2\n")
    assert answer == ElicitationAnswer("accept", {"name": "Ada", "check": True, "age": 7, "hero": "hero-2"})
    assert "MCP server everything asks you:\n  Please provide inputs?[2J for the following fields:" in shown  # no escapes
    assert "Answer? [y]es / [d]ecline / [C]ancel: " in shown
    assert shown.count("Name (name) * (2–5 characters): ") == 3  # empty, too short, then right
    assert "  Name is required\n" in shown and "  Name takes at least 2 characters\n" in shown
    assert "  age is at most 100\n" in shown
    assert "    1) Superman\n    2) Green Lantern\n" in shown and "Hero (hero) (number or value) [Superman]: " in shown


async def test_zeph_ask_takes_defaults_on_enter_and_declines_or_cancels():
    short = ElicitationRequest("s", "Pick", (FORM.fields[1], FORM.fields[3]))
    assert (await ask_on_terminal(short, "yes\n\n\n"))[0] == ElicitationAnswer("accept", {"check": False, "hero": "hero-1"})
    assert (await ask_on_terminal(FORM, "d\n"))[0] == ElicitationAnswer("decline")
    assert (await ask_on_terminal(FORM, "\n"))[0] == ElicitationAnswer("cancel")  # enter: the default, cancel
    assert (await ask_on_terminal(FORM, "y\nAda\n"))[0] == ElicitationAnswer("cancel")  # the input ended mid-form


# ---- zeph ask off a terminal ----------------------------------------------------------------------


@needs_node_servers
@pytest.mark.skipif(not ASKS_FORMS, reason="needs the MCP connection's elicitation (features/mcp/elicit.py)")
def test_zeph_ask_off_a_terminal_declines_a_servers_form(fake_server, compatible, tmp_path):
    config = tmp_path / "mcp.toml"
    config.write_text(f'[[mcp.servers]]\nid = "everything"\ncommand = {json.dumps(str(EVERYTHING))}\ntrusted = true\n')
    model = ScriptedModel()
    fake_server.respond_with(model)
    model.call(("c1", "everything__trigger-elicitation-request", {}))
    model.say("Noted.")
    result = run_zeph("ask", "ask me for my details", env={**compatible, "ZEPH_CONFIG": str(config)})
    assert result.returncode == 0, err(result)
    assert out(result) == "Noted.\n"
    sent = fake_server.requests_to(CHAT_PATH)[-1].json["messages"]
    assert "User declined to provide the requested information" in sent[-1]["content"]  # the tool's result


STDIO_FAKE = Path(__file__).parent / "fakes" / "mcp_stdio.py"  # the small SDK server


@pytest.mark.skipif(not STDIO_FAKE.exists() or not ASKS_FORMS, reason="needs tests/fakes/mcp_stdio.py and server logs")
def test_zeph_ask_prints_what_a_server_warned_of_during_the_turn(fake_server, compatible, tmp_path):
    import sys

    config = tmp_path / "mcp.toml"
    config.write_text(f'[[mcp.servers]]\nid = "fake"\ncommand = {json.dumps(sys.executable)}\n'
                      f'args = [{json.dumps(str(STDIO_FAKE))}]\ntrusted = true\n')
    model = ScriptedModel()
    fake_server.respond_with(model)
    model.call(("c1", "fake__log", {"levels": ["info", "error"]}))
    model.say("Logged.")
    result = run_zeph("ask", "log some", env={**compatible, "ZEPH_CONFIG": str(config)})
    assert result.returncode == 0, err(result)
    assert "zeph: warning: MCP server fake error: fake: a error message\n" in err(result)
    assert "info message" not in err(result)  # below the server's log_level (warning)
