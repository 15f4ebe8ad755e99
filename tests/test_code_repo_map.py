"""The repo map over real tags (tree-sitter's, of the samples and of small made-up projects): files used by
many rank first, the conversation's files and names pull theirs up, the text never goes over its budget
and is the same for the same tags."""

from __future__ import annotations

import random
from pathlib import Path
from typing import NamedTuple

import pytest

from zeph_cli.features.code_index.repo_map import RepoGraph, RepoMap
from zeph_cli.features.code_index.tags import tags_of
from zeph_cli.tokens import TiktokenCounter

SAMPLES = Path(__file__).parent / "data" / "code_samples"
count_tokens = TiktokenCounter().count


class StoredTag(NamedTuple):  # the store's tag: a definition's stripped source line in `code`
    path: str
    name: str
    role: str
    kind: str
    line: int
    code: str


def tags_from(files: dict[str, str]) -> list[StoredTag]:
    tags = []
    for path, text in files.items():
        lines = text.split("\n")
        tags += [StoredTag(*tag, lines[tag.line - 1].strip()) for tag in tags_of(path, text)]
    return tags


def sample_tags() -> list[StoredTag]:
    return tags_from({f"src/{p.name}": p.read_text() for p in sorted(SAMPLES.iterdir())})


PROJECT = {
    "app/settings.py": "def load_settings(path):\n    return {}\n\n\ndef settings_folder():\n    return '.'\n",
    "app/server.py": "from app.settings import load_settings\n\n\ndef serve_forever():\n"
                     "    settings = load_settings('x')\n    return settings\n",
    "app/worker.py": "from app.settings import load_settings\n\n\ndef run_worker():\n    load_settings('y')\n",
    "app/cli.py": "from app.settings import load_settings\nfrom app.server import serve_forever\n\n\n"
                  "def main_entry():\n    load_settings('z')\n    serve_forever()\n",
    "app/lonely.py": "class LonelyWidget:\n    def draw_lonely(self):\n        return 1\n\n\n"
                     "def lonely_helper():\n    return LonelyWidget()\n",
}


def shown_paths(repo_map: RepoMap) -> list[str]:
    return [line[:-1] for line in repo_map.text.split("\n") if line and not line.startswith(" ")]


def test_a_file_used_by_many_ranks_above_a_file_used_by_none():
    graph = RepoGraph.build(tags_from(PROJECT))
    ranks = graph.file_ranks()
    assert ranks["app/settings.py"] > ranks["app/server.py"] > ranks["app/lonely.py"]
    repo_map = graph.render(budget_tokens=1024, count_tokens=count_tokens)
    paths = shown_paths(repo_map)
    assert paths[0] == "app/settings.py" and paths.index("app/settings.py") < paths.index("app/lonely.py")
    assert repo_map.text.split("\n")[1] == "  def load_settings(path):"  # its most used definition first
    assert abs(sum(ranks.values()) - 1) < 1e-9


def test_the_conversation_files_and_names_pull_their_files_up():
    graph = RepoGraph.build(tags_from(PROJECT))
    plain = shown_paths(graph.render(budget_tokens=1024, count_tokens=count_tokens))
    with_chat = shown_paths(graph.render(chat_files=["app/lonely.py"], budget_tokens=1024,
                                         count_tokens=count_tokens))
    with_name = shown_paths(graph.render(identifiers=["lonely_helper"], budget_tokens=1024,
                                         count_tokens=count_tokens))
    with_stem = shown_paths(graph.render(identifiers=["worker"], budget_tokens=1024, count_tokens=count_tokens))
    assert plain.index("app/lonely.py") > 0
    assert with_chat[0] == "app/lonely.py" and with_name[0] == "app/lonely.py"
    assert with_stem.index("app/worker.py") < plain.index("app/worker.py")
    unknown = shown_paths(graph.render(chat_files=["elsewhere.py"], identifiers=["nowhere"], budget_tokens=1024,
                                       count_tokens=count_tokens))
    assert unknown == plain


def test_uses_from_a_conversation_file_pull_up_what_it_uses():
    graph = RepoGraph.build(tags_from(PROJECT))
    plain = graph.file_ranks()
    chat = graph.file_ranks(chat_files=["app/cli.py"])
    assert chat["app/server.py"] / chat["app/worker.py"] > plain["app/server.py"] / plain["app/worker.py"]


@pytest.mark.parametrize("budget", [0, 3, 50, 200, 1024])
def test_the_map_never_goes_over_its_budget(budget):
    graph = RepoGraph.build(sample_tags() + tags_from(PROJECT))
    for conversation in ({}, {"chat_files": ["src/sample.py"]}, {"identifiers": ["Store", "makeSquare"]}):
        repo_map = graph.render(budget_tokens=budget, count_tokens=count_tokens, **conversation)
        assert repo_map.tokens == count_tokens(repo_map.text) <= budget
        assert repo_map.files == len(shown_paths(repo_map))
        if budget <= 3:
            assert repo_map == RepoMap("", 0, 0, 0)
        else:
            assert repo_map.definitions > 0
        if budget == 1024:  # everything fits
            assert repo_map.definitions == len(graph.definitions)


