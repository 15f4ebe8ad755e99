"""Project context (ZEPH.md walk-up), environment block, budget and assembly."""

from __future__ import annotations

from pathlib import Path

from zeph_cli.context.assembler import HistoryItem, PromptLayer, fit_history
from tests.assembly import assemble
from zeph_cli.context.budget import compute_budget
from zeph_cli.context.environment import EnvironmentFacts, render_environment
from zeph_cli.context.project import ProjectFile, render_project_context
from zeph_cli.messages import Message, ToolCallPart, ToolResultPart
from zeph_cli.tokens import ApproximateCounter
from zeph_cli.agent.workspace import find_project_files, git_branch

COUNTER = ApproximateCounter()


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# ---- ZEPH.md discovery (spec: "global first, then ancestors from root to cwd") ----


def test_project_files_walk_up_in_spec_order(tmp_path):
    global_file = write(tmp_path / "config" / "zeph" / "ZEPH.md", "global rules")
    root = tmp_path / "repo"
    write(root / "ZEPH.md", "repo rules")
    write(root / "ZEPH.local.md", "repo local rules")
    write(root / ".zeph" / "config.md", "repo dot-zeph rules")
    write(root / "pkg" / "ZEPH.md", "package rules")
    cwd = root / "pkg" / "src"
    cwd.mkdir(parents=True)
    files, warnings = find_project_files(cwd, global_file)
    assert [f.text for f in files] == [
        "global rules",
        "repo rules",
        "repo local rules",
        "repo dot-zeph rules",
        "package rules",
    ]
    assert warnings == []


def test_project_files_skip_unreadable_with_a_warning(tmp_path):
    (tmp_path / "ZEPH.md").write_bytes(b"\xff\xfe not utf-8")
    files, warnings = find_project_files(tmp_path, None)
    assert files == []
    assert len(warnings) == 1 and "ZEPH.md" in warnings[0] and "UTF-8" in warnings[0]


def test_missing_global_file_is_fine(tmp_path):
    files, warnings = find_project_files(tmp_path, tmp_path / "nope" / "ZEPH.md")
    assert files == [] and warnings == []


def test_project_context_block_is_tagged_and_ordered():
    block = render_project_context([ProjectFile("/a/ZEPH.md", "alpha"), ProjectFile("/a/b/ZEPH.md", "beta")], 1000, COUNTER)
    assert block.text.startswith("<project_context>") and block.text.endswith("</project_context>")
    assert block.text.index("alpha") < block.text.index("beta")
    assert block.truncated == ()


def test_project_context_cap_keeps_nearest_file_and_says_so():
    far = ProjectFile("/far/ZEPH.md", "far line\n" * 200)  # ~450 tokens with the approximate counter
    near = ProjectFile("/far/near/ZEPH.md", "near rules")
    block = render_project_context([far, near], 100, COUNTER)
    assert "near rules" in block.text
    assert "[truncated:" in block.text and "/far/ZEPH.md" in block.text
    assert block.truncated == ("/far/ZEPH.md",)
    assert COUNTER.count(block.text) < 200


def test_empty_project_files_give_no_block():
    assert render_project_context([ProjectFile("/x/ZEPH.md", "  \n")], 100, COUNTER).text == ""


# ---- environment block ----


def test_git_branch_read_from_head_without_git(tmp_path):
    write(tmp_path / ".git" / "HEAD", "ref: refs/heads/feature/ctx\n")
    (tmp_path / "sub").mkdir()
    assert git_branch(tmp_path / "sub") == "feature/ctx"


def test_git_branch_detached_and_worktree(tmp_path):
    write(tmp_path / "main" / ".git" / "HEAD", "3f2a9c1d0e4b5a6978\n")
    assert git_branch(tmp_path / "main") == "detached at 3f2a9c1"
    write(tmp_path / "gitdirs" / "wt" / "HEAD", "ref: refs/heads/wt-branch\n")
    write(tmp_path / "wt" / ".git", f"gitdir: {tmp_path / 'gitdirs' / 'wt'}\n")
    assert git_branch(tmp_path / "wt") == "wt-branch"


def test_no_git_repo_means_no_branch(tmp_path):
    assert git_branch(tmp_path) is None


