"""Specification of sessions in runs: what `Runner.run_sync(..., session=s)` reads before the first turn and
writes after each turn.

The session's history goes before the new input; the new input is saved once, with the first completed turn;
each turn's items (calls and their outputs together) are saved in one `add_items` when the turn ends, so the
stored conversation is always well paired. `SessionSettings(limit=N)` limits the items read; `limit_turns=N`
reads whole user turns. Every test uses a file database in tmp_path and counts rows with its own connection.
"""
import asyncio

import pytest

from miniagents import (Agent, GuardrailFunctionOutput, InputGuardrailTripwireTriggered, RunConfig, Runner,
                        UserError, function_tool, input_guardrail)
from miniagents.session import SessionSettings, SQLiteSession
from miniagents.testing import ScriptedModel, assistant_message, function_call
from support import stored_rows


def user(text):
    return {"content": text, "role": "user"}


def assert_well_paired(items):
    """Every function_call has exactly one function_call_output after it, and every output has its call."""
    for index, item in enumerate(items):
        if item.get("type") == "function_call":
            later = [i for i in items[index + 1:] if i.get("type") == "function_call_output"
                     and i.get("call_id") == item["call_id"]]
            assert len(later) == 1, f"call {item['call_id']} has {len(later)} outputs after it"
        if item.get("type") == "function_call_output":
            earlier = [i for i in items[:index] if i.get("type") == "function_call"
                       and i.get("call_id") == item["call_id"]]
            assert len(earlier) == 1, f"output {item['call_id']} has {len(earlier)} calls before it"
    calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
    assert len(calls) == len(set(calls)), "a call id is stored twice"


@pytest.fixture
def db(tmp_path):
    return tmp_path / "conversation.db"


@pytest.fixture
def session(db):
    s = SQLiteSession("conv", db)
    yield s
    s.close()


def lookup_agent(model, log=None, **options):
    log = [] if log is None else log

    @function_tool
    def lookup(q: str) -> str:
        """Look something up."""
        log.append(q)
        return f"found {q}"

    return Agent("Assistant", tools=[lookup], model=model, **options)


def lookup_turn(call_id, q="x"):
    return [function_call("lookup", {"q": q}, call_id=call_id)]


def two_conversation_turns(agent, model, session):
    """'first' (one tool call) and 'second' (one tool call), each answered."""
    model.extend([lookup_turn("c1", "1"), [assistant_message("one")], lookup_turn("c2", "2"),
                  [assistant_message("two")]])
    Runner.run_sync(agent, "first", session=session)
    Runner.run_sync(agent, "second", session=session)


# --- Reading the history -------------------------------------------------------------------------------------


def test_session_history_goes_before_the_new_input(session):
    model = ScriptedModel([lookup_turn("c1"), [assistant_message("one")], [assistant_message("two")]])
    agent = lookup_agent(model)
    Runner.run_sync(agent, "first", session=session)
    history = list(session.get_items())
    Runner.run_sync(agent, "second", session=session)
    assert [dict(i) for i in model.calls[2].input] == history + [user("second")]
    assert history[0] == user("first")


def test_session_settings_limit_in_run_config_limits_the_items_read(session):
    model = ScriptedModel()
    agent = lookup_agent(model)
    two_conversation_turns(agent, model, session)
    stored = list(session.get_items())
    model.enqueue([assistant_message("three")])
    Runner.run_sync(agent, "third", session=session, run_config=RunConfig(session_settings=SessionSettings(limit=4)))
    assert [dict(i) for i in model.calls[-1].input] == stored[-4:] + [user("third")]


def test_session_settings_limit_on_the_session_limits_the_items_read(db):
    model = ScriptedModel()
    agent = lookup_agent(model)
    with SQLiteSession("conv", db, session_settings=SessionSettings(limit=4)) as session:
        two_conversation_turns(agent, model, session)
        stored = stored_rows(db)
        model.enqueue([assistant_message("three")])
        Runner.run_sync(agent, "third", session=session)
    assert len(stored) == 8
    assert [dict(i) for i in model.calls[-1].input] == stored[-4:] + [user("third")]


