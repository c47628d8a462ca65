"""Malformed-but-possible input never crashes a run or leaks what it should not (the kernel's side).

A model (or a prompt injected into it) controls tool arguments; a program controls input items and RunState
documents; user code supplies validators and approval policies. Each may be wrong in ways that used to escape
as an untyped exception deep inside the loop. Each case here gets a typed error naming the problem, or a
message the model can act on, and the run loses nothing.
"""
from __future__ import annotations

import json
import logging

import pytest

from miniagents import (Agent, ModelBehaviorError, ModelResponse, RunState, Runner, SQLiteSession, ToolError,
                        UserError, function_tool, handoff)
from miniagents.testing import ScriptedModel, assistant_message, function_call
from support import REDACTED, cannot_be_copied, make_agent, outputs_sent


# --- Lone surrogates from the model never reach a request, a tool or a session ---------------------------


def test_a_lone_surrogate_in_tool_arguments_is_repaired_before_the_tool_sees_it(tmp_path):
    seen = []

    @function_tool
    def search(query: str) -> str:
        seen.append(query)
        return f"results for {query}"

    agent, model = make_agent([[function_call("search", '{"query": "a\\ud800b"}', call_id="c1")],
                               [assistant_message("done")]], tools=[search])
    session = SQLiteSession("s", str(tmp_path / "db.sqlite"))
    result = Runner.run_sync(agent, "go", session=session)
    assert seen == ["a\ufffdb"]
    assert result.final_output == "done"
    json.dumps(model.calls[1].input, ensure_ascii=False).encode("utf-8")  # the next request encodes
    assert any(i.get("output") == "results for a\ufffdb" for i in session.get_items())


@pytest.mark.parametrize("arguments, keys", [('{"query": "a\ud800b"}', []),
                                              ('{"extra": {"a\\ud800": "x"}, "query": "a\\uD800b"}', ["a\ufffd"])],
                         ids=["lone surrogate character", "escaped in a key and in upper case"])
def test_a_lone_surrogate_that_is_no_json_escape_or_an_upper_case_one_is_repaired_too(arguments, keys):
    """Arguments skip the scrub only when they are ASCII with no \\u escape: a surrogate character sent as it is (a
    server that decoded with surrogatepass), or an escape of any case, anywhere, is still repaired."""
    seen = []

    @function_tool(strict_mode=False)
    def search(query: str, **extra: str) -> str:
        seen.append([query, *extra])
        return "ok"

    agent, _ = make_agent([[function_call("search", arguments, call_id="c1")], [assistant_message("done")]],
                          tools=[search])
    Runner.run_sync(agent, "go")
    assert seen[0] == ["a\ufffdb", *keys]  # **extra is the object under "extra", as upstream reads it


def test_a_split_surrogate_pair_escaped_in_arguments_is_joined():
    seen = []

    @function_tool
    def echo(text: str) -> str:
        seen.append(text)
        return text

    agent, _ = make_agent([[function_call("echo", '{"text": "\\ud83d\\ude00"}', call_id="c1")],
                           [assistant_message("done")]], tools=[echo])
    Runner.run_sync(agent, "go")
    assert seen == ["\U0001F600"]


# --- A validator's own failure is not shown to the model ------------------------------------------------


class Account:
    """A pydantic-v2-protocol model whose validator reaches a database (and fails with its URL)."""

    def __init__(self, number: str):
        self.number = number

    @classmethod
    def model_json_schema(cls):
        return {"type": "object", "properties": {"number": {"type": "string", "title": "Number"}},
                "required": ["number"], "title": "Account"}

    @classmethod
    def model_validate(cls, data):
        if data.get("number") == "bad":
            raise ValueError("number: not a known account format")
        raise ConnectionError("could not reach postgres://admin:hunter2@db.internal/accounts")

    def model_dump(self, mode="python"):
        return {"number": self.number}


def test_a_validator_that_fails_to_validate_is_shown_but_one_that_crashes_is_redacted():
    @function_tool
    def close(account: Account) -> str:
        return "closed"

    agent, model = make_agent([[function_call("close", {"account": {"number": "bad"}}, call_id="c1"),
                                function_call("close", {"account": {"number": "12"}}, call_id="c2")],
                               [assistant_message("done")]], tools=[close])
    Runner.run_sync(agent, "go")
    sent = outputs_sent(model.calls[1])
    assert "not a known account format" in sent["c1"]
    assert sent["c2"] == REDACTED
    assert "hunter2" not in json.dumps(model.calls[1].input)


