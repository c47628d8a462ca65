"""The mutation check still fits the code, and its mutant generator follows its written rules.

Curated mutants: each `old` text occurs exactly once in its file and the mutated file compiles; a failure names
the mutant to update in tests/mutation_check.py. Generated mutants (tests/mutation_generate.py): every one
compiles, ids are unique and survive cosmetic edits, the skip rules hold, and every entry of the equivalent-mutant
allow-list still names a generated mutant. (Running the mutants is `python tests/mutation_check.py [--generated]`.)
"""
import os
import textwrap
import zlib

import pytest

import mutation_check  # tests/ is on sys.path (tests/conftest.py's folder), as for openai_server
import mutation_generate


@pytest.mark.parametrize("mutant", mutation_check.MUTANTS, ids=lambda m: m.id)
def test_each_curated_mutant_applies_exactly_once_and_compiles(mutant):
    path = os.path.join(mutation_check.ROOT, mutant.file)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    hint = f"update the curated mutant {mutant.breaks!r} ({mutant.file}) in tests/mutation_check.py"
    assert text.count(mutant.old) == 1, f"its old text occurs {text.count(mutant.old)} times, want 1: {hint}"
    assert mutant.new != mutant.old, hint
    compile(mutation_check.mutate(text, mutant), path, "exec")
    for test in mutant.tests:
        assert os.path.isfile(os.path.join(mutation_check.ROOT, test)), f"{test} does not exist: {hint}"


def test_curated_mutant_descriptions_are_unique():
    ids = [m.id for m in mutation_check.MUTANTS]
    assert len(ids) == len(set(ids))


def test_a_curated_mutant_that_no_longer_matches_is_reported_by_name_and_file():
    stale = mutation_check.M("turn.py", "this text is not in turn.py", "x", "an example rule", "test_run")
    with pytest.raises(ValueError, match=r"'an example rule' in miniagents/turn.py.*occurs 0 times.*update"):
        mutation_check.mutate("print('hello')\n", stale)


# --- generated mutants ------------------------------------------------------------------------------------------

SAMPLE = '''
"""Module docstring."""
import logging
from typing import TYPE_CHECKING
from support import ROOT

if TYPE_CHECKING:
    import os

__all__ = ["f"]
logger = logging.getLogger("sample")


def f(items, limit: "int" = 3):
    """Docstring."""
    logger.warning("never mutated %s", limit)
    if limit > 0 and items:
        items.append(limit)
    return items[1:limit]


class C:
    def __repr__(self):
        return "C(" + str(1) + ")"
'''


def generate_sample(tmp_path, text=SAMPLE):
    (tmp_path / "sample.py").write_text(textwrap.dedent(text), encoding="utf-8")
    return mutation_generate.generate(str(tmp_path), ["sample.py"])


def test_the_generator_makes_every_kind_of_mutant_and_skips_what_its_rules_skip(tmp_path):
    edits = generate_sample(tmp_path)
    by_kind = {}
    for e in edits:
        by_kind.setdefault(e.kind, []).append((e.old, e.new))
    assert by_kind["compare"] == [("limit > 0", "(limit <= 0)")]
    assert by_kind["boundary"] == [("limit > 0", "(limit >= 0)")]
    assert by_kind["boolop"] == [("limit > 0 and items", "(limit > 0 or items)")]
    assert by_kind["negate"] == [("limit > 0 and items", "(not (limit > 0 and items))")]
    assert by_kind["remove"] == [("items.append(limit)", "pass")]
    assert by_kind["return"] == [("items[1:limit]", "None")]
    assert sorted(by_kind["slice"]) == [("1:limit", "1 + 1:limit"), ("1:limit", "1:limit + 1")]
    assert ("3", "(4)") in by_kind["constant"] and ("0", "(1)") in by_kind["constant"]
    touched = " ".join(e.old for e in edits)
    for skipped in ("Docstring", "never mutated", "sample", "TYPE_CHECKING", "os", '"f"', "C(", '"int"'):
        assert skipped not in touched, f"{skipped!r} should not be mutated"


def test_generated_ids_survive_cosmetic_edits_and_line_moves(tmp_path):
    before = {e.id for e in generate_sample(tmp_path)}
    moved = SAMPLE.replace("def f(items", "# a comment\n\n\ndef f(items").replace("    if limit", "\n    if limit")
    after = {e.id for e in generate_sample(tmp_path, moved)}
    assert before == after


@pytest.fixture(scope="module")
def generated():
    return mutation_check.generated_mutants()


def test_every_generated_mutant_applies_has_a_unique_id_and_a_sample_compiles(generated):
    modules = set(mutation_generate.module_files())
    assert {m.file for m in generated} <= modules and "miniagents/turn.py" in {m.file for m in generated}
    ids = [m.id for m in generated]
    assert len(ids) == len(set(ids))
    texts = {}
    for m in generated:
        if m.file not in texts:
            with open(os.path.join(mutation_check.ROOT, m.file), encoding="utf-8") as f:
                texts[m.file] = f.read()
        mutated = mutation_check.mutate(texts[m.file], m)
        assert all(os.path.isfile(os.path.join(mutation_check.ROOT, t)) for t in m.tests)
        if zlib.crc32(m.id.encode()) % 20 == 0:  # all of them take seconds; the check compiles each one it runs
            compile(mutated, m.file, "exec")


def test_tests_of_the_sources_shape_are_left_out_of_mutant_runs():
    names = {os.path.basename(t) for t in mutation_check.all_test_files(mutation_check.ROOT)}
    assert "test_run.py" in names and "test_mutation_check.py" not in names and "test_readme_tables.py" not in names


def test_every_module_is_mapped_to_test_files_that_exist():
    test_files = mutation_check.all_test_files(mutation_check.ROOT)
    for module in mutation_generate.module_files():
        first = mutation_generate.tests_for(module, test_files)
        assert set(first) <= set(test_files)
    assert "tests/loop/test_tools.py" in mutation_generate.tests_for("miniagents/tool.py", test_files)
    assert "tests/state/test_session_runs.py" in mutation_generate.tests_for("miniagents/session.py", test_files)
    assert "tests/schemas/test_schema.py" in mutation_generate.tests_for("miniagents/schema.py", test_files)
    names = {os.path.splitext(os.path.basename(t))[0] for t in test_files}
    for module, extra in mutation_generate.EXTRA_TESTS.items():
        assert set(extra) <= names, f"EXTRA_TESTS[{module!r}] names a missing test module"


def test_every_equivalent_mutant_listed_still_exists_and_has_a_reason(generated):
    listed = mutation_check.load_equivalent()
    current = {m.id for m in generated}
    stale = sorted(set(listed) - current)
    assert stale == [], ("tests/mutation_equivalent.txt lists mutants the generator no longer makes (the code "
                         f"changed): re-review and update or remove them: {stale}")
    assert all(reason.strip() for reason in listed.values())
