"""What `DBAPISession` does against a real PostgreSQL server that the shared contract
(tests/test_session_contract.py) cannot show on every backend: a connection the server terminates, serialization
failures and deadlocks raised by the server, connections handed over in autocommit mode, tables in upstream's
SQLAlchemy layout, a database user that may not create tables, sessions creating one table named in two cases at
once, and the example of docs/sessions.md, run as written.
Each test runs with psycopg 3 and with psycopg2; tests/postgres.py starts the server (or the tests skip with the
reason).
"""
from __future__ import annotations

import contextlib
import io
import itertools
import json
import threading

import pytest

import doc_pages
from miniagents import dbapi as dbapi_session
from miniagents.session import DBAPISession, SessionStoreError
from openai_server import OpenAITestServer, chat_completion
from session_backends import POSTGRES_KINDS, driver_or_skip, user


_names = itertools.count()


@pytest.fixture(autouse=True)
def no_retry_delay(monkeypatch):
    monkeypatch.setattr(dbapi_session, "RETRY_DELAY", 0)


class Database:
    """A fresh schema on the test server, reached through one driver."""

    def __init__(self, server, driver):
        self.server, self.driver = server, driver
        self.schema = server.create_schema(driver)
        self.dsn = server.dsn_for(self.schema)
        self.connections = 0
        self._sessions = []

    def connect(self, dsn=None, autocommit=False):
        self.connections += 1
        conn = self.driver.connect(dsn or self.dsn)
        conn.autocommit = autocommit
        return conn

    def session(self, session_id="s1", **kwargs):
        connect = kwargs.pop("connect", None) or self.connect
        session = DBAPISession(session_id, connect, **kwargs)
        self._sessions.append(session)
        return session

    def sql(self, statement, params=None):
        conn = self.driver.connect(self.dsn)
        try:
            conn.autocommit = True
            cur = conn.cursor()
            cur.execute(statement, params)
            return cur.fetchall() if cur.description else []
        finally:
            conn.close()

    def close(self):
        for session in self._sessions:
            session.close()


@pytest.fixture(params=POSTGRES_KINDS)
def db(request, postgres_server):
    driver = driver_or_skip(request.param)
    database = Database(postgres_server, driver)
    yield database
    database.close()


def test_a_connection_the_server_terminates_is_replaced_and_the_write_lands_once(db):
    victim = f"victim{next(_names)}"
    s = db.session(connect=lambda: db.connect(f"{db.dsn} application_name={victim}"))
    s.add_items([user("1")])
    killed = db.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
                    (victim,))
    assert killed == [(True,)]
    s.add_items([user("2"), user("3")])
    assert s.get_items() == [user("1"), user("2"), user("3")]
    assert db.connections == 2


@pytest.mark.parametrize("errcode", ["serialization_failure", "deadlock_detected"])
def test_serialization_failures_and_deadlocks_from_the_server_are_retried(db, errcode):
    s = db.session()
    db.sql("CREATE SEQUENCE attempts")  # sequences are not transactional: the count survives the rollbacks
    db.sql("CREATE FUNCTION fail_twice() RETURNS trigger AS $$ BEGIN IF nextval('attempts') <= 2 THEN "
           f"RAISE EXCEPTION 'injected' USING ERRCODE = '{errcode}'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql")
    db.sql("CREATE TRIGGER fail_twice BEFORE INSERT ON agent_messages FOR EACH ROW EXECUTE FUNCTION fail_twice()")
    s.add_items([user("1"), user("2")])
    assert s.get_items() == [user("1"), user("2")]
    assert db.sql("SELECT last_value FROM attempts") == [(4,)]  # 2 failed attempts (1 row each), then 2 rows


def test_retries_against_the_server_are_bounded(db):
    s = db.session(max_attempts=2)
    db.sql("CREATE FUNCTION always_fail() RETURNS trigger AS $$ BEGIN "
           "RAISE EXCEPTION 'injected' USING ERRCODE = 'serialization_failure'; END $$ LANGUAGE plpgsql")
    db.sql("CREATE TRIGGER always_fail BEFORE INSERT ON agent_messages FOR EACH ROW EXECUTE FUNCTION always_fail()")
    with pytest.raises(SessionStoreError, match="failed after 2 attempt"):
        s.add_items([user("1")])
    assert db.sql("SELECT COUNT(*) FROM agent_messages") == [(0,)]


def test_a_connection_in_autocommit_mode_still_writes_all_or_nothing(db):
    s = db.session(connect=lambda: db.connect(autocommit=True))
    db.sql("CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN IF NEW.message_data LIKE '%boom%' THEN "
           "RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql")
    db.sql("CREATE TRIGGER refuse BEFORE INSERT ON agent_messages FOR EACH ROW EXECUTE FUNCTION refuse()")
    with pytest.raises(Exception, match="refused"):
        s.add_items([user("ok"), user("boom")])
    assert s.get_items() == [] and db.sql("SELECT COUNT(*) FROM agent_sessions") == [(0,)]