# --- An approval policy only ever sees arguments that are a JSON object --------------------------------


@pytest.mark.parametrize("arguments", ["[1]", '"pay 500"', "{not json", "5"])
def test_arguments_that_are_not_an_object_never_reach_the_approval_policy(arguments):
    asked, paid = [], []

    def over_100(ctx, params, call_id):
        asked.append(params)
        return params["amount"] > 100

    @function_tool(needs_approval=over_100)
    def pay(amount: int) -> str:
        paid.append(amount)
        return "paid"

    agent, model = make_agent([[function_call("pay", arguments, call_id="c1")], [assistant_message("done")]],
                              tools=[pay])
    result = Runner.run_sync(agent, "go")
    assert asked == [] and paid == [] and result.interruptions == []
    assert "Invalid JSON input for tool pay" in outputs_sent(model.calls[1])["c1"]


def test_an_approval_policy_that_raises_asks_a_person_instead_of_crashing(caplog):
    def policy(ctx, params, call_id):
        return params["amount"] > 100  # "amount" is a string here: TypeError

    @function_tool(needs_approval=policy)
    def pay(amount: str) -> str:
        return "paid"

    agent, _ = make_agent([[function_call("pay", {"amount": "500"}, call_id="c1")], [assistant_message("done")]],
                          tools=[pay])
    with caplog.at_level(logging.WARNING, logger="miniagents"):
        result = Runner.run_sync(agent, "go")
    assert [i.call_id for i in result.interruptions] == ["c1"]
    assert "needs_approval" in caplog.text


# --- Malformed input items are refused before any model call --------------------------------------------


@pytest.mark.parametrize("item, named", [
    ({"role": "user", "content": 5}, "content"),
    ({"role": "user", "content": ["hello"]}, "content"),
    ({"type": "function_call", "call_id": "c1", "arguments": "{}"}, "name"),
    ({"type": "function_call_output", "output": "x"}, "call_id"),
    ({"role": "wizard", "content": "hi"}, "role"),
    ({"type": "teleport"}, "teleport"),
])
def test_a_malformed_input_item_is_a_user_error_naming_it_before_any_model_call(item, named):
    agent, model = make_agent([[assistant_message("hi")]])
    with pytest.raises(UserError) as caught:
        Runner.run_sync(agent, [{"role": "user", "content": "hello"}, item])
    assert named in str(caught.value) and "input[1]" in str(caught.value)
    assert model.calls == ()


def test_well_formed_input_items_of_every_kind_are_accepted():
    items = [{"role": "system", "content": "be brief"},
             {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
             {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "yo"}]},
             {"type": "reasoning", "id": "r1", "summary": []},
             {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
             {"type": "function_call_output", "call_id": "c1", "output": "ok"},
             {"role": "user", "content": "again"}]
    agent, model = make_agent([[assistant_message("fine")]])
    assert Runner.run_sync(agent, items).final_output == "fine"
    assert len(model.calls[0].input) == len(items)


class KeepsAnything:
    """A session of a program's own, whose history holds whatever was put in it."""

    session_id, session_settings = "s", None

    def __init__(self, items):
        self.items = list(items)

    def get_items(self, limit=None):
        return list(self.items)

    def add_items(self, items):
        self.items += items


class Answers:
    """A custom model giving its answers as they are (the scripted model refuses, when it is added, a step that no
    response may hold)."""

    def __init__(self, answers):
        self.answers = list(answers)

    def get_response(self, *args, **kwargs):
        return ModelResponse(output=self.answers.pop(0))

    def stream_response(self, *args, **kwargs):
        raise AssertionError("not streamed here")


@pytest.mark.parametrize("kind", ["nested", "holds itself", "read-only", "refuses copies"])
@pytest.mark.parametrize("where", ["the run's input", "a RunState made by hand", "a session's history",
                                   "a custom model's response"])