def test_environment_block_lists_the_spec_fields():
    text = render_environment(EnvironmentFacts("/work/app", "linux", "main", "gpt-4o"))
    assert text.splitlines() == [
        "<environment>",
        "working_directory: /work/app",
        "os: linux",
        "git_branch: main",
        "model: gpt-4o",
        "</environment>",
    ]
    assert "git_branch" not in render_environment(EnvironmentFacts("/x", "macos", None, "m"))


# ---- budget ----


def test_budget_zero_means_the_model_window_and_reserves_20_percent():
    budget = compute_budget(configured_tokens=0, auto_budget=True, window=128_000, soft_threshold=0.6, hard_threshold=0.9)
    assert budget.total == 128_000
    assert budget.reserved_for_response == 25_600  # spec: "reserved for response generation: 20% of total"
    assert budget.available == 102_400


def test_budget_explicit_and_unlimited():
    explicit = compute_budget(configured_tokens=10_000, auto_budget=True, window=128_000, soft_threshold=0.6, hard_threshold=0.9)
    assert explicit.total == 10_000 and explicit.available == 8_000
    unlimited = compute_budget(configured_tokens=0, auto_budget=False, window=128_000, soft_threshold=0.6, hard_threshold=0.9)
    assert unlimited.total == 0 and unlimited.available == 0


# ---- assembly ----


def item(message: Message) -> HistoryItem:
    from zeph_cli.tokens import count_message

    return HistoryItem(message, count_message(COUNTER, message))


def test_assembly_orders_stable_layers_first_and_reports_each_block():
    layers = [PromptLayer("base prompt", "BASE"), PromptLayer("environment", "ENV"), PromptLayer("project context", "")]
    history = [item(Message.user("hi")), item(Message.assistant("hello")), item(Message.user("again"))]
    budget = compute_budget(configured_tokens=0, auto_budget=True, window=64_000, soft_threshold=0.6, hard_threshold=0.9)
    messages, report = assemble(layers, history, budget, COUNTER, window=64_000)
    assert [m.role for m in messages] == ["system", "system", "user", "assistant", "user"]
    assert messages[0].content == "BASE" and messages[-1].content == "again"
    assert [b.name for b in report.blocks] == ["base prompt", "environment", "history"]
    assert report.used_tokens == sum(b.tokens for b in report.blocks)
    assert report.budget == 64_000 and report.trimmed_messages == 0
    assert (report.soft_threshold, report.hard_threshold) == (0.6, 0.9)


def test_history_trimming_drops_oldest_and_keeps_newest():
    history = [item(Message.user(f"message {i} " + "x" * 400)) for i in range(10)]
    budget = compute_budget(configured_tokens=800, auto_budget=True, window=64_000, soft_threshold=0.6, hard_threshold=0.9)
    messages, report = assemble([PromptLayer("base prompt", "B")], history, budget, COUNTER, window=64_000)
    assert report.trimmed_messages > 0
    assert messages[-1].content.startswith("message 9")
    assert report.used_tokens <= budget.available + 110  # at most one message of slack: the newest always goes
    assert report.notes and "not sent" in report.notes[0]


def test_newest_message_is_sent_even_when_nothing_fits():
    history = [item(Message.user("y" * 4000))]
    kept, dropped = fit_history(history, 10)
    assert kept == history and dropped == 0


def test_trimming_never_separates_a_tool_call_from_its_result():
    call = Message("assistant", (ToolCallPart("c1", "grep", {"pattern": "x" * 200}),))
    result = Message("tool", (ToolResultPart("c1", "r" * 200, name="grep"),))
    history = [item(Message.user("old " * 50)), item(call), item(result), item(Message.user("new"))]
    allowance = history[2].tokens + history[3].tokens + 1  # room for the result but not the call
    kept, dropped = fit_history(history, allowance)
    assert [i.message.role for i in kept] == ["user"]
    assert dropped == 3
    kept, _ = fit_history(history, sum(i.tokens for i in history[1:]))
    assert [i.message.role for i in kept] == ["assistant", "tool", "user"]


def summary_item(text: str) -> HistoryItem:
    from zeph_cli.tokens import count_message

    message = Message.assistant(text)
    return HistoryItem(message, count_message(COUNTER, message), 1, {"compaction_summary": True})


