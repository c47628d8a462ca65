"""The session backends the shared tests run against, described by a JSON-ready spec so that worker processes
(tests/helpers/session_worker.py, tests/helpers/crash_session_run.py) open exactly what the test opened.

    {"kind": "sqlite", "path": ...}          SQLiteSession on a file
    {"kind": "dbapi-sqlite3", "path": ...}   DBAPISession over sqlite3.connect(path)
    {"kind": "psycopg", "dsn": ...}          DBAPISession over psycopg 3 (PostgreSQL)
    {"kind": "psycopg2", "dsn": ...}         DBAPISession over psycopg2 (PostgreSQL)

`raw_connection(spec)` is a separate connection in autocommit mode, for looking at (or tampering with) the rows
behind the session's back; `raw_sql` turns the `?` placeholders the tests write into the driver's. `user`,
`call`, `output` and `assistant` build the items the session tests store.
"""
from __future__ import annotations

import importlib
import sqlite3

def user(text):
    return {"role": "user", "content": text}


def call(call_id, name="lookup"):
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": "{}"}


def output(call_id, text="ok"):
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def assistant(text):
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}


KINDS = ("sqlite", "dbapi-sqlite3", "psycopg", "psycopg2")
POSTGRES_KINDS = ("psycopg", "psycopg2")


def open_session(spec: dict, session_id: str = "s1", **kwargs):
    from miniagents.session import DBAPISession, SQLiteSession

    kind = spec["kind"]
    if kind == "sqlite":
        return SQLiteSession(session_id, spec["path"], **kwargs)
    if kind == "dbapi-sqlite3":
        return DBAPISession(session_id, lambda: sqlite3.connect(spec["path"], timeout=30, check_same_thread=False),
                            **kwargs)
    driver = importlib.import_module(kind)
    return DBAPISession(session_id, lambda: driver.connect(spec["dsn"]), **kwargs)


def driver_or_skip(name: str):
    """The driver module, or a pytest skip saying why it cannot be used (missing, or its library is broken)."""
    import pytest

    try:
        return importlib.import_module(name)
    except ImportError as exc:
        pytest.skip(f"the {name} driver is not usable here ({exc}); pip install it to run these tests")


def import_driver(spec: dict) -> None:
    """Import the spec's driver now (a worker does it before it says "ready", so its first run starts at once)."""
    if spec["kind"] in POSTGRES_KINDS:
        importlib.import_module(spec["kind"])


def raw_connection(spec: dict):
    if spec["kind"] in POSTGRES_KINDS:
        conn = importlib.import_module(spec["kind"]).connect(spec["dsn"])
        conn.autocommit = True
        return conn
    return sqlite3.connect(spec["path"], isolation_level=None, timeout=30)


def raw_sql(spec: dict, sql: str) -> str:
    return sql.replace("?", "%s") if spec["kind"] in POSTGRES_KINDS else sql


def fail_inserts_containing(spec: dict, marker: str) -> str:
    """SQL for a trigger that makes the database refuse a message row whose data contains `marker`."""
    if spec["kind"] in POSTGRES_KINDS:
        return (f"CREATE FUNCTION refuse_{marker}() RETURNS trigger AS $$ BEGIN "
                f"IF NEW.message_data LIKE '%{marker}%' THEN RAISE EXCEPTION 'refused {marker}'; END IF; "
                f"RETURN NEW; END $$ LANGUAGE plpgsql; "
                f"CREATE TRIGGER refuse_{marker} BEFORE INSERT ON agent_messages FOR EACH ROW "
                f"EXECUTE FUNCTION refuse_{marker}()")
    return (f"CREATE TRIGGER refuse_{marker} BEFORE INSERT ON agent_messages "
            f"WHEN NEW.message_data LIKE '%{marker}%' BEGIN SELECT RAISE(ABORT, 'refused {marker}'); END")
