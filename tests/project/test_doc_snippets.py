"""The ```python blocks of the docs that need what a test machine lacks run here against stand-ins: the PostgreSQL
example of docs/sessions.md with a `psycopg` whose connections are sqlite3's (tests/state/test_session_postgres.py
runs it against a real server when there is one)."""
import contextlib
import io
import json
import sqlite3
import sys
import types

import doc_pages
from openai_server import chat_completion

EXAMPLE_DSN = "postgresql://app:secret@db.internal:5432/agents"


def fake_psycopg(path, dsns):
    """A `psycopg` module whose `connect(dsn)` records the DSN and opens the sqlite3 file at `path`."""
    module = types.ModuleType("psycopg")

    def connect(dsn):
        dsns.append(dsn)
        return sqlite3.connect(str(path), check_same_thread=False)

    module.connect = connect
    return module


def test_the_shared_database_example_stores_the_conversation_through_the_driver_it_imports(server, tmp_path,
                                                                                           monkeypatch):
    [code] = doc_pages.python_blocks(doc_pages.section(doc_pages.read("docs/sessions.md"),
                                                      "## Sessions on a shared database"))
    assert "import psycopg" in code and f'DSN = "{EXAMPLE_DSN}"' in code
    dsns, database = [], tmp_path / "agents.db"
    monkeypatch.setitem(sys.modules, "psycopg", fake_psycopg(database, dsns))
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    server.reply(chat_completion("Hello there!"))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/sessions.md", "exec"), {"__name__": "docs"})
    assert out.getvalue() == "Hello there!\n"
    assert dsns and set(dsns) == {EXAMPLE_DSN}
    assert server.requests[0]["body"]["messages"][-1] == {"role": "user", "content": "Hello!"}
    with contextlib.closing(sqlite3.connect(str(database))) as conn:
        rows = conn.execute("SELECT session_id, message_data FROM agent_messages ORDER BY id").fetchall()
    assert {session for session, _ in rows} == {"conversation-42"}
    stored = [json.loads(data) for _, data in rows]
    assert stored[0] == {"content": "Hello!", "role": "user"} and stored[-1]["role"] == "assistant"