def test_a_limit_that_cuts_a_call_from_its_output_still_sends_a_well_paired_history(session):
    model = ScriptedModel()
    agent = lookup_agent(model)
    two_conversation_turns(agent, model, session)
    stored = list(session.get_items())  # first, c1, c1-out, one, second, c2, c2-out, two
    model.enqueue([assistant_message("three")])
    Runner.run_sync(agent, "third", session=session, run_config=RunConfig(session_settings=SessionSettings(limit=6)))
    sent = [dict(i) for i in model.calls[-1].input]
    assert_well_paired(sent)
    assert sent == stored[3:] + [user("third")]  # the orphaned c1 output is not sent


@pytest.mark.parametrize("where", ["run_config", "session"])
def test_limit_turns_reads_whole_user_turns_and_never_splits_a_call_from_its_output(db, where):
    model = ScriptedModel()
    agent = lookup_agent(model)
    settings = SessionSettings(limit_turns=1)
    session = SQLiteSession("conv", db, session_settings=settings if where == "session" else None)
    config = RunConfig(session_settings=settings) if where == "run_config" else None
    # 'second' has two tool turns, so its turn is 7 items long: more than any fixed item limit would keep.
    model.extend([lookup_turn("c1", "1"), [assistant_message("one")],
                  lookup_turn("c2", "2"), lookup_turn("c3", "3"), [assistant_message("two")]])
    Runner.run_sync(agent, "first", session=session)
    Runner.run_sync(agent, "second", session=session)
    stored = stored_rows(db)
    model.enqueue([assistant_message("three")])
    Runner.run_sync(agent, "third", session=session, run_config=config)
    sent = [dict(i) for i in model.calls[-1].input]
    assert sent == stored[stored.index(user("second")):] + [user("third")]
    assert_well_paired(sent)
    session.close()


def test_an_orphan_call_left_in_the_database_is_not_sent_to_the_model(session):
    session.add_items([user("old"), {"type": "function_call", "call_id": "lost", "name": "lookup",
                                     "arguments": "{}"}])
    model = ScriptedModel([[assistant_message("hi")]])
    Runner.run_sync(lookup_agent(model), "new", session=session)
    assert [dict(i) for i in model.calls[0].input] == [user("old"), user("new")]


# --- Writing the turns -----------------------------------------------------------------------------------------


def test_the_new_input_is_saved_once(db, session):
    model = ScriptedModel([lookup_turn("c1"), lookup_turn("c2"), [assistant_message("done")]])
    Runner.run_sync(lookup_agent(model), "first", session=session)
    stored = stored_rows(db)
    assert stored.count(user("first")) == 1 and stored[0] == user("first")


def test_a_list_input_is_saved_once_item_by_item(db, session):
    model = ScriptedModel([lookup_turn("c1"), [assistant_message("done")]])
    new = [user("a"), user("b")]
    Runner.run_sync(lookup_agent(model), new, session=session)
    stored = stored_rows(db)
    assert stored[:2] == new and stored.count(user("a")) == 1 and stored.count(user("b")) == 1


def test_each_turns_calls_and_outputs_are_saved_together_when_the_turn_ends(db, session):
    seen = []

    @function_tool
    def peek(q: str) -> str:
        """Look at the database while the turn runs."""
        seen.append([(i.get("type") or i.get("role"), i.get("call_id")) for i in stored_rows(db)])
        return "ok"

    model = ScriptedModel([[function_call("peek", {"q": "1"}, call_id="c1")],
                           [function_call("peek", {"q": "2"}, call_id="c2")], [assistant_message("done")]])
    Runner.run_sync(Agent("A", tools=[peek], model=model), "go", session=session)
    assert seen[0] == []  # turn 1 still running: nothing saved, not even the input
    assert seen[1] == [("user", None), ("function_call", "c1"), ("function_call_output", "c1")]
    stored = stored_rows(db)
    assert [(i.get("type") or i.get("role"), i.get("call_id")) for i in stored] == [
        ("user", None), ("function_call", "c1"), ("function_call_output", "c1"),
        ("function_call", "c2"), ("function_call_output", "c2"), ("message", None)]


def test_after_a_multi_turn_run_the_database_is_well_paired_and_holds_the_run(db, session):
    model = ScriptedModel([[assistant_message("thinking", item_id="m1"), function_call("lookup", {"q": "a"},
                                                                                         call_id="c1"),
                            function_call("lookup", {"q": "b"}, call_id="c2")],
                           lookup_turn("c3"), [assistant_message("done")]])
    result = Runner.run_sync(lookup_agent(model), "go", session=session)
    stored = stored_rows(db)
    assert_well_paired(stored)
    assert {i["call_id"] for i in stored if i.get("type") == "function_call_output"} == {"c1", "c2", "c3"}
    assert stored == [dict(i) for i in result.to_input_list()]


