"""The budget holds with the code index: at context budgets from 2,000 to 128,000 tokens, a `zeph ask` in an
indexed project whose map and retrievable code are larger than any of them leaves room for (and a session
whose history is as large) sends every request within the budget as the server counts it; `<repo_map>`
never takes more than 1,024 tokens nor its share of the budget, `<code_context>` never more than its slot.

Through the real `zeph` against the fake OpenAI-compatible server, which counts each request's prompt
tokens as a server does (every message, the tool schemas, the chat template) and reports them as usage;
zeph's own report of each request comes from the debug dump, and from `zeph context --json`."""

from __future__ import annotations

import json
import random
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.cli_helpers import err, out, run_zeph
from tests.fakes.openai_usage import count_prompt, text_reply, tool_call_reply
from tests.scripted_model import CHAT_PATH, ScriptedModel
from zeph_cli.features.code_index.blocks import REPO_MAP_SHARE
from zeph_cli.tokens import default_counter

pytestmark = pytest.mark.xdist_group("code_index_budget")  # one worker runs the module (--dist loadgroup)

CHECKOUT = Path(__file__).resolve().parents[1]
BUDGETS = [128_000, 32_000, 16_000, 8_000, 4_000, 3_000, 2_000]  # from the largest: the history is compacted at the small ones
REPO_MAP_TOKENS = 1024  # [index] repo_map_tokens' default
ENV = {"ZEPH_MEMORY_EMBEDDER": "wordllama"}  # recall's vectors in a fraction of a second (the index has none: --no-embed)
MESSAGE = "How do we validate an invoice and compute its total before export? Check each invoice field and the tax."
SEARCHED = "compute the invoice total"

NOUNS = ["invoice", "customer", "order", "payment", "refund", "shipment", "discount", "ledger", "tax", "coupon",
         "warehouse", "supplier", "catalog", "basket", "receipt", "currency", "report", "audit", "session", "token",
         "webhook", "schedule", "inventory", "account", "profile", "address", "carrier", "rate", "batch", "export"]
VERBS = ["load", "save", "validate", "compute", "render", "merge", "split", "normalize", "find", "cancel"]


def make_project(root: Path, modules: int = 30, per_module: int = 7) -> None:
    """A git work tree of `modules` Python modules of `per_module` functions each, every module importing
    from two or three others: a map of about 3,000 tokens, and more matching code than a slot holds."""
    rng = random.Random(7)
    package = root / "shop"
    package.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (package / "__init__.py").write_text('"""The shop\'s back office."""\n')
    names = {m: [f"{VERBS[(m + i) % len(VERBS)]}_{NOUNS[m % len(NOUNS)]}" for i in range(per_module)] for m in range(modules)}
    for m in range(modules):
        noun = NOUNS[m % len(NOUNS)]
        deps = sorted({rng.randrange(modules) for _ in range(3)} - {m})
        lines = [f'"""Everything about the {noun}: loading, checking and computing {noun} records."""', ""]
        lines += [f"from shop.{NOUNS[d % len(NOUNS)]}_{d} import {names[d][0]}, {names[d][1]}" for d in deps]
        lines += ["", ""]
        for i, name in enumerate(names[m]):
            called = names[rng.choice(deps)][rng.randrange(2)]
            lines += [
                f"def {name}(records, limit={10 + i}, strict=False):",
                f'    """{name.split("_")[0].capitalize()} the {noun} records: keep those within the limit, '
                f'check each {noun} field and return the cleaned list with its total."""',
                "    kept = []",
                "    for record in records[:limit]:",
                f"        if strict and not record.get('{noun}_id'):",
                f"            raise ValueError('a {noun} without an id')",
                f"        value = {called}([record])",
                "        kept.append({**record, 'checked': bool(value)})",
                "    total = sum(r.get('amount', 0) for r in kept)",
                f"    return {{'{noun}': kept, 'total': total, 'count': len(kept)}}",
                "",
                "",
            ]
        (package / f"{noun}_{m}.py").write_text("\n".join(lines))


