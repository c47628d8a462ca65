"""The mutation check's mutant list still fits the code: each `old` text occurs exactly once in its file,
and each mutated file still compiles. (Running the mutants is `python tests/mutation_check.py`.)"""
import os

import pytest

import mutation_check  # tests/ is on sys.path, as for conftest_http and openai_server


@pytest.mark.parametrize("mutant", mutation_check.MUTANTS, ids=lambda m: m.id)
def test_each_mutant_applies_exactly_once_and_compiles(mutant):
    path = os.path.join(mutation_check.ROOT, mutant.file)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    assert text.count(mutant.old) == 1, f"{mutant.file}: the mutant's old text must occur exactly once"
    assert mutant.new != mutant.old
    compile(text.replace(mutant.old, mutant.new), path, "exec")
    for test in mutant.tests:
        assert os.path.isfile(os.path.join(mutation_check.ROOT, test)), test


def test_mutant_descriptions_are_unique():
    ids = [m.id for m in mutation_check.MUTANTS]
    assert len(ids) == len(set(ids))
