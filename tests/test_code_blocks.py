"""The code index's blocks: <repo_map> cut by whole files to its room, both per-turn and in their places."""

from __future__ import annotations

import pytest

from zeph_cli.context.blocks import TURN_ORDER, Placement, Room
from zeph_cli.features.code_index.blocks import REPO_MAP, RepoMapEntries, repo_map_block, repo_map_text
from zeph_cli.tokens import default_counter

COUNT = default_counter().count
BODY = "\n".join(
    f"pkg/module_{n}.py\n    def function_{n}(argument, other_argument):\n    class Thing{n}:" for n in range(30)
)


def room(allowance: int) -> Room:
    return Room(allowance, None, lambda text: COUNT(text) + 4)


@pytest.mark.parametrize("allowance", [0, 4, 30, 80, 200, 500, 5000])
def test_the_map_never_exceeds_its_room_or_its_cap_and_is_cut_by_whole_files(allowance):
    fitted = RepoMapEntries(BODY, cap=300).fit(room(allowance))
    if not fitted.text:
        assert allowance < 80
        return
    assert COUNT(fitted.text) + 4 <= min(allowance, 300)
    assert fitted.text.startswith("<repo_map>\n") and fitted.text.endswith("\n</repo_map>")
    files = [line for line in fitted.text.splitlines() if line.startswith("pkg/")]
    assert files == [f"pkg/module_{n}.py" for n in range(len(files))]  # a prefix of the files, in rank order
    assert fitted.text.count("    def ") == len(files)  # each file whole
    assert fitted.kept == tuple(files)


def test_an_empty_map_is_no_block_text():
    assert repo_map_text("  \n") == ""
    assert not RepoMapEntries("", cap=100)


def test_the_map_is_per_turn_material_before_the_message():
    block = repo_map_block(BODY, 1024)
    assert (block.name, block.placement, block.order, block.stable) == (REPO_MAP, Placement.BEFORE_TURN,
                                                                        TURN_ORDER["repo map"], False)
    assert TURN_ORDER["repo map"] < TURN_ORDER["code context"] < TURN_ORDER["semantic recall"]
