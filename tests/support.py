"""Small helpers the kernel tests share: build an agent on a scripted model, read what a model was sent."""
import json
import os
import sqlite3

from miniagents import Agent, GuardrailFunctionOutput, function_tool, output_guardrail
from miniagents.session import SessionABC
from miniagents.testing import ScriptedModel, function_call

TESTS = os.path.dirname(os.path.abspath(__file__))  # tests/: helpers, golden files, scripts
ROOT = os.path.dirname(TESTS)  # the repository
REDACTED = "An error occurred while running the tool. Please try again."


def make_agent(steps, name="Assistant", **kw):
    """An agent whose model plays `steps`; returns (agent, model)."""
    model = ScriptedModel(steps)
    return Agent(name=name, model=model, **kw), model


@output_guardrail
def block_everything(ctx, agent, output):
    return GuardrailFunctionOutput(output_info={"reason": "blocked"}, tripwire_triggered=True)


@function_tool
def read_secret() -> str:
    return "SECRET-DATA"


def secret_agent(**options):
    """An agent whose tool's output is its final output, which its output guardrail rejects: what is left
    behind must never hold "SECRET-DATA"."""
    model = ScriptedModel([[function_call("read_secret", "{}", call_id="c1")]])
    return Agent(name="Vault", tools=[read_secret], tool_use_behavior="stop_on_first_tool",
                 output_guardrails=[block_everything], model=model, **options)


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


class ListSession(SessionABC):
    """A session with no ledger: a list (what a session written by hand may be)."""

    session_id = "list"

    def __init__(self):
        self.items = []

    def get_items(self, limit=None):
        return list(self.items)

    def add_items(self, items):
        self.items += items

    def pop_item(self):
        return self.items.pop() if self.items else None

    def clear_session(self):
        self.items = []


def copies_running_out_of_room(monkeypatch, after: int = 5) -> list:
    """Make `shutil.copyfile` fail with "No space left on device" once `after` files were copied (a disk filling
    up during a vendor copy); the list it returns names every file a copy was tried into."""
    import shutil

    copied, real = [], shutil.copyfile

    def runs_out_of_room(source, into):
        copied.append(into)
        if len(copied) > after:
            raise OSError(28, "No space left on device")
        return real(source, into)
    monkeypatch.setattr(shutil, "copyfile", runs_out_of_room)
    return copied


class ReadOnly(dict):
    """A dict subclass that refuses every edit, as a program's read-only mapping type may."""

    def refuse(self, *args, **kwargs):
        raise TypeError("read-only")

    __setitem__ = __delitem__ = update = clear = pop = popitem = setdefault = refuse


class RefusesCopies(dict):
    """A dict subclass whose copy raises."""

    def __copy__(self):
        raise RuntimeError("no copies")


def cannot_be_copied(kind: str) -> dict:
    """A user message holding a dict the run cannot copy: nested far deeper than Python copies, holding itself, or
    of a dict subclass that refuses an edit or a copy."""
    inner: dict = {}
    if kind == "nested":
        for _ in range(20_000):
            inner = {"a": inner}
    elif kind == "holds itself":
        inner["me"] = inner
    else:
        inner = ReadOnly(a=1) if kind == "read-only" else RefusesCopies(a=1)
    return {"role": "user", "content": "hi", "extra": inner}
