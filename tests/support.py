"""Small helpers the kernel tests share: build an agent on a scripted model, read what a model was sent."""
import json
import os
import sqlite3

from miniagents import Agent
from miniagents.testing import ScriptedModel

TESTS = os.path.dirname(os.path.abspath(__file__))  # tests/: helpers, golden files, scripts
ROOT = os.path.dirname(TESTS)  # the repository
REDACTED = "An error occurred while running the tool. Please try again."


def make_agent(steps, name="Assistant", **kw):
    """An agent whose model plays `steps`; returns (agent, model)."""
    model = ScriptedModel(steps)
    return Agent(name=name, model=model, **kw), model


def outputs_sent(call):
    """{call_id: output} of every function_call_output a recorded model call received."""
    return {i["call_id"]: i["output"] for i in call.input if i.get("type") == "function_call_output"}


def json_values(value):
    """Every key and value inside a JSON-like structure (dicts, lists, tuples), depth first, `value` first."""
    yield value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from json_values(k)
            yield from json_values(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from json_values(v)


def kinds(items):
    """A compact view of a transcript: 'user', 'msg', 'call:<id>', 'out:<id>'."""
    out = []
    for i in items:
        t = i.get("type")
        if t == "function_call":
            out.append(f"call:{i['call_id']}")
        elif t == "function_call_output":
            out.append(f"out:{i['call_id']}")
        elif i.get("role") == "user":
            out.append("user")
        elif t == "message" or i.get("role") == "assistant":
            out.append("msg")
        else:
            out.append(t)
    return out


def stored_rows(db):
    """Every item a SQLiteSession stored in the file `db`, oldest first, read with a separate connection."""
    conn = sqlite3.connect(str(db))
    try:
        return [json.loads(r[0]) for r in conn.execute("SELECT message_data FROM agent_messages ORDER BY id")]
    finally:
        conn.close()
