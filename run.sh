#!/usr/bin/env bash
# The only entry points a person needs:
#   ./run.sh test    venv + editable install with the test extra (again only when pyproject.toml changed),
#                    then pytest (exit code = pytest's)
#   ./run.sh demo    the offline walkthrough (python demo.py)
#   ./run.sh wheel   build a wheel into dist/
#   ./run.sh bench   the benchmarks (figures, never pass/fail)
#   ./run.sh         the full check: venv + install, wheel, tests, demo
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
VENV=.venv

STAMP=$VENV/.installed-from  # what the install was made from: pyproject.toml's checksum

# The venv, installed once: pip runs (and needs the package index) only when the venv is new, pyproject.toml
# changed, or the test extra is missing. So once it exists, `./run.sh test` works offline.
venv() {
  if [ ! -x "$VENV/bin/python" ]; then "$PY" -m venv "$VENV"; fi
  local want; want=$(cksum < pyproject.toml)
  if [ "$(cat "$STAMP" 2>/dev/null)" != "$want" ] || ! "$VENV/bin/python" -c 'import pytest, hypothesis' 2>/dev/null
  then
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e '.[test]'
    echo "$want" > "$STAMP"
  fi
}
run_tests() { venv; "$VENV/bin/python" -m pytest -q "$@"; }
# Offline when the venv's setuptools can build wheels itself; else pip fetches a build backend. Either way a
# failing build shows its own error and stops here.
wheel() {
  venv
  if "$VENV/bin/python" -c 'import setuptools.command.bdist_wheel' 2>/dev/null \
     || "$VENV/bin/python" -c 'import setuptools, wheel' 2>/dev/null; then
    "$VENV/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-deps --no-build-isolation -w dist .
  else
    "$VENV/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-deps -w dist .
  fi
  ls dist/*.whl
}
demo() { "$PY" demo.py "$@"; }
bench() { venv; "$VENV/bin/python" benchmarks/run.py "$@"; }

cmd=${1:-all}; [ $# -gt 0 ] && shift
case "$cmd" in
  test) run_tests "$@" ;;
  demo) demo "$@" ;;
  wheel) wheel ;;
  bench) bench "$@" ;;
  all)
    echo "[1/4] venv + install"; venv
    echo "[2/4] wheel"; wheel
    echo "[3/4] tests"; run_tests
    echo "[4/4] demo"; demo ;;
  *) echo "usage: ./run.sh [test|demo|wheel|bench]" >&2; exit 2 ;;
esac
