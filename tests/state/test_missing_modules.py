"""The sessions on a Python built without a standard-library module they could need (issue 31).

Minimal and embedded builds of Python often lack `_sqlite3` (the C part of `sqlite3`) or `zlib`. Each test runs
a fresh interpreter in which a finder first on `sys.meta_path` refuses the module, as a Python without it does
(`ModuleNotFoundError` naming it), and reports what miniagents did as JSON.

- Without `_sqlite3`, `SQLiteSession` is a feature missing, not a crash: `hasattr` answers False, reading the
  name raises an AttributeError whose cause is the typed `MissingFeatureError` (an `AgentsException` and an
  `ImportError` naming the feature and the module), importing its module raises that error, and
  `from miniagents import *`, a run, the session contract and `DBAPISession` (which imports no sqlite3) all work.
- Without `zlib`, both sessions work: only PostgreSQL's schema lock hashed table names with it, and it now uses
  `binascii.crc32`, the same number.
- Without `asyncio`, every synchronous run works; an async function the run must await (an async tool) raises the
  typed error out of the run instead of becoming a failure text the model cannot fix.

The shells and the HTTP adapters too:
- Without `zlib`, the MCP shell imports: it cut long tool names with `zlib.crc32` and now uses `binascii.crc32`,
  the same number; so `hasattr(miniagents, "MCPServerStdio")` and `from miniagents import *` work.
- Without `select` or `_posixsubprocess` (the MCP shell and the Workspace start processes), a shell that cannot be
  imported is a missing feature, as a shell left out is: `hasattr` answers False, `from miniagents import *`
  skips its names, and `from miniagents import MCPServerStdio` raises the `MissingFeatureError` naming the shell and
  the module (a bare ModuleNotFoundError escaped all three).
  Imported by its module path (`from miniagents.mcp import MCPServerStdio`, as docs/mcp.md writes it, `from
  miniagents.capabilities import Workspace`, `import miniagents.upstream`, whose runner imports asyncio, which needs
  `select`) too: the same typed error, raised where the shell imports the module (`errors.needs`).
- Without `_socket` (WASI) or `select` (which `socket` imports), a model over HTTP is the typed error naming it (a
  bare ModuleNotFoundError came out of the run).
- Without `fcntl` (WASI), a `Recorder` cannot lock its file: the typed error naming `fcntl` (its lock fell back to
  Windows' `msvcrt`, a bare ModuleNotFoundError naming a module of another system).
- Without `unicodedata` (so without the idna codec, which every host name is looked up by), a model over HTTP
  raises the `MissingFeatureError` naming it, plain and streamed (it was a bare LookupError, "unknown encoding:
  idna", from deep in the socket module).
"""
from __future__ import annotations

import binascii
import json
import os
import subprocess
import sys
import textwrap
import zlib

import pytest

from session_backends import driver_or_skip

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Runs first in the child: refuses the modules named in argv[1] (which must not be loaded yet), then makes the
# repository importable. Whatever the test's code prints last is its JSON report.
PRELUDE = '''
import json, sys
BLOCKED = set(sys.argv[1].split(","))
assert not BLOCKED & set(sys.modules), sorted(BLOCKED & set(sys.modules))


class Blocker:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Blocker)
sys.path.insert(0, sys.argv[2])
'''

A_TURN = '''
from miniagents import Agent, Runner
from miniagents.testing import ScriptedModel, assistant_message


def two_turns(session):
    """Two runs on one session: the second sees the first's turn."""
    model = ScriptedModel([[assistant_message("hi")], [assistant_message("again")]])
    agent = Agent(name="A", model=model)
    Runner.run_sync(agent, "hello", session=session)
    Runner.run_sync(agent, "hello again", session=session)
    return [len(call.input) for call in model.calls], len(session.get_items())
'''


