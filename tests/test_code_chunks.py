"""The code index's chunks, from the real tree-sitter grammar wheels: every line in exactly one chunk, whole
definitions where they fit, nested ones qualified, long ones cut at statement boundaries, other files as
text; each language's grammar and tags load offline from its wheel."""

from __future__ import annotations

from pathlib import Path

import pytest

from zeph_cli.features.code_index.chunks import SMALL_LINES, Chunk, chunk_file
from zeph_cli.features.code_index.languages import SPECS, language_of, load

SAMPLES = Path(__file__).parent / "data" / "code_samples"
REPO = Path(__file__).resolve().parent.parent


def covers_each_line_once(text: str, chunks: list[Chunk], max_lines: int) -> None:
    seen: dict[int, str] = {}
    for chunk in chunks:
        assert chunk.end_line - chunk.start_line + 1 <= max_lines, chunk
        assert chunk.text == "\n".join(text.split("\n")[chunk.start_line - 1:chunk.end_line])
        for line in range(chunk.start_line, chunk.end_line + 1):
            assert line not in seen, (line, seen[line], chunk.symbol)
            seen[line] = chunk.symbol
    missing = [n for n, line in enumerate(text.split("\n"), 1) if line.strip() and n not in seen]
    assert missing == []


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_grammar_loads_from_its_wheel_with_tags(name):
    grammar = load(name)
    assert grammar is not None and grammar.tags is not None


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.iterdir()))
@pytest.mark.parametrize("max_lines", [60, 3])
def test_each_line_of_a_file_is_in_exactly_one_chunk(sample, max_lines):
    text = (SAMPLES / sample).read_text()
    chunks, _ = chunk_file(f"src/{sample}", text, max_lines=max_lines)
    assert language_of(sample) is not None and chunks
    covers_each_line_once(text, chunks, max_lines)


EXPECTED = {  # a definition of each sample, whole in one chunk: (symbol, kind, first line, last line)
    "sample.py": ("read_config", "function", 7, 10),  # its decorator with it
    "sample.js": ("parseLine", "function", 3, 5),
    "sample.ts": ("makeSquare", "function", 7, 9),
    "sample.rs": ("Cache", "impl", 7, 11),
    "sample.go": ("Start", "method", 9, 11),
    "Sample.java": ("Sample", "class", 3, 9),
    "sample.c": ("square", "function", 3, 5),  # the function, not only the declarator its tags name
    "sample.cpp": ("Point", "class", 4, 8),
    "sample.rb": ("Greeter", "class", 3, 7),
    "sample.sh": ("deploy", "function", 4, 6),
}


@pytest.mark.parametrize("sample", sorted(EXPECTED))
def test_a_definition_that_fits_is_one_chunk_named_by_its_symbol(sample):
    chunks, _ = chunk_file(sample, (SAMPLES / sample).read_text())
    symbol, kind, first, last = EXPECTED[sample]
    [chunk] = [c for c in chunks if (c.symbol, c.kind) == (symbol, kind)]
    # the definition whole, with at most a few lines of code outside definitions before or after it
    assert chunk.start_line <= first and last <= chunk.end_line
    assert (first - chunk.start_line) + (chunk.end_line - last) < 2 * SMALL_LINES


def test_a_lone_comment_or_constant_joins_the_definition_next_to_it():
    text = ("def zero():\n    return 0\n\n\n# ---- helpers ----\n\n\ndef one():\n    return 1\n\nprint(2)\n\n"
            "def two():\n    return 2\n")
    chunks, _ = chunk_file("m.py", text)
    assert [(c.symbol, c.start_line, c.end_line) for c in chunks] == [("zero", 1, 2), ("one", 5, 9), ("two", 11, 14)]
    assert chunks[1].text.startswith("# ---- helpers ----\n\n\ndef one") and chunks[2].text.startswith("print(2)")


