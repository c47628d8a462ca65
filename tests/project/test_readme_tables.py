"""The README's "The loop in one page" stays true: its reading order and its lines per area are what
tests/readme_tables.py generates from the source now, and every area is within its stated budget."""
import re
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import readme_tables  # noqa: E402

STALE = "The README's generated tables are stale: run `python tests/readme_tables.py --write`"


def test_the_readme_tables_are_what_the_source_says_now():
    readme = readme_tables.README.read_text(encoding="utf-8")
    assert readme_tables.rewrite(readme) == readme, STALE


def test_every_area_is_within_its_budget():
    assert readme_tables.over_budget() == [], (
        "cut, or raise the area's budget in tests/readme_tables.py (BUDGETS) on purpose, in its own commit")


def test_the_reading_order_walks_every_step_of_a_turn():
    """turn.py's docstring lists one turn's steps; a learner's reading order must visit each of them."""
    doc = (readme_tables.PACKAGE / "turn.py").read_text(encoding="utf-8").split('"""')[1]
    steps = re.findall(r"^    ([a-z_]+)  ", doc, re.M)
    assert len(steps) >= 5
    read = [name for module, name, _ in readme_tables.READING_ORDER if module == "turn.py"]
    assert set(steps) <= set(read), set(steps) - set(read)
    assert "loop" in [name for _, name, _ in readme_tables.READING_ORDER]


@pytest.fixture
def package_copy(tmp_path, monkeypatch):
    copy = tmp_path / "miniagents"
    shutil.copytree(readme_tables.PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(readme_tables, "PACKAGE", copy)
    return copy


def test_a_moved_function_makes_the_table_stale(package_copy):
    readme = readme_tables.README.read_text(encoding="utf-8")
    run = package_copy / "run.py"
    run.write_text("\n\n" + run.read_text(encoding="utf-8"), encoding="utf-8")
    rewritten = readme_tables.rewrite(readme)
    assert rewritten != readme
    first, last = readme_tables.line_range(readme_tables.definition("run.py", "loop"))
    assert f"`miniagents/run.py:{first}-{last}`" in rewritten


def test_a_function_gone_or_a_module_without_an_area_is_named(package_copy):
    (package_copy / "novelty.py").write_text('"""New."""\n', encoding="utf-8")
    with pytest.raises(readme_tables.StaleTable, match=r"give these modules an area: \['novelty.py'\]"):
        readme_tables.area_sizes()
    turn = package_copy / "turn.py"
    turn.write_text(turn.read_text(encoding="utf-8").replace("def settle(", "def settle_calls("),
                    encoding="utf-8")
    with pytest.raises(readme_tables.StaleTable, match="names settle in miniagents/turn.py"):
        readme_tables.reading_order()


def test_code_lines_leave_out_blank_lines_comments_and_docstrings(tmp_path):
    path = tmp_path / "m.py"
    path.write_text('"""Module\ndocstring."""\n\n# a comment\nimport os\n\n\ndef f():\n    """Doc."""\n'
                    '    return os.sep  # trailing comments count as code\n', encoding="utf-8")
    assert readme_tables.counts(path) == (10, 3)


def test_the_script_writes_and_reports(tmp_path, monkeypatch, capsys):
    readme = tmp_path / "README.md"
    start, end = readme_tables.MARKERS["reading order"]
    start2, end2 = readme_tables.MARKERS["lines per area"]
    readme.write_text(f"intro\n{start}\nold\n{end}\nmiddle\n{start2}\n{end2}\nout\n", encoding="utf-8")
    monkeypatch.setattr(readme_tables, "README", readme)
    assert readme_tables.main(["--write"]) == 0
    text = readme.read_text(encoding="utf-8")
    assert "old" not in text and "| 1 | `Runner.run_sync` |" in text and text.endswith("\nout\n")
    readme.write_text("no markers\n", encoding="utf-8")
    assert readme_tables.main(["--write"]) == 1
    assert "markers" in capsys.readouterr().err
