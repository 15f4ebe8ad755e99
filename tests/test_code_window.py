"""What of the code the conversation holds (read_file calls, search_code results) and talks about."""

from __future__ import annotations


from zeph_cli.features.code_index.window import conversation_files, identifiers, relative, window_of
from zeph_cli.messages import Message, ToolCallPart, ToolResultPart


def call(name: str, **arguments) -> Message:
    return Message("assistant", (ToolCallPart("c1", name, arguments),))


def result(text: str) -> Message:
    return Message("tool", (ToolResultPart("c1", text, "search_code"),))


def test_read_file_calls_put_their_lines_in_the_window(tmp_path):
    root = tmp_path.resolve()
    window = window_of([call("read_file", path="src/a.py"), call("read_file", path=str(root / "b.py"), offset=10, limit=5)],
                       root, root)
    assert window.holds("src/a.py", 1, 2000)
    assert not window.holds("src/a.py", 1990, 2010)
    assert window.holds("b.py", 10, 14) and not window.holds("b.py", 9, 14) and not window.holds("b.py", 10, 15)
    assert window.paths == {"src/a.py", "b.py"}


def test_a_path_outside_the_project_and_other_tools_are_left_out(tmp_path):
    root = (tmp_path / "project").resolve()
    root.mkdir()
    window = window_of([call("read_file", path="../elsewhere.py"), call("grep", pattern="x", path="a.py")], root, root)
    assert window.paths == set()
    assert relative("/etc/passwd", root, root) is None
    assert relative("sub/../a.py", root, root) == "a.py"


def test_search_results_already_shown_count_as_in_the_window(tmp_path):
    window = window_of([result("zeph_cli/x.py:12-40  Thing.run\n```python\n...\n```")], tmp_path, tmp_path)
    assert window.holds("zeph_cli/x.py", 12, 40) and not window.holds("zeph_cli/x.py", 12, 41)


def test_the_files_the_conversation_names_are_the_indexed_ones_most_recent_last(tmp_path):
    known = ["pkg/config.py", "pkg/util.py", "README.md"]
    messages = [Message.user("why does pkg/util.py fail? see config.py"), call("edit_file", path="README.md"),
                Message.user("and util.py again")]
    assert conversation_files(messages, tmp_path, tmp_path, known) == ["pkg/config.py", "README.md", "pkg/util.py"]


def test_identifiers_are_code_looking_words_only():
    found = identifiers(["Why does parse_config call loadSettings in Agent.run_turn? The HTTPServer fails twice. "
                         "Where does the Compactor keep summaries?"])
    assert {"parse_config", "loadSettings", "run_turn", "HTTPServer", "Agent", "Compactor"} <= found
    assert not {"Why", "does", "call", "fails", "The", "Where"} & found
