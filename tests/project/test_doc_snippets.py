"""Every ```python block of README.md, ARCHITECTURE.md and docs/*.md runs, offline, and prints what its comments
say: each in a fresh folder, twice (a reader runs a block again: a file it wrote must not change what it prints),
with the local test server (tests/openai_server.py) in place of the model server a block names, and a `psycopg`
whose connections are sqlite3's in place of PostgreSQL. A block added to a page is run
here without a word; one that cannot run offline fails here until this file learns to fake what it needs.

Dedicated tests check more of some blocks (what the server was sent, the file a recording writes): the hello world,
the local server and the usage limits in tests/project/test_readme.py, the recording in
tests/recording/test_docs_recording.py, the copying recipe under `python -I` in tests/project/test_self_contained.py,
and the PostgreSQL example below and in tests/state/test_session_postgres.py (against a real server, when there is
one)."""
import contextlib
import io
import json
import sqlite3
import sys
import types

import pytest

import doc_pages
from openai_server import chat_completion

LOCAL_SERVER = "http://localhost:11434/v1"  # the local model server the blocks name
# The real MCP server a block names (a Node.js package serving a folder), and the test server in its place.
REAL_MCP_SERVER = '{"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv/notes"]}'
TEST_MCP_SERVER = f'{{"command": {sys.executable!r}, "args": ["tests/mcp/mcp_test_server.py"]}}'


def python_blocks():
    """(page, line of the block's fence, code) for every ```python block of every page."""
    found = []
    for name in doc_pages.pages():
        text = doc_pages.read(name)
        start = 0
        for code in doc_pages.python_blocks(text):
            fence = text.index("```python\n" + code, start)
            found.append((name, text.count("\n", 0, fence) + 1, code))
            start = fence + len(code)
    return found


BLOCKS = python_blocks()

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


def test_every_python_block_of_the_pages_is_found():
    counted = {name: doc_pages.read(name).count("```python") for name in doc_pages.pages()}
    found = {name: sum(1 for page, _, _ in BLOCKS if page == name) for name in doc_pages.pages()}
    assert found == counted  # a fence the pattern misses would be a block no test runs
    assert found["README.md"] >= 3 and sum(found.values()) > found["README.md"]


@pytest.mark.parametrize("name, line, code", BLOCKS, ids=[f"{name}:{line}" for name, line, _ in BLOCKS])
def test_every_python_block_runs_offline_and_prints_what_its_comments_say(name, line, code, server, tmp_path,
                                                                          monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs").mkdir()  # a folder for the Workspace block to read
    (tmp_path / "tests").symlink_to(doc_pages.ROOT_PATH / "tests")  # blocks run "from the repository's root"
    monkeypatch.setattr(sys, "path", list(sys.path))  # the copying recipe puts its folder first
    monkeypatch.setitem(sys.modules, "psycopg", fake_psycopg(tmp_path / "agents.db", []))
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)  # restored after the test, also when a block sets it
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    expected = doc_pages.printed_comments(code)
    for _ in range(2):  # run again in its folder, as a reader does, it prints the same
        for _ in range(3):
            server.reply(chat_completion("Hello there!"))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile("\n" * line + code.replace(LOCAL_SERVER, server.url).replace(REAL_MCP_SERVER,
                                                                                       TEST_MCP_SERVER), name, "exec"),
                 {"__name__": "docs", "__file__": str(tmp_path / "app.py")})
        if expected and len(expected) == code.count("print("):  # every print says what it prints
            assert out.getvalue().splitlines() == expected
