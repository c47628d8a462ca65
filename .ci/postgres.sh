#!/usr/bin/env bash
# Best effort, called by .ci/run before the tests: the PostgreSQL server programs (Debian's `postgresql`
# package) and the psycopg 3 / psycopg2 drivers in the test venv, for the PostgreSQL cases of the session tests
# (tests/state/test_session_contract.py, tests/state/test_session_postgres.py, tests/state/test_crash.py). The tests start their
# own server in a temporary folder. This script never fails CI: when something cannot be installed it says why,
# and those tests skip with the reason. The drivers go into the test venv only, never into pyproject's extras.
set -u
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
started=$(date +%s)
log=$(mktemp)

have_server() { command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; }

if have_server; then
  echo "postgres: the server programs are installed"
elif ! command -v apt-get >/dev/null 2>&1; then
  echo "postgres: no apt-get on this machine; the PostgreSQL tests will skip"
elif [ "$(id -u)" != 0 ]; then
  echo "postgres: not root, so no apt-get install; the PostgreSQL tests will skip"
elif DEBIAN_FRONTEND=noninteractive apt-get update -qq >"$log" 2>&1 &&
     DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >>"$log" 2>&1 &&
     have_server; then
  echo "postgres: installed Debian's postgresql package"
else
  echo "postgres: apt-get could not install postgresql; the PostgreSQL tests will skip. Its last lines:"
  tail -n 5 "$log"
fi

# ./run.sh creates the venv the same way and keeps one that exists.
if [ -x .venv/bin/python ] || "$PY" -m venv .venv >"$log" 2>&1; then
  for driver in "psycopg[binary]" psycopg2-binary; do
    if .venv/bin/python -m pip install --quiet --disable-pip-version-check "$driver" >"$log" 2>&1; then
      echo "postgres: $driver is in the test venv"
    else
      echo "postgres: pip could not install $driver; the tests that need it will skip. Its last lines:"
      tail -n 5 "$log"
    fi
  done
else
  echo "postgres: could not create .venv; the PostgreSQL tests will skip"
fi
rm -f "$log"
echo "postgres: setup took $(( $(date +%s) - started )) s"
exit 0