def test_a_compaction_summary_is_always_sent_first_and_history_gets_the_rest():
    summary = summary_item("[compaction summary] the user is porting the parser " + "detail " * 40)
    history = [summary] + [item(Message.user(f"message {i} " + "x" * 400)) for i in range(10)]
    budget = compute_budget(configured_tokens=1000, auto_budget=True, window=64_000, soft_threshold=0.6, hard_threshold=0.9)
    messages, report = assemble([PromptLayer("base prompt", "B")], history, budget, COUNTER, window=64_000)
    assert messages[1].content.startswith("[compaction summary]")
    assert messages[-1].content.startswith("message 9")
    assert [b.name for b in report.blocks] == ["base prompt", "compaction summary", "history"]
    assert report.trimmed_messages > 0
    shared = budget.available - report.block("base prompt").tokens - 3  # REQUEST_OVERHEAD
    assert report.allocation == {"summaries": int(shared * 0.15), "semantic_recall": 0,
                                 "recent_history": shared - int(shared * 0.15)}
    # the summary's unused share goes back to history: beyond the table's 60%, up to one message short of the rest
    assert report.block("history").tokens > shared - report.block("compaction summary").tokens - 110
    assert report.block("history").tokens > int(shared * 0.60)


def test_a_summary_past_the_soft_line_is_still_sent_and_noted():
    summary = summary_item("[compaction summary] " + "fact " * 600)
    history = [summary, item(Message.user("latest"))]
    budget = compute_budget(configured_tokens=1000, auto_budget=True, window=64_000, soft_threshold=0.6, hard_threshold=0.9)
    messages, report = assemble([PromptLayer("base prompt", "B")], history, budget, COUNTER, window=64_000)
    assert [m.content[:21] for m in messages[1:]] == ["[compaction summary] ", "latest"]
    assert any("more than its 15% share (118) and the 472 below the soft compaction line" in note
               for note in report.notes), report.notes
    # within the room below the soft line, a summary over its share is how the slot works: no note
    summary = summary_item("[compaction summary] " + "fact " * 300)
    report = assemble([PromptLayer("base prompt", "B")], [summary, item(Message.user("latest"))], budget, COUNTER,
                      window=64_000)[1]
    assert report.block("compaction summary").tokens > 118 and not report.notes


def test_without_a_budget_there_is_no_allocation():
    budget = compute_budget(configured_tokens=0, auto_budget=False, window=64_000, soft_threshold=0.6, hard_threshold=0.9)
    _, report = assemble([PromptLayer("base prompt", "B")], [item(Message.user("hi"))], budget, COUNTER, window=64_000)
    assert report.allocation == {} and report.to_dict()["allocation"] == {}


# ---- usage: what the compaction thresholds are compared with ----


def test_usage_counts_trimmed_history_against_the_prompt_share_of_the_budget():
    history = [item(Message.user(f"message {i} " + "x" * 400)) for i in range(10)]
    budget = compute_budget(configured_tokens=800, auto_budget=True, window=64_000, soft_threshold=0.6, hard_threshold=0.9)
    _, report = assemble([PromptLayer("base prompt", "B")], history, budget, COUNTER, window=64_000)
    dropped = history[: report.trimmed_messages]
    assert report.unsent_tokens == sum(i.tokens for i in dropped) > 0
    assert report.capacity == 640  # 800 minus the 20% reserve
    assert report.context_tokens == report.used_tokens + report.unsent_tokens
    assert report.usage == report.context_tokens / 640
    assert report.usage > 1.0  # what the agent could send is over the prompt budget: compaction is due
    assert report.to_dict()["usage"] == round(report.usage, 4)


def test_usage_without_a_budget_is_zero_and_nothing_is_unsent():
    history = [item(Message.user("x" * 4000)) for _ in range(5)]
    budget = compute_budget(configured_tokens=0, auto_budget=False, window=64_000, soft_threshold=0.6, hard_threshold=0.9)
    _, report = assemble([PromptLayer("base prompt", "B")], history, budget, COUNTER, window=64_000)
    assert (report.capacity, report.unsent_tokens, report.usage) == (0, 0, 0.0)