def test_a_small_run_joins_nothing_that_would_grow_past_the_limit():
    body = "\n".join(f"    x{n} = {n}" for n in range(59))
    text = f"# a comment\ndef big():\n{body}\n"
    chunks, _ = chunk_file("m.py", text, max_lines=60)
    assert [(c.symbol, c.start_line, c.end_line) for c in chunks] == [("", 1, 1), ("big", 2, 61)]


def test_a_class_too_long_for_one_chunk_gives_its_methods_qualified_and_its_head_apart():
    chunks, imports = chunk_file("store.py", (SAMPLES / "sample.py").read_text(), max_lines=3)
    by_symbol = {c.symbol: c for c in chunks}
    assert by_symbol["Store.save"].kind == "method" and by_symbol["Store.save"].start_line == 16
    assert by_symbol["Store.count"].text.strip() == "def count(self):\n        return len(self.records)"
    assert by_symbol["Store"].text.startswith("class Store:")  # the class's own lines: its head and docstring
    text = by_symbol["Store.count"].embedding_text(imports)
    assert text.startswith("# store.py · method Store.count\nimport os\nfrom pathlib import Path\n")


def test_a_long_function_is_cut_at_statement_boundaries_and_each_piece_keeps_its_signature():
    body = "\n".join(f"    step_{n} = compute({n})" for n in range(150))
    text = f"def pipeline(data):\n{body}\n    return data\n"
    chunks, _ = chunk_file("pipe.py", text, max_lines=60)
    assert [c.symbol for c in chunks] == ["pipeline"] * 3
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 60), (61, 120), (121, 152)]
    assert all(c.signature == "def pipeline(data):" for c in chunks)
    assert chunks[1].embedding_text().splitlines()[:2] == ["# pipe.py · function pipeline", "def pipeline(data):"]


def test_a_statement_longer_than_a_chunk_is_cut_and_no_line_is_lost():
    call = "result = build(\n" + "".join(f"    arg_{n},\n" for n in range(100)) + ")\n"
    chunks, _ = chunk_file("big.py", call, max_lines=40)
    covers_each_line_once(call, chunks, 40)
    assert len(chunks) == 3


def test_lines_are_counted_as_the_parser_counts_them():
    text = 'NOTE = "a\x0cpage break"\n\ndef after():\n    return 1\n'  # a form feed, which splitlines breaks at
    chunks, _ = chunk_file("ff.py", text)
    covers_each_line_once(text, chunks, 60)
    assert [(c.symbol, c.start_line, c.end_line) for c in chunks] == [("NOTE", 1, 1), ("after", 3, 4)]


def test_small_code_runs_merge_but_constants_and_functions_stay_chunks_of_their_own():
    # a constant is a definition the tags name: merging runs of them cost code retrieval 0.8 points
    text = "# settings\n" + "".join(f"SETTING_{n} = {n}\n" for n in range(3)) + "def f():\n    return 1\n"
    chunks, _ = chunk_file("settings.py", text)
    covers_each_line_once(text, chunks, 60)
    assert [(c.symbol, c.kind) for c in chunks] == [("SETTING_0", "constant"), ("SETTING_1", "constant"),
                                                   ("SETTING_2", "constant"), ("f", "function")]
    assert chunks[0].start_line == 1  # the comment above joined the first constant


def test_a_file_of_another_language_is_indexed_as_runs_of_lines():
    text = "\n".join(f"line {n}" for n in range(100)) + "\n\n\n"
    chunks, imports = chunk_file("notes.txt", text)
    assert imports == "" and {c.kind for c in chunks} == {"text"}
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 40), (41, 80), (81, 100)]


def test_a_real_module_of_this_repository_chunks_whole():
    path = REPO / "zeph_cli" / "agent" / "agent.py"
    text = path.read_text()
    chunks, imports = chunk_file("zeph_cli/agent/agent.py", text)
    covers_each_line_once(text, chunks, 60)
    assert "Agent.__init__" in {c.symbol for c in chunks} and imports.startswith("import contextlib\n")