def test_a_counter_whose_lines_sum_to_less_than_the_text_still_keeps_the_budget():
    def superadditive(text: str) -> int:  # a whole text counts more than its lines do alone
        return len(text) ** 2 // 200

    graph = RepoGraph.build(sample_tags())
    for budget in (1, 40, 300, 2000):
        repo_map = graph.render(budget_tokens=budget, count_tokens=superadditive)
        assert repo_map.tokens == superadditive(repo_map.text) <= budget
    assert graph.render(budget_tokens=2000, count_tokens=superadditive).definitions > 0


def test_a_bigger_budget_shows_the_same_best_definitions_and_more():
    graph = RepoGraph.build(sample_tags() + tags_from(PROJECT))
    smaller = graph.render(budget_tokens=80, count_tokens=count_tokens)
    bigger = graph.render(budget_tokens=300, count_tokens=count_tokens)
    assert 0 < smaller.definitions < bigger.definitions
    assert set(smaller.text.split("\n")) <= set(bigger.text.split("\n"))


def test_signatures_sit_under_their_file_and_methods_under_their_class():
    graph = RepoGraph.build(sample_tags())
    text = graph.render(budget_tokens=4096, count_tokens=count_tokens).text
    blocks = {block.split(":\n", 1)[0]: block.split(":\n", 1)[1] for block in text.split("\nsrc/")
              for block in [block if block.startswith("src/") else "src/" + block]}
    assert blocks["src/sample.py"].split("\n") == [
        "  LIMIT = 3", "  def read_config(path):", "  class Store:", "    def save(self, record):",
        "    def count(self):"]
    assert blocks["src/Sample.java"].split("\n") == [
        "  public class Sample {", "    public int total(List<Integer> values) {"]
    assert "  impl Cache {\n    pub fn get(&self, key: &str) -> Option<&String> {" in blocks["src/sample.rs"]
    assert blocks["src/sample.rb"].split("\n") == ["  class Greeter", "  def greet(name)", "  def helper"]
    assert set(blocks) == {f"src/{p.name}" for p in SAMPLES.iterdir()}


def test_an_enclosing_class_is_shown_for_its_method_even_when_the_class_ranks_low():
    files = dict(PROJECT)
    files["app/cli.py"] += "\n\ndef draw_all():\n    w.draw_lonely()\n    w.draw_lonely()\n"
    graph = RepoGraph.build(tags_from(files))
    ranking = graph.ranking()
    ranked = [graph.definitions[i].name for i in ranking.order.tolist()]
    assert ranked.index("draw_lonely") < ranked.index("LonelyWidget")
    for budget in range(5, 200):
        text = graph.render(budget_tokens=budget, count_tokens=count_tokens).text
        if "draw_lonely" in text:
            assert "app/lonely.py:\n  class LonelyWidget:\n    def draw_lonely(self):" in text
            break
    else:
        raise AssertionError("the method never showed")


def test_the_same_tags_in_any_order_give_the_same_map():
    tags = sample_tags() + tags_from(PROJECT)
    shuffled = list(tags)
    random.Random(7).shuffle(shuffled)
    for conversation in ({}, {"chat_files": ["app/cli.py"], "identifiers": ["Store"]}):
        first = RepoGraph.build(tags).render(budget_tokens=200, count_tokens=count_tokens, **conversation)
        again = RepoGraph.build(shuffled).render(budget_tokens=200, count_tokens=count_tokens, **conversation)
        assert first == again and first.definitions > 0


def test_files_shown_elsewhere_can_be_left_out_and_still_rank():
    graph = RepoGraph.build(tags_from(PROJECT))
    repo_map = graph.render(chat_files=["app/cli.py"], exclude_files=["app/cli.py"], budget_tokens=1024,
                            count_tokens=count_tokens)
    assert "app/cli.py" not in shown_paths(repo_map) and "app/server.py" in shown_paths(repo_map)


def test_no_tags_and_names_without_definitions_give_an_empty_map():
    assert RepoGraph.build([]).render(budget_tokens=100, count_tokens=count_tokens) == RepoMap("", 0, 0, 0)
    only_refs = [t for t in tags_from(PROJECT) if t.role == "ref"]
    assert RepoGraph.build(only_refs).render(budget_tokens=100, count_tokens=count_tokens).text == ""


def test_renders_from_many_threads_give_what_one_thread_gives():
    from concurrent.futures import ThreadPoolExecutor

    tags = sample_tags() + tags_from(PROJECT)
    names = sorted({t.name for t in tags if t.role == "def"})
    conversations = [{"chat_files": [sorted({t.path for t in tags})[i % 15]], "identifiers": names[i % len(names):][:3]}
                     for i in range(40)]
    alone = RepoGraph.build(tags)
    expected = [alone.render(budget_tokens=150, count_tokens=count_tokens, **c) for c in conversations]
    shared = RepoGraph.build(tags)
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda c: shared.render(budget_tokens=150, count_tokens=count_tokens, **c),
                            conversations * 3))
    assert got == expected * 3 and len({m.text for m in expected}) > 5