def test_an_item_the_run_cannot_copy_is_a_user_error_where_it_enters_and_nothing_runs(where, kind):
    """The run copies what it takes as it enters; an item Python cannot copy (nested past its recursion limit, or
    holding itself) was a bare RecursionError there (the input), or was taken as it was (a session's history, a
    custom model's item) and raised one later, where an input guardrail, a handoff's input filter or a tool was
    given its own copy; a dict subclass refusing an edit or a copy was the bare error of its own methods. Now each
    is a UserError saying where it came from, before a guardrail is given it, a tool runs or anything is
    written."""
    from miniagents import GuardrailFunctionOutput, input_guardrail

    bad, ran = cannot_be_copied(kind), []

    @input_guardrail
    def check(ctx, agent, given):
        ran.append("guardrail")
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered=False)

    @function_tool
    def act() -> str:
        ran.append("tool")
        return "done"

    answer = [{**function_call("act", {}, call_id="c1"), "extra": bad["extra"]}] if where.startswith("a custom") \
        else [function_call("act", {}, call_id="c1")]
    target = Agent(name="B", model=ScriptedModel([[assistant_message("from B")]]))
    agent = Agent(name="A", model=Answers([answer, [function_call("transfer_to_b", {}, call_id="h1")]]),
                  tools=[act], handoffs=[handoff(target, input_filter=lambda data: data)], input_guardrails=[check])
    session = KeepsAnything([bad] if where == "a session's history" else [])
    source = {"the run's input": "RunState's original_input", "a RunState made by hand": "RunState's original_input",
              "a session's history": "The session's history", "a custom model's response": "ModelResponse.output"}
    why = ("nested deeper than Python copies, or one that holds itself" if kind in ("nested", "holds itself") else
           "the run cannot copy \\(copying it raised (TypeError|RuntimeError)\\): give plain dicts and lists")
    with pytest.raises(UserError, match=rf"^{source[where]} holds an item {why}$"):
        if where == "a RunState made by hand":
            Runner.run_sync(agent, RunState(None, [bad], agent, 10), session=session)
        else:
            Runner.run_sync(agent, [bad] if where == "the run's input" else "go", session=session)
    assert ran == (["guardrail"] if where.startswith("a custom") else [])  # (on the input: before the model call)
    assert session.items == ([bad] if where == "a session's history" else [])


@pytest.mark.parametrize("kind", ["nested", "holds itself", "read-only", "refuses copies"])
@pytest.mark.parametrize("part", ["input_history", "new_items"])
def test_a_handoff_input_filters_result_the_run_cannot_copy_is_a_user_error_and_the_next_agent_never_runs(part, kind):
    """A handoff's input filter returns items of the program's own making, which the run copies as it takes them:
    one it cannot copy was the bare RecursionError, TypeError or RuntimeError of that copy. Now it is a UserError
    naming the filter's result, and the agent handed to is never asked."""
    import dataclasses

    extra = cannot_be_copied(kind)["extra"]

    def add_uncopyable(data):
        if part == "input_history":
            return dataclasses.replace(data, input_history=({"role": "user", "content": data.input_history,
                                                             "extra": extra},))
        last = data.new_items[-1]
        return dataclasses.replace(data, new_items=(*data.new_items[:-1],
                                                    dataclasses.replace(last, raw_item={**last.raw_item,
                                                                                        "extra": extra})))

    target_model = ScriptedModel([[assistant_message("from B")]])
    agent = Agent(name="A", model=ScriptedModel([[function_call("transfer_to_b", {}, call_id="h1")]]),
                  handoffs=[handoff(Agent(name="B", model=target_model), input_filter=add_uncopyable)])
    why = "nested deeper than Python copies" if kind in ("nested", "holds itself") else "the run cannot copy"
    with pytest.raises(UserError, match=rf"^The handoff input filter's result holds an item {why}"):
        Runner.run_sync(agent, "go")
    assert len(target_model.calls) == 0


# --- RunState documents whose items would fail later are refused at load --------------------------------


def paused_json():
    @function_tool(needs_approval=True)
    def pay(amount: int) -> str:
        return "paid"

    agent, model = make_agent([[function_call("pay", {"amount": 5}, call_id="c1")]], tools=[pay])
    return agent, model, Runner.run_sync(agent, "go").to_state().to_json()


