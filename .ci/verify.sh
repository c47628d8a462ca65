#!/usr/bin/env bash
# Verification beyond the README's test command, run by .ci/run right after `./run.sh test` passed:
#   1. the suite on the oldest and newest supported Pythons (3.9 and 3.13), each in its own venv (.venv-py*/);
#      an interpreter that is not installed is reported and skipped, not a failure
#   2. the pydantic interop tests against real pydantic, in a venv used only for that (.venv-pydantic/)
#   3. a fixed sample of generated mutants, and the full curated mutation check
# The vendoring test (tests/project/test_vendoring.py) runs inside every suite run, on every installed Python.
# Each step prints its own wall time; everything runs on the two cores CI has (steps 1 and 2 side by side).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
TEST_PACKAGES=(pytest hypothesis)

step() { echo; echo "=== $* ==="; STEP_STARTED=$SECONDS; }
took() { echo "--- $(( SECONDS - STEP_STARTED )) s"; }

# The newest installed patch release of Python $1 (e.g. 3.9): from pyenv when present, else pythonX.Y on PATH.
find_python() {
  local version=$1 root candidate
  if command -v pyenv >/dev/null 2>&1; then
    root=$(pyenv root)
    for candidate in $(ls -d "$root"/versions/"$version".* 2>/dev/null | sort -V -r); do
      if [ -x "$candidate/bin/python3" ]; then echo "$candidate/bin/python3"; return 0; fi
    done
  fi
  command -v "python$version" 2>/dev/null
}

# A venv at $1 made by interpreter $2 with the packages that follow; the repository is put on the path by
# PYTHONPATH when the venv runs the suite, so nothing of the repository is installed into it.
make_venv() {
  local venv=$1 python=$2; shift 2
  [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
}

suite_on() {
  local version=$1 python
  step "the suite on Python $version"
  if ! python=$(find_python "$version"); then
    echo "Python $version is not installed here: skipped (install it, e.g. with pyenv, to run this step)"
    return 0
  fi
  echo "using $python ($("$python" --version 2>&1))"
  make_venv ".venv-py$version" "$python" "${TEST_PACKAGES[@]}"
  PYTHONPATH="$PWD" ".venv-py$version/bin/python" -m pytest -q -p no:cacheprovider
  took
}

pydantic_interop() {
  step "pydantic interop tests against real pydantic"
  make_venv .venv-pydantic "$PY" "${TEST_PACKAGES[@]}" "pydantic>=2"
  echo "pydantic $(.venv-pydantic/bin/python -c 'import pydantic; print(pydantic.VERSION)')"
  local out
  out=$(PYTHONPATH="$PWD" .venv-pydantic/bin/python -m pytest -q -p no:cacheprovider -rs \
        tests/schemas/test_interop.py tests/schemas/test_schema.py 2>&1) || { echo "$out"; return 1; }
  echo "$out" | tail -n 3
  if echo "$out" | grep -qi "could not import 'pydantic'\|pydantic v1"; then
    echo "pydantic tests were skipped although pydantic is installed"; return 1
  fi
  took
}

mutants() {
  # The suite just passed, so the mutation checks skip their own unmutated baseline run. The sample's kill-rate
  # floor is a tripwire for a broken check (a sample of 16 moves with every code change), not the goal (90%).
  step "a sample of generated mutants (16, seed 1)"
  .venv/bin/python tests/mutation_check.py --generated --sample 16 --seed 1 --min-kill-rate 25 --no-baseline
  took
  step "the curated mutation check"
  .venv/bin/python tests/mutation_check.py --no-baseline
  took
}

# The two suites and the pydantic tests run side by side, each into its own log, printed whole when all have
# ended: a suite keeps about one core busy (446 CPU seconds in an 852 s run on a loaded machine), so on CI's two
# cores the three take little longer than the slowest alone. Each writes its bytecode apart (PYTHONPYCACHEPREFIX):
# nothing they run finds the other's half-written files in the package's __pycache__ folders.
side_by_side() {
  local logs pids=() names=("$@") failed=0 i
  step "side by side: ${names[*]}"
  logs=$(mktemp -d)
  for i in "${!names[@]}"; do
    PYTHONPYCACHEPREFIX="$logs/pycache-$i" ${names[$i]} > "$logs/$i.log" 2>&1 &
    pids+=($!)
  done
  for i in "${!names[@]}"; do
    if ! wait "${pids[$i]}"; then failed=1; fi
    cat "$logs/$i.log"
    echo
  done
  rm -rf "$logs"
  echo "=== side by side: all ended"
  took
  return "$failed"
}

side_by_side "suite_on 3.9" "suite_on 3.13" pydantic_interop
mutants
