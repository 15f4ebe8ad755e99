"""read_file, list_directory, write_file and edit_file on real files in a temporary workspace."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from zeph_cli.tools.base import ToolContext, validate_arguments
from tests.tool_helpers import ctx, fails, root, run  # noqa: F401  (fixtures and helpers)
from zeph_cli.tools.confinement import Confinement
from zeph_cli.tools.failures import PathOutsideWorkspace, ToolFailure
from zeph_cli.tools.files import EditFileTool, ListDirectoryTool, ReadFileTool, WriteFileTool, plan_edit

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x01" * 100


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "secret.txt").write_text("top secret\n")
    return directory


def test_tool_names_kinds_and_required_arguments_are_the_contract():
    contract = {
        ReadFileTool: ("read_file", "read", ["path"], {"path", "offset", "limit"}),
        ListDirectoryTool: ("list_directory", "read", [], {"path"}),
        WriteFileTool: ("write_file", "write", ["path", "content"], {"path", "content"}),
        EditFileTool: ("edit_file", "write", ["path", "old_string", "new_string"], {"path", "old_string", "new_string"}),
    }
    for tool_class, (name, kind, required, properties) in contract.items():
        tool = tool_class()
        assert (tool.name, tool.kind, tool.parameters["required"]) == (name, kind, required)
        assert set(tool.parameters["properties"]) == properties
        assert tool.spec().description == tool.description and len(tool.description) > 40


# ---- read_file ---------------------------------------------------------------


async def test_read_file_numbers_lines_like_cat_n(root, ctx):
    (root / "a.py").write_text("import os\n\nprint(os.sep)\n")
    result = await run(ReadFileTool(), ctx, path="a.py")
    assert result.content == "     1\timport os\n     2\t\n     3\tprint(os.sep)"
    assert result.summary == "3 lines"
    assert not result.is_error


async def test_read_file_without_final_newline_and_with_crlf(root, ctx):
    (root / "w.txt").write_bytes(b"one\r\ntwo\r\nthree")
    result = await run(ReadFileTool(), ctx, path="w.txt")
    assert result.content == "     1\tone\n     2\ttwo\n     3\tthree"


async def test_read_file_pages_with_offset_and_limit(root, ctx):
    (root / "ten.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    middle = await run(ReadFileTool(), ctx, path="ten.txt", offset=3, limit=2)
    assert middle.content == "     3\tline 3\n     4\tline 4\n(showing lines 3-4 of 10; continue with offset=5)"
    assert middle.summary == "2 lines (3-4 of 10)"
    last = await run(ReadFileTool(), ctx, path="ten.txt", offset=9)
    assert last.content == "     9\tline 9\n    10\tline 10\n(showing lines 9-10 of 10; end of file)"


async def test_read_file_offset_as_string_is_accepted_and_past_the_end_is_refused(root, ctx):
    (root / "two.txt").write_text("a\nb\n")
    result = await run(ReadFileTool(), ctx, path="two.txt", offset="2")
    assert result.content.startswith("     2\tb")
    message = await fails(ReadFileTool(), ctx, path="two.txt", offset=5)
    assert message == "offset 5 is past the end of two.txt, which has 2 lines"


async def test_read_file_default_limit_is_2000_lines_and_says_how_to_continue(root, ctx):
    (root / "long.txt").write_text("".join(f"{n}\n" for n in range(1, 2501)))
    result = await run(ReadFileTool(), ctx, path="long.txt")
    lines = result.content.splitlines()
    assert lines[0] == "     1\t1"
    assert lines[1999] == "  2000\t2000"
    assert lines[-1] == "(showing lines 1-2,000 of 2,500; continue with offset=2001)"
    assert len(lines) == 2001


async def test_read_file_cuts_very_long_lines(root, ctx):
    (root / "min.js").write_text("x" * 5000 + "\nshort\n")
    result = await run(ReadFileTool(), ctx, path="min.js")
    first, second = result.content.splitlines()
    assert first.startswith("     1\t" + "x" * 2000 + " … [line cut at 2,000 characters")
    assert "x" * 2001 not in first
    assert second == "     2\tshort"


async def test_read_file_cut_does_not_split_a_multibyte_character_into_a_false_encoding_note(root, ctx):
    (root / "wide.txt").write_text("é" * 3000 + "\n", encoding="utf-8")
    result = await run(ReadFileTool(), ctx, path="wide.txt")
    assert "not valid UTF-8" not in result.content
    assert result.content.startswith("     1\t" + "é" * 2000 + " … [line cut")


async def test_read_file_empty_file(root, ctx):
    (root / "empty.txt").write_text("")
    result = await run(ReadFileTool(), ctx, path="empty.txt")
    assert result.content == "(empty file)"


async def test_read_file_refuses_binary_files(root, ctx):
    (root / "logo.png").write_bytes(PNG)
    (root / "blob.bin").write_bytes(b"abc\x00def")
    assert await fails(ReadFileTool(), ctx, path="logo.png") == (
        f"logo.png is a binary file (PNG image, {len(PNG):,} bytes); read_file shows text only"
    )
    assert "blob.bin is a binary file (binary data, 7 bytes)" in await fails(ReadFileTool(), ctx, path="blob.bin")


async def test_read_file_shows_latin1_text_with_a_note(root, ctx):
    (root / "old.txt").write_bytes("caf\xe9\nna\xefve\n".encode("latin-1"))
    result = await run(ReadFileTool(), ctx, path="old.txt")
    note, first, second = result.content.splitlines()
    assert note.startswith("(note: old.txt is not valid UTF-8 — first bad byte at offset 3")
    assert first == "     1\tcaf\ufffd"
    assert second == "     2\tna\ufffdve"


async def test_read_file_missing_file_suggests_close_names(root, ctx):
    (root / "src").mkdir()
    (root / "src" / "config.py").write_text("x = 1\n")
    assert await fails(ReadFileTool(), ctx, path="src/confg.py") == "src/confg.py does not exist; did you mean src/config.py?"
    assert await fails(ReadFileTool(), ctx, path="src/zzz.py") == "src/zzz.py does not exist"
    assert await fails(ReadFileTool(), ctx, path="nope/zzz.py") == "nope/zzz.py does not exist (nor does the directory nope)"


async def test_read_file_on_a_directory_points_to_list_directory(root, ctx):
    (root / "src").mkdir()
    assert await fails(ReadFileTool(), ctx, path="src") == "src is a directory; use list_directory to see its entries"


@pytest.mark.parametrize("escape", ["../outside/secret.txt", "ABSOLUTE", "link/secret.txt", "secret-link.txt"])
async def test_read_file_refuses_paths_outside_the_workspace(root, outside, ctx, escape):
    (root / "link").symlink_to(outside, target_is_directory=True)
    (root / "secret-link.txt").symlink_to(outside / "secret.txt")
    raw = str(outside / "secret.txt") if escape == "ABSOLUTE" else escape
    with pytest.raises(PathOutsideWorkspace) as caught:
        await run(ReadFileTool(), ctx, path=raw)
    assert "is outside the workspace" in str(caught.value)
    assert "access refused" in str(caught.value)


async def test_read_file_in_an_allowed_extra_directory(root, outside):
    context = ToolContext(Confinement(root, extra=[outside]), root)
    result = await run(ReadFileTool(), context, path=str(outside / "secret.txt"))
    assert result.content == "     1\ttop secret"


async def test_read_file_paths_are_relative_to_cwd(root):
    (root / "pkg").mkdir()
    (root / "pkg" / "mod.py").write_text("x = 1\n")
    context = ToolContext(Confinement(root), root / "pkg")
    result = await run(ReadFileTool(), context, path="mod.py")
    assert result.content == "     1\tx = 1"


async def test_read_file_huge_file_needs_offset_or_limit_and_pages_by_streaming(root, ctx):
    line = "0123456789" * 9 + "\n"  # 91 bytes
    count = 21 * 1024 * 1024 // len(line) + 1
    with open(root / "huge.log", "w") as handle:
        for _ in range(count):
            handle.write(line)
    message = await fails(ReadFileTool(), ctx, path="huge.log")
    assert message.startswith("huge.log is 21.0 MB, more than read_file shows at once (20.0 MB)")
    assert "offset and limit" in message and "grep" in message
    result = await run(ReadFileTool(), ctx, path="huge.log", offset=count - 1)
    assert result.content.splitlines()[-1] == f"(showing lines {count - 1:,}-{count:,} of {count:,}; end of file)"
    first = await run(ReadFileTool(), ctx, path="huge.log", limit=1)
    assert first.content.splitlines()[-1] == f"(showing lines 1-1 of {count:,}; continue with offset=2)"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
async def test_read_file_permission_denied(root, ctx):
    locked = root / "locked.txt"
    locked.write_text("x\n")
    locked.chmod(0)
    try:
        assert await fails(ReadFileTool(), ctx, path="locked.txt") == "cannot read locked.txt: permission denied"
    finally:
        locked.chmod(0o644)


async def test_read_file_schema_requires_path_and_positive_offset(ctx):
    tool = ReadFileTool()
    with pytest.raises(ToolFailure, match="missing required argument 'path'"):
        validate_arguments(tool.name, tool.parameters, {})
    with pytest.raises(ToolFailure, match="'offset' must be >= 1"):
        validate_arguments(tool.name, tool.parameters, {"path": "a", "offset": 0})
    with pytest.raises(ToolFailure, match="'limit' must be integer"):
        validate_arguments(tool.name, tool.parameters, {"path": "a", "limit": "many"})


# ---- list_directory ----------------------------------------------------------


async def test_list_directory_sorts_directories_first_and_shows_sizes_and_links(root, ctx):
    (root / "src").mkdir()
    (root / ".github").mkdir()
    (root / "README.md").write_text("x" * 2048)
    (root / ".env").write_text("A=1\n")
    (root / "b.txt").write_text("")
    (root / "docs").symlink_to("src", target_is_directory=True)
    result = await run(ListDirectoryTool(), ctx)
    assert result.content.splitlines() == [
        ".github/",
        "src/",
        ".env  4 B",
        "b.txt  0 B",
        "docs -> src",
        "README.md  2.0 KB",
    ]
    assert result.summary == "6 entries"


async def test_list_directory_defaults_to_cwd_and_lists_empty_directories(root):
    (root / "pkg" / "empty").mkdir(parents=True)
    context = ToolContext(Confinement(root), root / "pkg")
    assert (await run(ListDirectoryTool(), context)).content == "empty/"
    assert (await run(ListDirectoryTool(), context, path="empty")).content == "(empty directory)"


async def test_list_directory_caps_at_1000_entries(root, ctx):
    (root / "many").mkdir()
    for n in range(1005):
        (root / "many" / f"f{n:04d}").write_text("")
    lines = (await run(ListDirectoryTool(), ctx, path="many")).content.splitlines()
    assert len(lines) == 1001
    assert lines[0] == "f0000  0 B"
    assert lines[-1] == "… 5 more entries not shown"


async def test_list_directory_refuses_files_missing_paths_and_outside(root, outside, ctx):
    (root / "a.txt").write_text("x")
    assert await fails(ListDirectoryTool(), ctx, path="a.txt") == "a.txt is a file, not a directory; use read_file to read it"
    assert (await fails(ListDirectoryTool(), ctx, path="srcs")).startswith("srcs does not exist")
    with pytest.raises(PathOutsideWorkspace):
        await run(ListDirectoryTool(), ctx, path="..")
    with pytest.raises(PathOutsideWorkspace):
        await run(ListDirectoryTool(), ctx, path=str(outside))


# ---- write_file --------------------------------------------------------------


async def test_write_file_creates_parents_and_reports_lines(root, ctx):
    result = await run(WriteFileTool(), ctx, path="sub/dir/new.txt", content="one\ntwo\n")
    assert result.content == "created sub/dir/new.txt (2 lines)"
    assert (root / "sub" / "dir" / "new.txt").read_text() == "one\ntwo\n"


async def test_write_file_overwrites_atomically_and_keeps_the_mode(root, ctx):
    target = root / "run.sh"
    target.write_text("#!/bin/sh\necho a\necho b\n")
    target.chmod(0o751)
    result = await run(WriteFileTool(), ctx, path="run.sh", content="#!/bin/sh\n")
    assert result.content == "overwrote run.sh (1 line, was 3 lines)"
    assert target.read_text() == "#!/bin/sh\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o751
    assert sorted(p.name for p in root.iterdir()) == ["run.sh"]  # no temporary file left


async def test_write_file_new_file_mode_follows_the_umask(root, ctx):
    previous = os.umask(0o027)
    try:
        await run(WriteFileTool(), ctx, path="fresh.txt", content="x")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((root / "fresh.txt").stat().st_mode) == 0o640


async def test_write_file_writes_utf8(root, ctx):
    await run(WriteFileTool(), ctx, path="u.txt", content="naïve ✓\n")
    assert (root / "u.txt").read_bytes() == "naïve ✓\n".encode()


async def test_write_file_refuses_a_directory_path(root, ctx):
    (root / "src").mkdir()
    assert await fails(WriteFileTool(), ctx, path="src", content="x") == (
        "src is a directory; give write_file the path of a file"
    )


async def test_write_file_reports_a_file_in_the_way_of_parent_directories(root, ctx):
    (root / "notes").write_text("x")
    message = await fails(WriteFileTool(), ctx, path="notes/today.md", content="x")
    assert message == "cannot create notes/today.md: notes is not a directory"


@pytest.mark.parametrize("escape", ["../outside/new.txt", "ABSOLUTE", "link/new.txt", "link/deeper/new.txt", "secret-link.txt"])
async def test_write_file_never_writes_outside_the_workspace(root, outside, ctx, escape):
    (root / "link").symlink_to(outside, target_is_directory=True)
    (root / "secret-link.txt").symlink_to(outside / "secret.txt")
    raw = str(outside / "new.txt") if escape == "ABSOLUTE" else escape
    with pytest.raises(PathOutsideWorkspace):
        await run(WriteFileTool(), ctx, path=raw, content="pwned\n")
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "top secret\n"


async def test_write_file_through_a_symlink_inside_the_workspace_writes_its_target(root, ctx):
    (root / "real.txt").write_text("old\n")
    (root / "alias.txt").symlink_to("real.txt")
    result = await run(WriteFileTool(), ctx, path="alias.txt", content="new\n")
    assert result.content == "overwrote real.txt (1 line, was 1 line)"
    assert (root / "alias.txt").is_symlink()
    assert (root / "real.txt").read_text() == "new\n"


async def test_write_file_in_an_allowed_extra_directory(root, outside):
    context = ToolContext(Confinement(root, extra=[outside]), root)
    result = await run(WriteFileTool(), context, path=str(outside / "notes.md"), content="hi\n")
    assert result.content == f"created {outside / 'notes.md'} (1 line)"
    assert (outside / "notes.md").read_text() == "hi\n"


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write any file")
async def test_write_and_edit_respect_a_read_only_file(root, ctx):
    target = root / "frozen.txt"
    target.write_text("keep\n")
    target.chmod(0o444)
    assert await fails(WriteFileTool(), ctx, path="frozen.txt", content="x") == "cannot write frozen.txt: permission denied"
    message = await fails(EditFileTool(), ctx, path="frozen.txt", old_string="keep", new_string="x")
    assert message == "cannot write frozen.txt: permission denied"
    assert target.read_text() == "keep\n"


async def test_write_file_schema_requires_content(ctx):
    tool = WriteFileTool()
    with pytest.raises(ToolFailure, match="missing required argument 'content'"):
        validate_arguments(tool.name, tool.parameters, {"path": "a.txt"})


def test_write_preview_for_a_new_file_is_all_added_lines(root, ctx):
    preview = WriteFileTool().preview({"path": "n.txt", "content": "a\nb\n"}, ctx)
    assert preview.splitlines() == ["--- /dev/null", "+++ b/n.txt", "@@ -0,0 +1,2 @@", "+a", "+b"]


def test_write_preview_diffs_against_the_old_content(root, ctx):
    (root / "c.txt").write_text("keep\nold\n")
    preview = WriteFileTool().preview({"path": "c.txt", "content": "keep\nnew"}, ctx)
    assert preview.splitlines() == [
        "--- a/c.txt",
        "+++ b/c.txt",
        "@@ -1,2 +1,2 @@",
        " keep",
        "-old",
        "+new",
        "\\ No newline at end of file",
    ]
    assert WriteFileTool().preview({"path": "c.txt", "content": "keep\nold\n"}, ctx) == (
        "no change: c.txt already has this content"
    )


def test_write_preview_over_a_binary_file_says_so(root, ctx):
    (root / "logo.png").write_bytes(PNG)
    preview = WriteFileTool().preview({"path": "logo.png", "content": "text\n"}, ctx)
    assert preview.splitlines()[0] == "replace the binary file logo.png (PNG image) with 1 line of text"
    assert preview.splitlines()[-1] == "+text"


def test_write_preview_is_capped_and_never_raises(root, outside, ctx):
    preview = WriteFileTool().preview({"path": "big.txt", "content": "".join(f"{n}\n" for n in range(500))}, ctx)
    lines = preview.splitlines()
    assert len(lines) == 201
    assert lines[-1] == "… 303 more diff lines not shown"
    refused = WriteFileTool().preview({"path": "../outside/x.txt", "content": "x"}, ctx)
    assert "is outside the workspace" in refused
    (root / "dir").mkdir()
    assert WriteFileTool().preview({"path": "dir", "content": "x"}, ctx) == (
        "dir is a directory; give write_file the path of a file"
    )
    assert isinstance(WriteFileTool().preview({}, ctx), str)


# ---- edit_file ---------------------------------------------------------------


async def test_edit_file_replaces_the_one_occurrence(root, ctx):
    (root / "m.py").write_text("def f():\n    return 1\n\n\ndef g():\n    return 2\n")
    result = await run(EditFileTool(), ctx, path="m.py", old_string="    return 2\n", new_string="    x = 2\n    return x\n")
    assert result.content == "edited m.py: replaced 1 line with 2 lines at line 6"
    assert (root / "m.py").read_text() == "def f():\n    return 1\n\n\ndef g():\n    x = 2\n    return x\n"


async def test_edit_file_can_delete_text(root, ctx):
    (root / "d.txt").write_text("a\nb\nc\n")
    result = await run(EditFileTool(), ctx, path="d.txt", old_string="b\n", new_string="")
    assert result.content == "edited d.txt: replaced 1 line with 0 lines at line 2"
    assert (root / "d.txt").read_text() == "a\nc\n"


async def test_edit_file_not_found_gives_hints(root, ctx):
    (root / "m.py").write_text("def f():\n\treturn 1\n")
    message = await fails(EditFileTool(), ctx, path="m.py", old_string="return 2", new_string="return 3")
    assert message == "old_string was not found in m.py; read the file again and copy the text exactly"
    message = await fails(EditFileTool(), ctx, path="m.py", old_string="def f():\n    return 1", new_string="x")
    assert message.startswith("old_string was not found in m.py; it does match when whitespace is ignored")
    message = await fails(EditFileTool(), ctx, path="m.py", old_string="     1\tdef f():", new_string="x")
    assert "seems to include read_file's line numbers" in message
    message = await fails(EditFileTool(), ctx, path="m.py", old_string="KEY=[REDACTED]", new_string="KEY=1")
    assert "the file's secrets are shown redacted; edit around them" in message
    assert (root / "m.py").read_text() == "def f():\n\treturn 1\n"


async def test_edit_file_many_matches_name_their_lines(root, ctx):
    (root / "r.py").write_text("x = 1\nx = 1\ny = 2\nx = 1\n")
    message = await fails(EditFileTool(), ctx, path="r.py", old_string="x = 1", new_string="x = 3")
    assert message == (
        "old_string occurs 3 times in r.py (lines 1, 2, 4); include more surrounding context so it is unique"
    )
    assert (root / "r.py").read_text() == "x = 1\nx = 1\ny = 2\nx = 1\n"


async def test_edit_file_refuses_empty_or_identical_strings(root, ctx):
    (root / "a.txt").write_text("a\n")
    assert await fails(EditFileTool(), ctx, path="a.txt", old_string="", new_string="b") == (
        "old_string is empty; use write_file to create or overwrite a whole file"
    )
    assert await fails(EditFileTool(), ctx, path="a.txt", old_string="a", new_string="a") == (
        "old_string and new_string are identical; there is nothing to change"
    )


async def test_edit_file_keeps_crlf_line_endings(root, ctx):
    (root / "win.txt").write_bytes(b"first\r\nsecond\r\nthird\r\n")
    result = await run(EditFileTool(), ctx, path="win.txt", old_string="first\nsecond\n", new_string="one\ntwo\nthree\n")
    assert result.content == "edited win.txt: replaced 2 lines with 3 lines at line 1"
    assert (root / "win.txt").read_bytes() == b"one\r\ntwo\r\nthree\r\nthird\r\n"


async def test_edit_file_refuses_latin1_and_binary_files(root, ctx):
    (root / "old.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    (root / "logo.png").write_bytes(PNG)
    message = await fails(EditFileTool(), ctx, path="old.txt", old_string="caf", new_string="bar")
    assert message == "old.txt is not UTF-8 (first bad byte at offset 3); editing would corrupt it"
    assert (root / "old.txt").read_bytes() == b"caf\xe9\n"
    message = await fails(EditFileTool(), ctx, path="logo.png", old_string="PNG", new_string="GIF")
    assert message == f"logo.png is a binary file (PNG image, {len(PNG):,} bytes); edit_file edits text only"


async def test_edit_file_keeps_mode_and_refuses_missing_files(root, ctx):
    (root / "tool.sh").write_text("echo a\n")
    (root / "tool.sh").chmod(0o700)
    await run(EditFileTool(), ctx, path="tool.sh", old_string="a", new_string="b")
    assert stat.S_IMODE((root / "tool.sh").stat().st_mode) == 0o700
    assert (root / "tool.sh").read_text() == "echo b\n"
    assert await fails(EditFileTool(), ctx, path="tool.py", old_string="a", new_string="b") == (
        "tool.py does not exist; did you mean tool.sh?"
    )


@pytest.mark.parametrize("escape", ["../outside/secret.txt", "ABSOLUTE", "link/secret.txt", "secret-link.txt"])
async def test_edit_file_never_edits_outside_the_workspace(root, outside, ctx, escape):
    (root / "link").symlink_to(outside, target_is_directory=True)
    (root / "secret-link.txt").symlink_to(outside / "secret.txt")
    raw = str(outside / "secret.txt") if escape == "ABSOLUTE" else escape
    with pytest.raises(PathOutsideWorkspace):
        await run(EditFileTool(), ctx, path=raw, old_string="top", new_string="no")
    assert (outside / "secret.txt").read_text() == "top secret\n"


async def test_edit_file_in_an_allowed_extra_directory(root, outside):
    context = ToolContext(Confinement(root, extra=[outside]), root)
    await run(EditFileTool(), context, path=str(outside / "secret.txt"), old_string="top", new_string="less")
    assert (outside / "secret.txt").read_text() == "less secret\n"


async def test_edit_file_schema_requires_new_string(ctx):
    tool = EditFileTool()
    with pytest.raises(ToolFailure, match="missing required argument 'new_string'"):
        validate_arguments(tool.name, tool.parameters, {"path": "a", "old_string": "x"})


def test_edit_preview_is_a_diff_or_the_reason_there_is_none(root, ctx):
    (root / "p.txt").write_text("a\nb\nc\n")
    preview = EditFileTool().preview({"path": "p.txt", "old_string": "b", "new_string": "B"}, ctx)
    assert preview.splitlines() == ["--- a/p.txt", "+++ b/p.txt", "@@ -1,3 +1,3 @@", " a", "-b", "+B", " c"]
    assert EditFileTool().preview({"path": "p.txt", "old_string": "zz", "new_string": "B"}, ctx).startswith(
        "old_string was not found in p.txt"
    )
    assert EditFileTool().preview({"path": "gone.txt", "old_string": "a", "new_string": "b"}, ctx) == (
        "gone.txt does not exist"
    )
    assert "is outside the workspace" in EditFileTool().preview(
        {"path": "/etc/passwd", "old_string": "a", "new_string": "b"}, ctx
    )
    assert (root / "p.txt").read_text() == "a\nb\nc\n"


def test_plan_edit_prefers_the_exact_text_in_mixed_line_endings():
    text = "a\r\nb\nc\r\n"
    edit = plan_edit(text, "b\nc", "B\nC", "mixed.txt")
    assert edit.text == "a\r\nB\nC\r\n"
    assert (edit.line, edit.removed, edit.added) == (2, 2, 2)


# ---- redaction markers are never written over real secrets ---------------------------------


async def test_write_file_refuses_to_put_redaction_markers_into_a_file(tmp_path):
    from zeph_cli.tools.base import ToolContext
    from zeph_cli.tools.confinement import Confinement
    from zeph_cli.tools.files import EditFileTool, WriteFileTool
    from zeph_cli.tools.failures import ToolFailure

    ctx = ToolContext(confinement=Confinement(tmp_path), cwd=tmp_path)
    env = tmp_path / ".env"
    env.write_text("API_KEY=real-secret-value\nDEBUG=1\n")
    with pytest.raises(ToolFailure, match=r"\[REDACTED\]"):
        await WriteFileTool().run({"path": ".env", "content": "API_KEY=[REDACTED]\nDEBUG=0\n"}, ctx)
    with pytest.raises(ToolFailure, match=r"\[REDACTED\]"):
        await EditFileTool().run({"path": ".env", "old_string": "DEBUG=1", "new_string": "API_KEY=[REDACTED]\nDEBUG=0"}, ctx)
    assert env.read_text() == "API_KEY=real-secret-value\nDEBUG=1\n"
    # editing around the secret works
    await EditFileTool().run({"path": ".env", "old_string": "DEBUG=1", "new_string": "DEBUG=0"}, ctx)
    assert env.read_text() == "API_KEY=real-secret-value\nDEBUG=0\n"


async def test_paths_are_shown_relative_to_the_working_directory_below_the_root(tmp_path):
    from zeph_cli.tools.base import ToolContext
    from zeph_cli.tools.confinement import Confinement
    from zeph_cli.tools.files import ReadFileTool
    from zeph_cli.tools.search import FindPathTool, GrepTool

    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "mod.py").write_text("VALUE = 1\n")
    (tmp_path / "top.py").write_text("VALUE = 2\n")
    cwd = tmp_path / "src"
    ctx = ToolContext(confinement=Confinement(tmp_path, cwd=cwd), cwd=cwd)
    found = (await FindPathTool().run({"pattern": "*.py"}, ctx)).content
    assert "pkg/mod.py" in found and "top.py" not in found  # searches from the working directory
    grep = (await GrepTool().run({"pattern": "VALUE", "path": ".."}, ctx)).content
    assert "pkg/mod.py:1:" in grep and "../top.py:1:" in grep
    read = await ReadFileTool().run({"path": "../top.py"}, ctx)
    assert "VALUE = 2" in read.content


@pytest.mark.parametrize("tool, extra", [
    (ReadFileTool(), {}), (ListDirectoryTool(), {}), (WriteFileTool(), {"content": "x"}),
    (EditFileTool(), {"old_string": "a", "new_string": "b"}),
])
async def test_a_proc_link_the_kernel_will_not_follow_is_refused_naming_the_path(root, ctx, tool, extra):
    # /proc/1/cwd is a link an unprivileged (or confined) process may not read: resolving it
    # raises EACCES. Where it can be read it leads to / , outside the workspace. Both refuse.
    message = await fails(tool, ctx, path="/proc/1/cwd/x", **extra)
    assert message.startswith("/proc/1/cwd/x ") and message.endswith("access refused")


def test_an_unresolvable_path_is_refused_not_raised_as_a_crash(root):
    confinement = Confinement(root)
    (root / "init-cwd").symlink_to("/proc/1/cwd")
    with pytest.raises(PathOutsideWorkspace, match=r"^init-cwd/x .*access refused$"):
        confinement.resolve("init-cwd/x", root)
    assert confinement.contains(root / "init-cwd" / "x") is False



def test_a_directory_swapped_for_a_link_after_the_check_never_leads_the_write_outside(root, outside, monkeypatch):
    """A command left running in the background can flip a directory into a symlink between the path check
    and the write (it raced write_file into a file outside after 15 tries): the write follows no link."""
    import zeph_cli.tools.files as files
    from zeph_cli.tools.text_files import write_atomically

    (root / "sub").mkdir()
    (root / "sub" / "notes.txt").write_text("old text\n")
    (outside / "notes.txt").write_text("old text\n")  # the canary the swapped link leads to
    context = ToolContext(Confinement(root), root)
    checked = files.resolve("sub/notes.txt", context)  # what confinement allowed
    (root / "sub").rename(root / "sub-moved")
    (root / "sub").symlink_to(outside, target_is_directory=True)  # the race, won: sub now leads outside
    monkeypatch.setattr(files, "resolve", lambda raw, ctx: checked)  # the check ran before the swap

    with pytest.raises(ToolFailure, match="symbolic link since the path was checked; nothing was written"):
        files.write_file({"path": "sub/notes.txt", "content": "new text\n"}, context)
    with pytest.raises(OSError):  # edit_file's write, after its read
        write_atomically(checked, "new text\n")
    assert (outside / "notes.txt").read_text() == "old text\n"
    assert sorted(p.name for p in outside.iterdir()) == ["notes.txt", "secret.txt"]  # no temporary file either


def test_write_file_makes_missing_directories_and_refuses_a_file_in_the_way(root, ctx):
    from zeph_cli.tools.files import write_file

    write_file({"path": "a/b/c.txt", "content": "x\n"}, ctx)
    assert (root / "a" / "b" / "c.txt").read_text() == "x\n"
    (root / "plain").write_text("a file\n")
    with pytest.raises(ToolFailure, match="cannot create plain/d/e.txt: plain is not a directory"):
        write_file({"path": "plain/d/e.txt", "content": "x\n"}, ctx)