SQLALCHEMY_LAYOUT = [  # what upstream's SQLAlchemySession creates on PostgreSQL
    "CREATE TABLE agent_sessions (session_id VARCHAR NOT NULL, "
    "created_at TIMESTAMP WITHOUT TIME ZONE DEFAULT CURRENT_TIMESTAMP NOT NULL, "
    "updated_at TIMESTAMP WITHOUT TIME ZONE DEFAULT CURRENT_TIMESTAMP NOT NULL, PRIMARY KEY (session_id))",
    "CREATE TABLE agent_messages (id SERIAL NOT NULL, session_id VARCHAR NOT NULL, message_data TEXT NOT NULL, "
    "created_at TIMESTAMP WITHOUT TIME ZONE DEFAULT CURRENT_TIMESTAMP NOT NULL, PRIMARY KEY (id), "
    "FOREIGN KEY(session_id) REFERENCES agent_sessions (session_id) ON DELETE CASCADE)",
    "CREATE INDEX idx_agent_messages_session_time ON agent_messages (session_id, created_at)",
]


def test_tables_in_upstreams_sqlalchemy_layout_load_and_take_new_rows(db):
    for statement in SQLALCHEMY_LAYOUT:
        db.sql(statement)
    old = [user("from upstream"), {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
           {"type": "function_call_output", "call_id": "c1", "output": "ok"}]
    db.sql("INSERT INTO agent_sessions (session_id) VALUES ('conv')")
    for item in old:
        db.sql("INSERT INTO agent_messages (session_id, message_data) VALUES ('conv', %s)", (json.dumps(item),))
    s = db.session("conv")
    assert s.get_items() == old
    s.add_items([user("here")])
    assert s.claim_call("run", "c2") == (True, None)
    stored = db.sql("SELECT message_data FROM agent_messages ORDER BY id")
    assert [json.loads(r[0]) for r in stored] == old + [user("here")]


def test_a_table_name_in_capitals_is_the_table_the_unquoted_name_made(db):
    db.sql("CREATE TABLE My_Messages (id BIGSERIAL PRIMARY KEY, session_id TEXT NOT NULL, message_data TEXT NOT NULL)")
    db.sql("INSERT INTO My_Messages (session_id, message_data) VALUES ('s1', %s)", (json.dumps(user("before")),))
    s = db.session(messages_table="My_Messages")  # quoted as PostgreSQL folds it: my_messages, not "My_Messages"
    s.add_items([user("after")])
    assert s.get_items() == [user("before"), user("after")]


def test_sessions_on_one_table_named_in_two_cases_can_create_it_at_once(db):
    """"S" and "s" are one table: both creators queue on one schema lock (they collided in the catalog)."""
    errors = []

    def open_session(names, start):
        start.wait()
        try:
            db.session(**names).add_items([user("x")])
        except Exception as error:  # noqa: BLE001 - any failure is the finding
            errors.append(error)
    for k in range(8):
        upper = {"sessions_table": f"S{k}", "messages_table": f"M{k}", "tool_calls_table": f"T{k}"}
        start = threading.Barrier(2)
        threads = [threading.Thread(target=open_session, args=(names, start))
                   for names in (upper, {key: name.lower() for key, name in upper.items()})]
        [thread.start() for thread in threads]
        [thread.join() for thread in threads]
    assert errors == []


def test_a_database_user_that_may_not_create_tables_works_with_create_tables_false(db):
    db.session()  # the owner creates the tables once
    role = f"app{next(_names)}_{db.schema}"
    for statement in (f"CREATE ROLE {role} LOGIN", f"GRANT USAGE ON SCHEMA {db.schema} TO {role}",
                      f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {db.schema} TO {role}",
                      f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA {db.schema} TO {role}"):
        db.sql(statement)
    as_app = db.server.dsn_for(db.schema, user=role)
    opened = []
    with pytest.raises(Exception, match="permission denied"):
        db.session(connect=lambda: opened.append(db.connect(as_app)) or opened[-1])
    assert opened[0].closed  # the failed constructor closed its connection
    s = db.session(connect=lambda: db.connect(as_app), create_tables=False)
    s.add_items([user("1")], once="r/turn-1")
    assert s.claim_call("r", "c1") == (True, None)
    assert s.get_items() == [user("1")]


def test_the_docs_example_runs_as_written(db, monkeypatch):
    if db.driver.__name__ != "psycopg":
        pytest.skip("the example of docs/sessions.md uses psycopg 3")
    [code] = doc_pages.python_blocks(doc_pages.section(doc_pages.read("docs/sessions.md"),
                                                      "## Sessions on a shared database"))
    example_dsn = "postgresql://app:secret@db.internal:5432/agents"
    assert f'DSN = "{example_dsn}"' in code
    server = OpenAITestServer()
    try:
        server.reply(chat_completion("Hello there!"))
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "x")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code.replace(example_dsn, db.dsn), "docs/sessions.md", "exec"), {"__name__": "docs"})
    finally:
        server.close()
    assert out.getvalue() == "Hello there!\n"
    stored = [json.loads(r[0]) for r in db.sql("SELECT message_data FROM agent_messages ORDER BY id")]
    assert stored[0] == {"content": "Hello!", "role": "user"} and stored[-1]["role"] == "assistant"
