"""The skill folders and the catalog: precedence, and picking up added, edited and removed skills
without re-reading what did not change."""

from __future__ import annotations

import os

from zeph_cli.config import SkillsConfig
from zeph_cli.features.skills.catalog import SkillCatalog
from zeph_cli.features.skills.folders import SkillFolder, skill_folders, user_skills_dir
from tests.skill_helpers import skill_text, write_skill


def test_the_user_dir_is_the_config_dirs_skills(tmp_path):
    assert user_skills_dir({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "zeph" / "skills"


def test_folders_default_to_the_user_dir_then_the_project(tmp_path):
    folders = skill_folders(SkillsConfig(), project_root=tmp_path / "proj", user_dir=tmp_path / "user", base_dir=None)
    assert folders == [SkillFolder(tmp_path / "user", "user"), SkillFolder(tmp_path / "proj" / ".zeph" / "skills", "project")]


def test_configured_paths_replace_the_user_dir_relative_to_the_config_file(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    config = SkillsConfig(paths=("team-skills", "~/more", str(tmp_path / "abs")))
    folders = skill_folders(config, project_root=None, user_dir=tmp_path / "user", base_dir=tmp_path / "cfg")
    assert [f.path for f in folders] == [tmp_path / "cfg" / "team-skills", tmp_path / "home" / "more", tmp_path / "abs"]
    assert {f.source for f in folders} == {"config path"}


def test_project_skills_override_user_skills_of_the_same_name(tmp_path):
    write_skill(tmp_path / "user", "deploy", skill_text("deploy", "User deploy."))
    write_skill(tmp_path / "user", "lint", skill_text("lint", "User lint."))
    write_skill(tmp_path / "proj", "deploy", skill_text("deploy", "Project deploy."))
    catalog = SkillCatalog([SkillFolder(tmp_path / "user", "user"), SkillFolder(tmp_path / "proj", "project")])
    skills, problems = catalog.refresh()
    assert problems == []
    assert skills["deploy"].description == "Project deploy." and skills["deploy"].source == "project"
    assert skills["lint"].source == "user"


def test_a_folder_that_is_itself_a_skill_and_missing_folders(tmp_path):
    single = write_skill(tmp_path, "one", skill_text("one", "A single skill folder."))
    catalog = SkillCatalog([SkillFolder(tmp_path / "missing", "user"), SkillFolder(single, "config path")])
    skills, problems = catalog.refresh()
    assert list(skills) == ["one"] and problems == []


def test_changes_are_picked_up_and_only_changed_files_are_read_again(tmp_path):
    root = tmp_path / "skills"
    write_skill(root, "a", skill_text("a", "First."))
    write_skill(root, "b", skill_text("b", "Second."))
    catalog = SkillCatalog([SkillFolder(root, "user")])
    assert sorted(catalog.refresh()[0]) == ["a", "b"] and catalog.reads == 2
    catalog.refresh()
    assert catalog.reads == 2  # nothing changed: nothing re-read

    file = root / "a" / "SKILL.md"
    file.write_text(skill_text("a", "First, edited at more length."))
    os.utime(file, ns=(file.stat().st_atime_ns, file.stat().st_mtime_ns + 1_000_000))
    write_skill(root, "c", skill_text("c", "Third."))
    skills, _ = catalog.refresh()
    assert skills["a"].description == "First, edited at more length." and "c" in skills
    assert catalog.reads == 4  # a (edited) and c (new)

    (root / "b" / "SKILL.md").unlink()
    skills, _ = catalog.refresh()
    assert sorted(skills) == ["a", "c"] and catalog.reads == 4


def test_a_bad_file_is_a_problem_until_fixed_and_the_rest_load(tmp_path):
    root = tmp_path / "skills"
    write_skill(root, "good", skill_text("good", "Fine."))
    bad = write_skill(root, "bad", "no front matter here")
    catalog = SkillCatalog([SkillFolder(root, "user")])
    skills, problems = catalog.refresh()
    assert list(skills) == ["good"]
    assert len(problems) == 1 and str(bad / "SKILL.md") in problems[0]
    (bad / "SKILL.md").write_text(skill_text("bad", "Fixed now."))
    skills, problems = catalog.refresh()
    assert sorted(skills) == ["bad", "good"] and problems == []