def test_after_a_multi_turn_run_with_a_handoff_the_database_is_well_paired(db, session):
    model = ScriptedModel()
    specialist = lookup_agent(model).clone(name="Specialist")
    triage = Agent("Triage", handoffs=[specialist], tools=specialist.tools, model=model)
    model.extend([[assistant_message("thinking", item_id="m1"), function_call("lookup", {"q": "a"}, call_id="c1"),
                   function_call("lookup", {"q": "b"}, call_id="c2")],
                  [function_call("transfer_to_specialist", {}, call_id="h1")],
                  lookup_turn("c3"), [assistant_message("done")]])
    result = Runner.run_sync(triage, "go", session=session)
    assert result.final_output == "done" and result.last_agent.name == "Specialist"
    stored = stored_rows(db)
    assert_well_paired(stored)
    assert {i["call_id"] for i in stored if i.get("type") == "function_call_output"} == {"c1", "c2", "h1", "c3"}
    assert stored == [dict(i) for i in result.to_input_list()]


def test_an_input_guardrail_trip_saves_no_assistant_message(db, session):
    @input_guardrail
    def block(ctx, agent, input):
        return GuardrailFunctionOutput(output_info="blocked", tripwire_triggered=True)

    model = ScriptedModel([[assistant_message("must not be said")]])
    agent = Agent("A", model=model, input_guardrails=[block])
    with pytest.raises(InputGuardrailTripwireTriggered):
        Runner.run_sync(agent, "do something bad", session=session)
    assert model.calls == ()
    assert not any(i.get("role") == "assistant" or i.get("type") == "message" for i in stored_rows(db))


def test_a_paused_turn_is_saved_once_when_it_is_resumed(db, session):
    log = []

    @function_tool(needs_approval=True)
    def delete_file(path: str) -> str:
        """Delete one file."""
        log.append(path)
        return f"deleted {path}"

    model = ScriptedModel([[function_call("delete_file", {"path": "a.txt"}, call_id="c1")]])
    agent = Agent("A", tools=[delete_file], model=model)
    result = Runner.run_sync(agent, "tidy up", session=session)
    assert stored_rows(db) == []  # the paused turn has not ended
    state = result.to_state()
    state.approve(result.interruptions[0])
    model.enqueue([assistant_message("done")])
    Runner.run_sync(agent, state, session=session)
    stored = stored_rows(db)
    assert [(i.get("type") or i.get("role"), i.get("call_id")) for i in stored] == [
        ("user", None), ("function_call", "c1"), ("function_call_output", "c1"), ("message", None)]
    assert log == ["a.txt"]


def test_a_streamed_run_saves_the_same_items_as_run_sync(tmp_path):
    def script():
        return [lookup_turn("c1"), [assistant_message("done")]]

    with SQLiteSession("a", tmp_path / "a.db") as plain, SQLiteSession("b", tmp_path / "b.db") as streamed:
        Runner.run_sync(lookup_agent(ScriptedModel(script())), "go", session=plain)
        result = Runner.run_streamed(lookup_agent(ScriptedModel(script())), "go", session=streamed)

        async def drain():
            async for _ in result.stream_events():
                pass

        asyncio.run(drain())
    assert stored_rows(tmp_path / "b.db") == stored_rows(tmp_path / "a.db") and len(stored_rows(tmp_path / "a.db")) == 4


# --- Awaiting session methods (upstream's are coroutines) -------------------------------------------------------


def test_awaiting_get_items_gives_the_same_items_as_calling_it(session):
    model = ScriptedModel([lookup_turn("c1"), [assistant_message("done")]])
    Runner.run_sync(lookup_agent(model), "go", session=session)

    async def read():
        return await session.get_items(), await session.get_items(limit=2)

    everything, newest = asyncio.run(read())
    assert everything == session.get_items() and len(everything) == 4
    assert newest == everything[-2:]


# --- What an attack found: session settings taken as they came ---------------------------------------------------


def five_items_and_an_agent(tmp_path):
    session = SQLiteSession("s", str(tmp_path / "s.db"))
    session.add_items([{"role": "user", "content": str(n)} for n in range(5)])
    model = ScriptedModel([[assistant_message("ok")]])
    return session, Agent(name="a", model=model), model