@pytest.mark.parametrize("where, edit, named", [
    ("original_input", lambda d: d.update(original_input=[{"role": "user", "content": 5}]), "content"),
    ("generated_items", lambda d: d["generated_items"][0]["raw_item"].update(type="teleport"), "teleport"),
    ("pending_turn", lambda d: d["pending_turn"]["output"].append({"type": "message", "role": "assistant",
                                                                  "content": 7}), "content"),
    ("unsaved_session_input", lambda d: d.update(unsaved_session_input=[{"role": "user"}]), "content"),
])
def test_a_state_whose_items_would_fail_later_is_refused_at_load(where, edit, named):
    agent, model, data = paused_json()
    edit(data)
    with pytest.raises(UserError) as caught:
        RunState.from_json(agent, data)
    assert named in str(caught.value) and where in str(caught.value)


def test_deeply_nested_state_text_is_a_user_error_not_a_recursion_error():
    agent, _, _ = paused_json()
    with pytest.raises(UserError):
        RunState.from_string(agent, "[" * 100000)
    with pytest.raises(UserError):
        RunState.from_json(agent, {"schema_version": 2, "original_input": [[[[[]]]]]})


def test_a_nested_agent_tool_state_is_checked_as_deeply_as_the_top_level():
    @function_tool(needs_approval=True)
    def pay(amount: int) -> str:
        return "paid"

    inner_model = ScriptedModel([[function_call("pay", {"amount": 5}, call_id="i1")]])
    inner = Agent(name="Payer", tools=[pay], model=inner_model)
    outer_model = ScriptedModel([[function_call("payer", {"input": "pay 5"}, call_id="o1")]])
    outer = Agent(name="Boss", tools=[inner.as_tool("payer", "pays")], model=outer_model)
    data = Runner.run_sync(outer, "go").to_state().to_json()
    data["pending_turn"]["nested"]["o1"]["generated_items"][0]["raw_item"]["name"] = 3
    with pytest.raises(UserError) as caught:
        RunState.from_json(outer, data)
    assert "nested" in str(caught.value) and "o1" in str(caught.value) and "name" in str(caught.value)


# --- An agent tool's inner failure is described as the inner failure -------------------------------------


def test_an_inner_models_bad_handoff_is_not_blamed_on_the_outer_call():
    @dataclass_input
    class Reason:
        why: str

    def on_escalate(ctx, reason):
        return None

    boss = Agent(name="Boss", model=ScriptedModel([]))
    inner_model = ScriptedModel([[function_call("transfer_to_boss", '{"why": 5}', call_id="i1")]])
    clerk = Agent(name="Clerk", model=inner_model,
                  handoffs=[handoff(boss, on_handoff=on_escalate, input_type=Reason)])
    outer, model = make_agent([[function_call("clerk", {"input": "help"}, call_id="o1")],
                               [assistant_message("done")]], tools=[clerk.as_tool("clerk", "a clerk")])
    Runner.run_sync(outer, "go")
    text = outputs_sent(model.calls[1])["o1"]
    assert "Invalid JSON input for tool clerk" not in text
    assert "Clerk" in text and "why" in text


def dataclass_input(cls):
    from dataclasses import dataclass

    return dataclass(cls)


# --- A tool that raised is logged for the developer, redacted for the model ------------------------------


def test_a_tool_that_raised_is_logged_with_its_traceback_and_redacted_for_the_model(caplog):
    @function_tool
    def lookup(order: str) -> str:
        raise RuntimeError("database is down")

    agent, model = make_agent([[function_call("lookup", {"order": "1"}, call_id="c1")], [assistant_message("ok")]],
                              tools=[lookup])
    with caplog.at_level(logging.WARNING, logger="miniagents"):
        Runner.run_sync(agent, "go")
    assert outputs_sent(model.calls[1])["c1"] == REDACTED
    (record,) = [r for r in caplog.records if "lookup" in r.getMessage()]
    assert record.levelno == logging.WARNING and record.exc_info is not None
    assert "database is down" in caplog.text