def without(modules, code, *args):
    """Run `code` in a fresh Python that lacks `modules`; its last line of output, as JSON."""
    source = PRELUDE + A_TURN + textwrap.dedent(code)
    done = subprocess.run([sys.executable, "-I", "-c", source, ",".join(modules), ROOT, *args],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_blocker_takes_the_module_away():
    report = without(["_sqlite3", "zlib"], '''
        said = {}
        for name in ("sqlite3", "zlib"):
            try:
                __import__(name)
            except ModuleNotFoundError as error:
                said[name] = error.name
        print(json.dumps(said))
    ''')
    assert report == {"sqlite3": "_sqlite3", "zlib": "zlib"}


def test_without_sqlite3_sqlite_session_is_a_missing_feature_with_a_typed_error():
    report = without(["_sqlite3"], '''
        import miniagents
        from miniagents import AgentsException, MissingFeatureError

        report = {"hasattr": hasattr(miniagents, "SQLiteSession")}
        try:
            miniagents.SQLiteSession("chat")
        except AttributeError as error:
            cause = error.__cause__
            report["read"] = str(error)
            report["cause"] = [type(cause).__name__, isinstance(cause, AgentsException),
                               isinstance(cause, ImportError), cause.feature, cause.name, str(cause) == str(error)]
        for statement in ("import miniagents.sqlite_session", "from miniagents.sqlite_session import SQLiteSession"):
            try:
                exec(statement)
            except MissingFeatureError as error:
                report[statement] = [error.feature, error.name]
        print(json.dumps(report))
    ''')
    assert report["hasattr"] is False
    assert "SQLiteSession needs the standard-library module '_sqlite3'" in report["read"]
    assert "which this Python" in report["read"] and "was built without" in report["read"]
    assert report["cause"] == ["MissingFeatureError", True, True, "SQLiteSession", "_sqlite3", True]
    assert report["import miniagents.sqlite_session"] == ["SQLiteSession", "_sqlite3"]
    assert report["from miniagents.sqlite_session import SQLiteSession"] == ["SQLiteSession", "_sqlite3"]


def test_without_sqlite3_everything_else_works():
    report = without(["_sqlite3"], '''
        from miniagents import *  # noqa: F401,F403
        import miniagents
        from miniagents.session import SessionItems

        class Memory(SessionABC):
            """A session of one's own, in a list: the contract needs no database."""

            def __init__(self):
                self.session_id, self.session_settings, self.items = "m", SessionSettings(), []

            def get_items(self, limit=None):
                return SessionItems(self.items if limit is None else self.items[-limit:])

            def add_items(self, items):
                self.items += items

            def pop_item(self):
                return self.items.pop() if self.items else None

            def clear_session(self):
                self.items.clear()

        calls, stored = two_turns(Memory())
        print(json.dumps({"star": "SQLiteSession" not in globals() and "SQLiteSession" not in miniagents.__all__,
                          "names": [n in globals() for n in ("Agent", "DBAPISession", "SessionStoreError")],
                          "calls": calls, "stored": stored, "sqlite3": "sqlite3" in sys.modules}))
    ''')
    assert report == {"star": True, "names": [True, True, True], "calls": [1, 3], "stored": 4, "sqlite3": False}


def test_without_sqlite3_importing_the_name_from_the_package_raises_the_typed_error():
    report = without(["_sqlite3"], '''
        from miniagents import MissingFeatureError
        try:
            from miniagents import SQLiteSession  # noqa: F401
        except MissingFeatureError as error:
            print(json.dumps([error.feature, error.name]))
        except ImportError as error:
            print(json.dumps(str(error)))
    ''')
    assert report == ["SQLiteSession", "_sqlite3"]


def test_without_sqlite3_dbapi_session_works_on_postgresql(postgres_server):
    driver_or_skip("psycopg")
    dsn = postgres_server.dsn_for(postgres_server.create_schema(driver_or_skip("psycopg")))
    report = without(["_sqlite3"], '''
        import psycopg
        from miniagents import DBAPISession

        with DBAPISession("pg", lambda: psycopg.connect(sys.argv[3])) as session:
            print(json.dumps(two_turns(session) + ("sqlite3" in sys.modules,)))
    ''', dsn)
    assert report == [[1, 3], 4, False]


def test_without_zlib_both_sessions_work(tmp_path):
    lock_key = zlib.crc32(b"agent_sessions agent_messages agent_tool_calls")  # what the lock was named before
    report = without(["zlib"], '''
        import sqlite3
        from miniagents import DBAPISession, SQLiteSession
        from miniagents.dbapi import POSTGRESQL

        folder = sys.argv[3]
        with SQLiteSession("s", folder + "/sqlite.db") as session:
            sqlite = two_turns(session)
        with DBAPISession("d", lambda: sqlite3.connect(folder + "/dbapi.db")) as session:
            dbapi = two_turns(session)
        lock = POSTGRESQL.schema_lock(("agent_sessions", "agent_messages", "agent_tool_calls"))
        print(json.dumps([sqlite, dbapi, lock, "zlib" in sys.modules]))
    ''', str(tmp_path))
    assert report == [[[1, 3], 4], [[1, 3], 4], f"SELECT pg_advisory_xact_lock({lock_key})", False]


def test_without_asyncio_sync_runs_work_and_an_async_tool_is_a_missing_feature():
    report = without(["asyncio"], '''
        from miniagents import MissingFeatureError, function_tool
        from miniagents import *  # noqa: F401,F403
        from miniagents.testing import function_call

        report = {"sync": Runner.run_sync(Agent(name="A", model=ScriptedModel([[assistant_message("hi")]])),
                                          "hello").final_output}

        @function_tool
        async def lookup(order_id: str) -> str:
            return "shipped"

        model = ScriptedModel([[function_call("lookup", {"order_id": "A1"}, call_id="c1")], [assistant_message("ok")]])
        try:
            Runner.run_sync(Agent(name="A", model=model, tools=[lookup]), "where is A1?")
        except MissingFeatureError as error:
            report["async tool"] = [error.name, "async function" in str(error)]
        report["asyncio loaded"] = "asyncio" in sys.modules
        print(json.dumps(report))
    ''')
    assert report == {"sync": "hi", "async tool": ["asyncio", True], "asyncio loaded": False}


def test_without_zlib_the_mcp_shell_imports_and_cuts_long_names_with_the_same_checksum():
    long_name = "x" * 80
    report = without(["zlib"], f'''
        import miniagents
        star = {{}}
        exec("from miniagents import *", star)
        from miniagents.mcp.plugin import public_name
        print(json.dumps([hasattr(miniagents, "MCPServerStdio"), "MCPServerStdio" in star,
                          public_name({long_name!r}, None, False), "zlib" in sys.modules]))
    ''')
    assert report == [True, True, "x" * 55 + f"_{binascii.crc32(long_name.encode()):08x}", False]


def test_a_shell_this_python_cannot_import_is_a_missing_feature_naming_the_shell_and_the_module():
    report = without(["select", "_posixsubprocess"], '''
        import miniagents
        from miniagents import MissingFeatureError

        star = {}
        exec("from miniagents import *", star)
        report = {"hasattr": [hasattr(miniagents, n) for n in ("MCPServerStdio", "Workspace", "trace")],
                  "star": ["MCPServerStdio" in star, "Workspace" in star, "Agent" in star]}
        try:
            miniagents.MCPServerStdio
        except AttributeError as error:
            report["cause"] = [type(error.__cause__).__name__, str(error) == str(error.__cause__)]
        for name in ("MCPServerStdio", "Workspace"):
            try:
                exec(f"from miniagents import {name}")
            except MissingFeatureError as error:
                report[name] = [error.feature, error.name, str(error)]
        print(json.dumps(report))
    ''')
    assert report["hasattr"] == [False, False, True]
    assert report["star"] == [False, False, True]
    assert report["cause"] == ["MissingFeatureError", True]
    feature, name, text = report["MCPServerStdio"]
    assert [feature, name] == ["MCPServerStdio (the shell miniagents.mcp)", "select"]
    assert "needs the standard-library module 'select', which this Python" in text and "was built without" in text
    assert report["Workspace"][:2] == ["Workspace (the shell miniagents.capabilities)", "_posixsubprocess"]


def test_without_unicodedata_a_model_over_http_is_a_missing_feature():
    report = without(["unicodedata"], '''
        import asyncio
        from miniagents import Agent, MissingFeatureError, OpenAIChatCompletionsModel, OpenAIResponsesModel, Runner

        report = []
        for make in (OpenAIChatCompletionsModel, OpenAIResponsesModel):
            agent = Agent(name="a", model=make(model="m", base_url="http://127.0.0.1:9/v1", api_key="k"))
            try:
                Runner.run_sync(agent, "hi")
            except MissingFeatureError as error:
                report.append([error.name, str(error).startswith("a connection to a model's server")])
            streamed = Runner.run_streamed(agent, "hi")

            async def drain():
                async for _ in streamed.stream_events():
                    pass
            try:
                asyncio.run(drain())
            except MissingFeatureError as error:
                report.append(error.name)
        print(json.dumps(report))
    ''')
    assert report == [["unicodedata", True], "unicodedata"] * 2


@pytest.mark.parametrize("blocked, statement, feature", [
    ("select", "from miniagents.mcp import MCPServerStdio", "MCPServerStdio (the shell miniagents.mcp)"),
    ("_posixsubprocess", "import miniagents.mcp", "MCPServerStdio (the shell miniagents.mcp)"),
    ("_posixsubprocess", "from miniagents.capabilities import Workspace",
     "Workspace (the shell miniagents.capabilities)"),
    ("select", "import miniagents.upstream as agents", "the shell miniagents.upstream"),
])
def test_a_shell_imported_by_its_module_path_on_a_python_without_a_module_it_needs_is_a_missing_feature(
        blocked, statement, feature):
    """The docs' own `from miniagents.mcp import MCPServerStdio` (and `import miniagents.upstream`, whose runner is
    asyncio's, which needs `select`) raised a bare ModuleNotFoundError from deep in `subprocess` or `asyncio`."""
    report = without([blocked], f'''
        from miniagents import AgentsException
        try:
            exec({statement!r})
            report = "imported"
        except ImportError as error:
            report = [type(error).__name__, isinstance(error, AgentsException), error.name, str(error)]
        print(json.dumps(report))
    ''')
    kind, typed, name, text = report
    assert [kind, typed, name] == ["MissingFeatureError", True, blocked]
    assert text.startswith(f"{feature} needs the standard-library module {blocked!r}, which this Python")


def test_without_fcntl_a_recorder_is_a_missing_feature_naming_fcntl(tmp_path):
    """Its lock fell back to Windows' msvcrt on any Python without fcntl (WASI): a bare ModuleNotFoundError naming
    a module of another system."""
    report = without(["fcntl"], '''
        from miniagents.recording import Recorder
        from miniagents import MissingFeatureError
        try:
            Recorder(sys.argv[3])
            report = "recording"
        except MissingFeatureError as error:
            report = [error.name, str(error).startswith("Recorder (the lock on its file) needs")]
        print(json.dumps(report))
    ''', str(tmp_path / "calls.jsonl"))
    assert report == ["fcntl", True]


@pytest.mark.parametrize("blocked", ["_socket", "select"])
def test_without_sockets_a_model_over_http_is_a_missing_feature(blocked):
    """A Python without `_socket` (WASI), or without `select`, which `socket` imports: a model over HTTP raised a bare
    ModuleNotFoundError out of the run (a streamed run needs asyncio, which needs both)."""
    report = without([blocked], '''
        from miniagents import Agent, MissingFeatureError, OpenAIChatCompletionsModel, OpenAIResponsesModel, Runner

        report = []
        for make in (OpenAIChatCompletionsModel, OpenAIResponsesModel):
            agent = Agent(name="a", model=make(model="m", base_url="http://127.0.0.1:9/v1", api_key="k"))
            try:
                Runner.run_sync(agent, "hi")
            except MissingFeatureError as error:
                report.append([error.name, str(error).startswith("a model's server reached over HTTP needs")])
        print(json.dumps(report))
    ''')
    assert report == [[blocked, True]] * 2
