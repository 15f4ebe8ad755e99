"""A file's tags from its grammar's tags query: what it defines and what it uses, for the repo map."""

from __future__ import annotations

from pathlib import Path

import pytest

from zeph_cli.features.code_index.tags import tags_of

SAMPLES = Path(__file__).parent / "data" / "code_samples"


def test_a_python_file_defines_its_functions_and_classes_and_uses_what_it_calls():
    tags = tags_of("sample.py", (SAMPLES / "sample.py").read_text())
    defs = [(t.name, t.kind, t.line) for t in tags if t.role == "def"]
    refs = [(t.name, t.line) for t in tags if t.role == "ref"]
    assert defs == [("LIMIT", "constant", 4), ("read_config", "function", 8), ("Store", "class", 13),
                    ("save", "function", 16), ("count", "function", 19)]
    assert ("Path", 10) in refs and ("append", 17) in refs


def test_a_name_defined_in_one_place_is_used_in_another():
    tags = tags_of("main.go", (SAMPLES / "sample.go").read_text())
    assert ("Start", "def", 9) in [(t.name, t.role, t.line) for t in tags]
    assert ("Start", "ref", 15) in [(t.name, t.role, t.line) for t in tags]
    assert [t.line for t in tags] == sorted(t.line for t in tags)


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.iterdir()))
def test_every_sample_defines_something(sample):
    assert any(t.role == "def" for t in tags_of(sample, (SAMPLES / sample).read_text()))


def test_a_file_that_is_not_parsed_has_no_tags():
    assert tags_of("README.md", "# def main():\n") == []
