"""What the model is told about each core tool: name, kind, description and argument schema.

Invariant: data only, importing nothing of zeph. The tool implementations declare
themselves from here (`class ReadFileTool(Tool, declared="read_file")`), and
the registry offers tools from declarations alone (these, and those features
register), so a turn that calls no tool never imports a tool's implementation.
"""

from __future__ import annotations

from typing import Any, NamedTuple

DEFAULT_READ_LIMIT = 2000
MAX_LINE_CHARS = 2000
DEFAULT_PAGE_LINES = 400
STRATEGIES = ("Reactive", "Autonomous")


class ToolDeclaration(NamedTuple):
    name: str
    kind: str  # "read" | "write" | "exec"
    description: str
    parameters: dict[str, Any]
    # The module (by full dotted name, so a feature's tools live in its package) and class implementing
    # the tool, imported when it is first used.
    implementation: tuple[str, str]
    group: str = ""  # the tool group a session's policy may deny ("memory tools"); "" = the core's


# In the order they are offered.
BUILTIN: dict[str, ToolDeclaration] = {
    "read_file": ToolDeclaration(
        "read_file",
        "read",
        "Read a text file. Each line is shown as its line number, a tab, then the line (like `cat -n`); "
        "the numbers are not part of the file, so leave them out when quoting text to edit_file. "
        f"Shows up to {DEFAULT_READ_LIMIT} lines starting at `offset`; for longer files the output says "
        f"which offset continues. Lines longer than {MAX_LINE_CHARS} characters are cut. Binary files are "
        "refused. Use list_directory for directories and grep to find text across files.",
        {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file, relative to the working directory or absolute."},
                "offset": {"type": "integer", "minimum": 1, "description": "1-based line number to start at (default 1)."},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "description": f"How many lines to show (default {DEFAULT_READ_LIMIT}).",
                },
            },
            "required": ["path"],
        },
        ("zeph_cli.tools.files", "ReadFileTool"),
    ),
    "list_directory": ToolDeclaration(
        "list_directory",
        "read",
        "List a directory's entries, hidden ones included: directories first (with a trailing /), then files "
        "with their sizes; symlinks are shown as `name -> target`. Use find_path to search the whole tree.",
        {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The directory (default: the working directory)."},
            },
            "required": [],
        },
        ("zeph_cli.tools.files", "ListDirectoryTool"),
    ),
    "find_path": ToolDeclaration(
        "find_path",
        "read",
        "Find files and directories under the working directory by glob. A pattern without '/' matches names at any "
        "depth (`*.py`, `test_*`, `Makefile`); a pattern with '/' matches the path from the working directory, "
        "with `**` for any number of directories (`src/**/*.ts`, `tests/test_*.py`). `{a,b}` matches either; "
        "a trailing '/' matches directories only. Matching is case-sensitive. Skips .git, dependency and "
        "cache directories and whatever .gitignore excludes. Directories are listed with a trailing '/'.",
        {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "The glob, e.g. `*.md` or `src/**/test_*.py`."},
            },
            "required": ["pattern"],
        },
        ("zeph_cli.tools.search", "FindPathTool"),
    ),
    "grep": ToolDeclaration(
        "grep",
        "read",
        "Search file contents with a Python regular expression, line by line. Output lines are "
        "`path:LINE: text`. Case-sensitive; start the pattern with `(?i)` to ignore case. `path` (a file "
        "or directory, default the working directory) limits where to search and `glob` which files "
        "(same rules as find_path: `*.py`, `src/**/*.ts`). Skips binary files, files over 5 MB, .git, "
        "dependency and cache directories and whatever .gitignore excludes.",
        {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "A Python regular expression, e.g. `def \\w+_tool`."},
                "path": {
                    "type": "string",
                    "description": "A file or directory to search (default: the working directory).",
                },
                "glob": {"type": "string", "description": "Only search files matching this glob, e.g. `*.py`."},
            },
            "required": ["pattern"],
        },
        ("zeph_cli.tools.search", "GrepTool"),
    ),
    "write_file": ToolDeclaration(
        "write_file",
        "write",
        "Create a file or replace a file's whole content with `content` (UTF-8), creating missing parent "
        "directories. To change part of an existing file, prefer edit_file.",
        {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file, relative to the working directory or absolute."},
                "content": {"type": "string", "description": "The complete new content of the file."},
            },
            "required": ["path", "content"],
        },
        ("zeph_cli.tools.files", "WriteFileTool"),
    ),
    "edit_file": ToolDeclaration(
        "edit_file",
        "write",
        "Replace one exact piece of text in a file: `old_string` must occur exactly once (copy it from "
        "read_file without the line-number prefix, with enough surrounding lines to be unique) and is "
        "replaced by `new_string`. The file's line endings are kept. Use write_file to create a file.",
        {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file, relative to the working directory or absolute."},
                "old_string": {"type": "string", "description": "The exact text to replace; it must occur once."},
                "new_string": {"type": "string", "description": "The text to put in its place."},
            },
            "required": ["path", "old_string", "new_string"],
        },
        ("zeph_cli.tools.files", "EditFileTool"),
    ),
    "bash": ToolDeclaration(
        "bash",
        "exec",
        "Run a shell command with bash in the workspace directory and return its output "
        "(stdout and stderr combined, in order). Each call starts a fresh shell: `cd`, variables "
        "and aliases do not carry over to the next call, so chain dependent steps in one command "
        "(`cd sub && make test`). Stdin is empty, so interactive programs (editors, pagers, "
        "prompts) fail or see end of input: use non-interactive flags (`--yes`, `--no-pager`, "
        "`git commit -m`). The command is stopped after `timeout_secs` (120 s unless configured "
        "otherwise; at most 600 s). Background processes still writing to the output when the "
        "command ends are stopped; to keep a server running, redirect its output "
        "(`cmd > server.log 2>&1 &`). Long output is cut in the middle, so prefer commands that print only what "
        "you need (`grep`, `head`, `tail`, `wc -l`). A non-zero exit code is reported as "
        "`[exit code N]`.",
        {
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "description": "The bash command line to run, e.g. `pytest -q tests/test_x.py`.",
                },
                "timeout_secs": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Seconds before the command is stopped (default 120 unless configured; at most 600).",
                },
            },
            "required": ["command"],
        },
        ("zeph_cli.tools.shell", "BashTool"),
    ),
    "read_overflow": ToolDeclaration(
        "read_overflow",
        "read",
        "Read the full text of an earlier tool output that was cut because it was too long. "
        "The cut output's marker names its id (e.g. ov_1a2b3c4d). Pages are by line: "
        f"offset is the first line (1-based), limit the number of lines (default {DEFAULT_PAGE_LINES}).",
        {
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "The overflow id from the truncation marker."},
                "offset": {"type": "integer", "minimum": 1, "description": "First line to show (1-based)."},
                "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to show."},
            },
            "required": ["id"],
        },
        ("zeph_cli.tools.overflow", "ReadOverflowTool"),
    ),
    "compress_context": ToolDeclaration(
        "compress_context",
        "read",
        "Compress the conversation context now, without waiting for automatic compaction. "
        "Reactive: apply pending tool-call summaries and replace old tool outputs with placeholders "
        "(cheap, no summary call). Autonomous: summarize everything except the most recent messages "
        "into a structured summary. Use it when older details no longer need to be kept verbatim. "
        "The full history stays visible to the user either way.",
        {
            "type": "object",
            "properties": {
                "strategy": {
                    "type": "string",
                    "enum": list(STRATEGIES),
                    "description": "Reactive (prune, no LLM call) or Autonomous (LLM summary of older messages).",
                }
            },
            "required": ["strategy"],
        },
        ("zeph_cli.tools.compress", "CompressContextTool"),
    ),
    # "read": the call itself changes nothing and asks no one; what the sub-agent does goes through the same
    # checks and the same user as the session's own calls, and a read-only session starts read-only ones.
    "task": ToolDeclaration(
        "task",
        "read",
        "Give a self-contained job (a search, a review) to a sub-agent. It works in a fresh context and returns "
        "only its final answer, so the details stay out of this conversation. The prompt must say everything: "
        "the sub-agent sees nothing of this conversation. Several task calls in one reply run at once.",
        {
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "A short title for the job (3-6 words)."},
                "prompt": {"type": "string", "description": "The whole job, and what the answer should contain."},
                "mode": {
                    "type": "string",
                    "enum": ["ask", "agent"],
                    "description": "ask: read-only tools; agent: every tool. Default: this session's mode.",
                },
                "tools": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Only these tools, e.g. [\"read_file\", \"grep\"]. Default: all.",
                },
            },
            "required": ["description", "prompt"],
        },
        ("zeph_cli.tools.subagent", "TaskTool"),
    ),
}

TASK_TOOL = "task"
