"""The repository explains itself, and a copied `miniagents/` folder works and carries its licence.

No file cites a document that is not in the repository; ARCHITECTURE.md's module map and layers are the
package's; the README's copying recipe runs with `python -I` next to a bare copy; LICENSE is in the package
(and in the wheel); `./run.sh` installs only when something changed and shows a failing build's error.
"""
import os
import re
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGE = ROOT / "miniagents"
ARCHITECTURE = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
NOT_OURS = {".git", ".venv", ".venv39", "venv", "dist", "build", "__pycache__", ".pytest_cache", ".hypothesis",
            ".upstream", ".benchmarks"}
# Documents that live outside the repository (their names are split here so this file does not cite them).
OUTSIDE = re.compile("|".join([r"\b(DESIGN|WIRE|REFERENCE)" + r"\.md\b", r"\b(DESIGN|WIRE|REFERENCE) §",
                               r"\.\./" + "shared", r"\bPA" + r"IN\b"]))


def repository_text_files():
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in NOT_OURS and not d.endswith(".egg-info")]
        for name in files:
            path = Path(folder, name)
            try:
                yield path, path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):  # binary files (a coverage database) cite nothing
                continue


def test_no_file_cites_a_document_outside_the_repository():
    hits = []
    for path, text in repository_text_files():
        name = path.relative_to(ROOT).as_posix()
        for match in OUTSIDE.finditer(text):
            line = text[text.rfind("\n", 0, match.start()) + 1:text.find("\n", match.end())]
            hits.append(f"{name}:{text.count(chr(10), 0, match.start()) + 1}: {line.strip()}")
    assert hits == [], "say the reason in a sentence instead of citing a document a copy does not have"


def test_the_module_map_lists_every_module_once():
    section = ARCHITECTURE.split("## Module map", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| `miniagents/([\w/]+\.py)` \| \S", section, re.M)
    files = sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py"))
    assert sorted(listed) == files, "ARCHITECTURE.md's module map: one row per module of miniagents/"


def test_the_layers_are_the_ones_the_architecture_test_enforces():
    sys.path.insert(0, str(ROOT / "tests"))
    import test_architecture

    section = ARCHITECTURE.split("## Layers", 1)[1].split("\n## ", 1)[0]
    documented = {name: [m.strip() for m in members.split(",")]
                  for name, members in re.findall(r"^- \*\*([\w ]+)\*\*: (.+)$", section, re.M)}
    assert documented == test_architecture.LAYERS
    for module in test_architecture.MODELS:
        assert module.startswith("models.")  # the models/ paragraph covers them all


def test_the_copying_recipe_runs_with_python_dash_I_next_to_a_bare_copy(tmp_path):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Copying miniagents into a project", 1)[1].split("\n## ", 1)[0]
    assert "python -I" in section
    [script] = re.findall(r"```python\n(.*?)```", section, re.S)
    app = tmp_path / "app"
    shutil.copytree(PACKAGE, app / "miniagents", ignore=shutil.ignore_patterns("__pycache__"))
    (app / "app.py").write_text(script + "import miniagents\nprint(miniagents.__file__)\n", encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = subprocess.run([sys.executable, "-I", str(app / "app.py")], cwd=str(elsewhere), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    printed, where = proc.stdout.decode().splitlines()
    assert printed == re.search(r"#\s*(.+)$", script.strip().splitlines()[-1]).group(1)
    assert Path(where).resolve() == (app / "miniagents" / "__init__.py").resolve()  # the copy, not an install
    (app / "bare.py").write_text("import miniagents\n", encoding="utf-8")  # without the recipe's first line
    bare = subprocess.run([sys.executable, "-I", "-S", str(app / "bare.py")], cwd=str(elsewhere),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert b"No module named 'miniagents'" in bare.stderr


def test_the_licence_is_mit_and_travels_with_the_package():
    licence = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert licence.startswith("MIT License\n") and "WITHOUT WARRANTY OF ANY KIND" in licence
    assert (PACKAGE / "LICENSE").read_text(encoding="utf-8") == licence
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'license = {text = "MIT"}' in pyproject
    assert re.search(r'^miniagents = \[[^\]]*"LICENSE"', pyproject, re.M), "package-data must ship miniagents/LICENSE"


def can_build_wheels_offline() -> bool:
    """setuptools with bdist_wheel is installed (looked up on disk: importing setuptools would install an
    import hook for the rest of the test session)."""
    import importlib.util

    setuptools = importlib.util.find_spec("setuptools")
    if setuptools is None or not setuptools.submodule_search_locations:
        return False
    own = Path(list(setuptools.submodule_search_locations)[0], "command", "bdist_wheel.py").exists()
    return own or importlib.util.find_spec("wheel") is not None


@pytest.mark.skipif(not can_build_wheels_offline(), reason="building a wheel offline needs setuptools with "
                                                           "bdist_wheel (setuptools >= 70.1, or the wheel package)")
def test_the_wheel_carries_the_licence(tmp_path):
    source = tmp_path / "source"
    shutil.copytree(PACKAGE, source / "miniagents", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "-w", str(tmp_path / "dist"), str(source)], check=True,
                   timeout=300)
    [built] = (tmp_path / "dist").glob("*.whl")
    assert "miniagents/LICENSE" in zipfile.ZipFile(built).namelist()


# --- run.sh ---------------------------------------------------------------------------------------------

FAKE_PYTHON = """#!/usr/bin/env bash
# Stands in for the venv's python: logs what run.sh asks of it.
echo "$*" >> "$(dirname "$0")/calls.log"
case "$*" in
  "-m pip wheel"*) echo "error: the build backend failed (boom)" >&2; exit 1 ;;
esac
exit 0
"""


@pytest.mark.skipif(sys.platform == "win32" or not shutil.which("bash"), reason="run.sh is a bash script")
def test_run_sh_installs_only_when_pyproject_changed_and_shows_a_failing_build(tmp_path):
    shutil.copy2(ROOT / "run.sh", tmp_path / "run.sh")
    shutil.copy2(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    fake = tmp_path / ".venv" / "bin" / "python"
    fake.parent.mkdir(parents=True)
    fake.write_text(FAKE_PYTHON, encoding="utf-8")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    log = fake.parent / "calls.log"

    def run(*args):
        return subprocess.run(["bash", str(tmp_path / "run.sh"), *args], cwd=str(tmp_path), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=60)

    def installs():
        return sum(line.startswith("-m pip install") for line in log.read_text().splitlines())

    assert run("test", "-k", "x").returncode == 0
    assert installs() == 1 and "-m pytest -q -k x" in log.read_text()
    assert run("test").returncode == 0
    assert installs() == 1  # nothing changed: no pip, so no network
    with open(tmp_path / "pyproject.toml", "a", encoding="utf-8") as f:
        f.write("\n# changed\n")
    assert run("test").returncode == 0
    assert installs() == 2
    failed = run("wheel")
    assert failed.returncode != 0 and b"(boom)" in failed.stderr