def history_file(path: Path, messages: int = 24, words: int = 300) -> Path:
    """A session of `messages` long messages (about 8,000 tokens) to import: more than the small budgets hold."""
    rng = random.Random(1)
    vocabulary = "the invoice total tax customer order ledger export field amount check record list value return".split()
    lines = [{"session": "earlier", "role": "user" if n % 2 == 0 else "assistant",
              "content": f"Note {n}: " + " ".join(rng.choice(vocabulary) for _ in range(words)),
              "id": f"m{n}", "timestamp": f"2026-03-01T10:{n:02d}:00Z"} for n in range(messages)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


class CountingServer:
    """The model behind the fake server: each streamed chat request is counted as the server counts prompts
    (and that is the usage reported); search_code is called once a turn where it is offered; side jobs
    (compaction summaries) are answered by the scripted model."""

    def __init__(self) -> None:
        self.count = default_counter().count
        self.side_jobs = ScriptedModel()
        self.turn_requests: list[int] = []  # the prompt tokens of each chat request, as counted

    def __call__(self, request):
        if request.path != CHAT_PATH:
            return None
        body = request.json
        if not body.get("stream"):
            return self.side_jobs(request)
        prompt = count_prompt(body, self.count).total
        self.turn_requests.append(prompt)
        offered = [t["function"]["name"] for t in body.get("tools") or ()]
        searched = any(m["role"] == "tool" for m in body["messages"][-2:])
        if "search_code" in offered and not searched:
            return tool_call_reply([("call_1", "search_code", {"query": SEARCHED, "k": 8})], prompt_tokens=prompt,
                                   count=self.count, body=body)
        return text_reply("The invoice is validated field by field, then totalled.", prompt_tokens=prompt,
                          count=self.count, body=body)


@pytest.fixture
def turns(tmp_path, fake_server, monkeypatch) -> SimpleNamespace:
    """The project indexed, an earlier session imported, then a turn of that session at each budget (with
    its debug dump), largest budget first; and `zeph context --json` at two of them."""
    monkeypatch.setenv("PYTHONPATH", str(CHECKOUT))  # this checkout's zeph, whichever the installed package points at
    project = tmp_path / "project"
    make_project(project)
    model = CountingServer()
    fake_server.respond_with(model)
    env = {**ENV, "ZEPH_LLM_PROVIDER": "compatible", "ZEPH_LLM_BASE_URL": fake_server.url + "/v1",
           "ZEPH_LLM_MODEL": "gpt-4o", "ZEPH_LLM_MAX_RETRIES": "0"}
    built = run_zeph("index", "--no-embed", env=env, cwd=project)
    assert built.returncode == 0, err(built)
    imported = run_zeph("sessions", "import", str(history_file(tmp_path / "history.jsonl")), env=env, cwd=project)
    assert imported.returncode == 0, err(imported)
    runs: dict[int, SimpleNamespace] = {}
    previews: dict[int, dict] = {}
    for budget in BUDGETS:
        at = {**env, "ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS": str(budget)}
        dump = tmp_path / f"dump-{budget}"
        before = len(model.turn_requests)
        asked = run_zeph("ask", "--continue", "--debug-dump", str(dump), MESSAGE, env=at, cwd=project)
        assert asked.returncode == 0, (budget, err(asked))
        dumped = [json.loads(p.read_text()) for p in sorted(dump.glob("*-request.json"))]
        runs[budget] = SimpleNamespace(
            counted=model.turn_requests[before:],
            requests=[d for d in dumped if d["wire"]["body"].get("stream")],  # the turn's, not side jobs'
            stderr=err(asked),
        )
        if budget in (16_000, 3_000):
            shown = run_zeph("context", "--json", env=at, cwd=project)
            assert shown.returncode == 0, err(shown)
            previews[budget] = json.loads(out(shown))["context"]
    return SimpleNamespace(runs=runs, previews=previews, count=model.count)


def _sent_block(body: dict, tag: str) -> str | None:
    found = [m["content"] for m in body["messages"] if str(m.get("content") or "").startswith(f"<{tag}>")]
    assert len(found) <= 1
    return found[0] if found else None


def _blocks(report: dict) -> dict[str, dict]:
    return {b["name"]: b for b in report["blocks"]}


def _requests_fit(run, budget: int) -> None:
    """Every request of the turn within the budget as the server counts it, and zeph's report within it."""
    assert run.counted and len(run.counted) == len(run.requests), run.stderr
    assert all(0 < prompt <= budget for prompt in run.counted), (budget, run.counted)
    for dumped in run.requests:
        report = dumped["context"]
        assert report["budget"] == budget and report["used_tokens"] <= report["capacity"], report
    if budget >= 8_000:  # the tools fit: search_code was called and its result sent within the budget too
        assert len(run.counted) == 2 and "search_code" in run.stderr, run.stderr


def _repo_map_fits(run, budget: int, count) -> None:
    """`<repo_map>` within 1,024 tokens and its share of the prompt's budget, as zeph counts it and as sent."""
    limit = min(REPO_MAP_TOKENS, int(budget * 0.8 * REPO_MAP_SHARE))  # the share is of the prompt's 80%
    for dumped in run.requests:
        report, body = dumped["context"], dumped["wire"]["body"]
        assert limit == min(REPO_MAP_TOKENS, int(report["capacity"] * REPO_MAP_SHARE))
        block = _blocks(report)["repo map"]
        text = _sent_block(body, "repo_map")
        assert text is not None and count(text) <= limit and block["tokens"] <= limit, (block, limit)
        if budget >= 16_000:  # the cap, not the share, is what limits it: the map fills most of it
            assert block["tokens"] > REPO_MAP_TOKENS * 0.8, block


def _code_context_fits(run, budget: int, count) -> None:
    """`<code_context>` within its slot of the allocation; at small budgets the slot, not retrieval, limits it."""
    for dumped in run.requests:
        report, body = dumped["context"], dumped["wire"]["body"]
        block = _blocks(report)["code context"]
        slot = report["allocation"]["code_context"]
        text = _sent_block(body, "code_context")
        assert text is not None and "shop/" in text, text
        assert count(text) <= slot and block["tokens"] <= slot, (block, slot)
        kept, retrieved = map(int, re.fullmatch(r"(\d+) of (\d+) chunks", block["detail"]).groups())
        assert 0 < kept <= retrieved
        if budget <= 4_000:  # not every retrieved chunk fits
            assert kept < retrieved, block


def _context_reports_the_same_limits(previews: dict[int, dict]) -> None:
    for budget, report in previews.items():
        blocks = _blocks(report)
        assert report["budget"] == budget and report["used_tokens"] <= report["capacity"]
        assert blocks["repo map"]["tokens"] <= min(REPO_MAP_TOKENS, int(report["capacity"] * REPO_MAP_SHARE))
        assert 0 < blocks["code context"]["tokens"] <= report["allocation"]["code_context"]
    small, large = previews[3_000], previews[16_000]
    assert _blocks(small)["repo map"]["tokens"] < _blocks(large)["repo map"]["tokens"]
    assert 0 < small["allocation"]["code_context"] < large["allocation"]["code_context"]


def test_the_budget_holds_with_the_code_index(turns, subtests):
    """One test (the turns are costly; a test per check could build them on each worker): a subtest per
    budget and check."""
    for budget in BUDGETS:
        run = turns.runs[budget]
        with subtests.test("requests within the budget", budget=budget):
            _requests_fit(run, budget)
        with subtests.test("repo map within 1,024 tokens and its share", budget=budget):
            _repo_map_fits(run, budget, turns.count)
        with subtests.test("code context within its slot", budget=budget):
            _code_context_fits(run, budget, turns.count)
    with subtests.test("zeph context --json reports the same limits"):
        _context_reports_the_same_limits(turns.previews)