@pytest.mark.parametrize("given, seen", [({"limit": 1}, 2), ({"limit_turns": 1}, 2), ({}, 6)])
def test_run_config_session_settings_given_as_a_dict_are_read(tmp_path, given, seen):
    session, agent, model = five_items_and_an_agent(tmp_path)  # five one-message turns, then the new input
    Runner.run_sync(agent, "q", session=session, run_config=RunConfig(session_settings=given))
    assert len(model.calls[0].input) == seen


@pytest.mark.parametrize("junk, error, said", [("junk", TypeError, "session settings"), (42, TypeError, "session settings"),
                                             ({"limt": 1}, UserError, "SessionSettings has no field 'limt'")])
def test_run_config_session_settings_of_another_kind_are_refused_before_the_session_is_read(tmp_path, junk, error,
                                                                                           said):
    session, agent, model = five_items_and_an_agent(tmp_path)
    with pytest.raises(error, match=said):
        Runner.run_sync(agent, "q", session=session, run_config=RunConfig(session_settings=junk))
    assert model.calls == () and len(session.get_items()) == 5


def test_limit_turns_with_a_session_whose_get_items_cannot_take_it_is_a_user_error_before_it_is_read():
    class Plain:  # the Session protocol of upstream: get_items(limit) only
        read = 0

        def get_items(self, limit=None):
            self.read += 1
            return []

        def add_items(self, items):
            pass

        def pop_item(self):
            return None

        def clear_session(self):
            pass

    session, model = Plain(), ScriptedModel([[assistant_message("never")]])
    with pytest.raises(UserError, match="limit_turns=.* needs a session whose get_items takes limit_turns"):
        Runner.run_sync(Agent(name="a", model=model), "q", session=session,
                        run_config=RunConfig(session_settings=SessionSettings(limit_turns=1)))
    assert session.read == 0 and model.calls == ()


def test_a_run_state_made_by_hand_reads_the_sessions_history_and_brings_its_input(tmp_path):
    """Given with a session, it ran without the conversation, and the session kept an answer with no question."""
    from miniagents import RunState

    session = SQLiteSession("s", str(tmp_path / "s.db"))
    model = ScriptedModel([[assistant_message("hello")], [assistant_message("paid")], [assistant_message("ok")]])
    agent = Agent(name="a", model=model)
    Runner.run_sync(agent, "hi, I am Bob", session=session)
    Runner.run_sync(agent, RunState(None, "pay", agent), session=session)
    assert [i.get("content") for i in model.calls[1].input if i.get("role") == "user"] == ["hi, I am Bob", "pay"]
    assert [(i["role"], i["content"] if i["role"] == "user" else i["content"][0]["text"]) for i in session.get_items()] \
        == [("user", "hi, I am Bob"), ("assistant", "hello"), ("user", "pay"), ("assistant", "paid")]
    Runner.run_sync(agent, "more", session=session)  # and the next run reads it so, once
    assert [i.get("content") for i in model.calls[2].input if i.get("role") == "user"] == ["hi, I am Bob", "pay", "more"]


@pytest.mark.parametrize("given", ["as a run made it", "through JSON"])
def test_a_state_a_run_made_with_a_session_never_reads_the_history_again(tmp_path, given):
    """A run with no new input (`[]`) stopped before its first turn matched a state made by hand (no turn, no input
    to carry): given again, it read the history over the history it held, and wrote that copy back to the session."""
    from miniagents import RunState, UsageLimits
    from miniagents.errors import UsageLimitExceeded

    session = SQLiteSession("s", str(tmp_path / "s.db"))
    model = ScriptedModel([[assistant_message("hello")], [assistant_message("again")]])
    agent = Agent(name="a", model=model)
    Runner.run_sync(agent, "hi, I am Bob", session=session)
    with pytest.raises(UsageLimitExceeded) as stopped:
        Runner.run_sync(agent, [], session=session, run_config=RunConfig(usage_limits=UsageLimits(request_limit=0)))
    state = stopped.value.state
    if given == "through JSON":
        state = RunState.from_string(agent, state.to_string())
    Runner.run_sync(agent, state, session=session)
    assert [i.get("content") for i in model.calls[1].input if i.get("role") == "user"] == ["hi, I am Bob"]
    assert [i["role"] for i in session.get_items()] == ["user", "assistant", "assistant"]