def test_a_tool_error_is_for_the_model_and_not_logged_as_a_failure(caplog):
    @function_tool
    def lookup(order: str) -> str:
        raise ToolError("no such order")

    agent, model = make_agent([[function_call("lookup", {"order": "1"}, call_id="c1")], [assistant_message("ok")]],
                              tools=[lookup])
    with caplog.at_level(logging.WARNING, logger="miniagents"):
        Runner.run_sync(agent, "go")
    assert outputs_sent(model.calls[1])["c1"] == "no such order"
    assert not [r for r in caplog.records if r.exc_info]


@pytest.mark.parametrize("key", ["pending_input", "finished", "server_known", "auto_previous_response_id"])
@pytest.mark.parametrize("where", ["top", "nested"])
def test_null_for_an_optional_state_field_means_not_given_at_every_depth(key, where):
    """`"pending_input": null` (or any optional field that cannot be null) loads as if the field were left out;
    it once raised a bare TypeError at load, in the outer document and in a nested agent tool's."""
    @function_tool(needs_approval=True)
    def pay(amount: int) -> str:
        return f"paid {amount}"

    inner = Agent(name="Payer", tools=[pay], model=ScriptedModel([[function_call("pay", {"amount": 5}, call_id="i1")],
                                                                   [assistant_message("paid")]]))
    outer_model = ScriptedModel([[function_call("payer", {"input": "pay 5"}, call_id="o1")],
                                 [assistant_message("done")]])
    outer = Agent(name="Boss", tools=[inner.as_tool("payer", "pays")], model=outer_model)
    result = Runner.run_sync(outer, "go")
    data = result.to_state().to_json()
    (data if where == "top" else data["pending_turn"]["nested"]["o1"])[key] = None
    state = RunState.from_json(outer, data)
    state.approve(state.get_interruptions()[0])
    assert Runner.run_sync(outer, state).final_output == "done"


# --- A custom model's stream: what no event is, or a completed event without a response ---------------------


class StreamOf:
    """A custom model whose stream sends `events` as they are."""

    def __init__(self, *events):
        self.events = events

    def get_response(self, *args, **kwargs):
        raise AssertionError("only streamed here")

    def stream_response(self, *args, **kwargs):
        yield from self.events


@pytest.mark.parametrize("events, words", [
    (["not-a-dict"], "The model's stream sent a str, not an event"),
    ([{"type": "response.completed", "response": None}], "holds no response with a list of output items"),
    ([{"type": "response.completed", "response": {"output": ["x"]}}], "holds no response with a list of output items"),
    ([{"type": "response.completed", "response": {"output": "x"}}], "holds no response with a list of output items"),
    ([{"type": "response.completed", "response": {"output": [], "usage": {"input_tokens": "x"}}}],
     "holds a usage that is not token counts"),
    ([{"type": "response.completed", "response": {"output": [], "usage": 5}}], "holds a usage that is not token"),
])
def test_a_custom_models_stream_that_sends_no_event_or_no_response_is_a_model_behavior_error(events, words):
    import asyncio

    result = Runner.run_streamed(Agent(name="A", model=StreamOf(*events)), "hi")

    async def read():
        async for _ in result.stream_events():
            pass

    with pytest.raises(ModelBehaviorError, match=words):
        asyncio.run(read())


class StreamReturns:
    """A custom model whose `stream_response` returns what it is given, whatever that is."""

    def __init__(self, value):
        self.value = value

    def get_response(self, *args, **kwargs):
        raise AssertionError("only streamed here")

    def stream_response(self, *args, **kwargs):
        return self.value


async def no_events():
    yield {"type": "response.completed", "response": {"output": []}}


@pytest.mark.parametrize("make", [lambda: None, lambda: 5, no_events], ids=["None", "int", "async generator"])
def test_a_custom_models_stream_response_that_returns_no_iterable_is_a_user_error_saying_what_it_returned(make):
    """Iterating it raised a bare TypeError ("'NoneType' object is not iterable") from inside the run, where a
    `get_response` that returns no `ModelResponse` is a `UserError` saying what it returned."""
    import asyncio

    value = make()
    result = Runner.run_streamed(Agent(name="A", model=StreamReturns(value)), "hi")

    async def read():
        async for _ in result.stream_events():
            pass

    words = f"stream_response must return an iterable of events, not {type(value).__name__}$"
    with pytest.raises(UserError, match=words):
        asyncio.run(read())
