"""What a state, a journal and a model's call ids may hold that the ledger must survive.

Found by attacking RunState and the exactly-once ledger: a call id the model chose that is also one of the run's
own claim keys, a journal entry edited by hand, a document nested deeper than Python walks, a finished state run
again. Each gets a typed error naming what is wrong, or runs exactly once.
"""
import json

import pytest
from hypothesis import given, settings, strategies as st

from miniagents import Agent, Model, ModelResponse, RunState, Runner, SQLiteSession, UserError, function_tool
from miniagents.sql_session import SessionStoreError
from miniagents.testing import ScriptedModel, assistant_message, function_call
from support import make_agent


@pytest.mark.parametrize("call_id", ["turn-1", "turn-2", "resume:turn-1:pause-0"])
def test_a_call_id_the_model_chose_never_meets_the_runs_own_claims(tmp_path, call_id):
    """The run's turns and resumes are claimed under `<run id>#`: a model's "turn-1" is a call like any other."""
    ran = []

    @function_tool
    def lookup(q: str) -> str:
        ran.append(q)
        return "found"

    @function_tool(needs_approval=True)
    def delete(p: str) -> str:
        ran.append(p)
        return "deleted"

    agent, _ = make_agent([[function_call("lookup", {"q": "x"}, call_id=call_id),
                            function_call("delete", {"p": "a"}, call_id="c9")], [assistant_message("done")]],
                          tools=[lookup, delete])
    session = SQLiteSession("conv", str(tmp_path / "s.db"))
    state = Runner.run_sync(agent, "hi", session=session).to_state()
    state.approve(state.get_interruptions()[0])
    assert Runner.run_sync(agent, state, session=session).final_output == "done"
    assert ran == ["x", "a"]
    outputs = {i["call_id"]: i["output"] for i in session.get_items() if i.get("type") == "function_call_output"}
    assert outputs == {call_id: "found", "c9": "deleted"}


@pytest.mark.parametrize("entry", ['{"run_id": "run_1", "turn": 1, "epoch": 0}', "not json", "[]", "{}",
                                   '{"a": ' * 5000 + "1" + "}" * 5000])
def test_a_journal_entry_miniagents_did_not_write_is_a_session_store_error_saying_how_to_go_on(tmp_path, entry):
    session = SQLiteSession("conv", str(tmp_path / "s.db"))
    session.write_journal("", entry)
    agent, _ = make_agent([[assistant_message("hi")]])
    for given in ([], "hello"):
        with pytest.raises(SessionStoreError, match="holds an entry miniagents did not write"):
            Runner.run_sync(agent, given, session=session)
    session.write_journal(session.read_journal(), "")  # what the message says to do
    assert Runner.run_sync(agent, "hello", session=session).final_output == "hi"


def test_a_journal_entry_whose_states_run_id_was_edited_is_a_session_store_error_and_runs_no_call_again(tmp_path):
    """The entry names its run twice, in itself and in its state: a state whose run id alone was edited (or
    corrupted) was continued as another run, whose ledger has no claim, and the call that ran before ran again."""
    ran = []

    @function_tool
    def pay(amount: int) -> str:
        ran.append(amount)
        if ran == [2, 1]:
            raise KeyboardInterrupt  # Ctrl-C mid-call: the turn stays journaled, as after a crash
        return f"paid {amount}"

    agent, _ = make_agent([[function_call("pay", {"amount": 2}, call_id="c0"),
                            function_call("pay", {"amount": 1}, call_id="c1")], [assistant_message("done")]],
                          tools=[pay])
    session = SQLiteSession("conv", str(tmp_path / "s.db"))
    with pytest.raises(KeyboardInterrupt):
        Runner.run_sync(agent, "go", session=session)
    entry = json.loads(session.read_journal())
    entry["state"]["run_id"] = "run_0123456789abcdef01234567"
    session.write_journal(session.read_journal(), json.dumps(entry))
    with pytest.raises(SessionStoreError, match="holds an entry miniagents did not write"):
        Runner.run_sync(agent, [], session=session)
    assert ran == [2, 1]


def test_a_journal_entry_longer_than_a_state_may_be_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    import miniagents.ledger

    entry = json.dumps({"run_id": "run_1", "turn": 1, "epoch": 0, "state": {"pad": "x" * 1000}})
    session = SQLiteSession("conv", str(tmp_path / "s.db"))
    session.write_journal("", entry)
    agent, _ = make_agent([[assistant_message("hi")]])
    parsed = []
    monkeypatch.setattr(miniagents.ledger.json, "loads", lambda text, **kw: parsed.append(text) or {})
    monkeypatch.setattr(miniagents.ledger, "MAX_TEXT", len(entry) - 1)
    for given in ([], "hello"):
        with pytest.raises(SessionStoreError, match="holds an entry of over the 1,0[0-9][0-9] characters a state may"):
            Runner.run_sync(agent, given, session=session)
    assert parsed == []
    monkeypatch.setattr(miniagents.ledger, "MAX_TEXT", len(entry))  # at the bound: read (and found not to be one)
    with pytest.raises(SessionStoreError, match="holds an entry miniagents did not write"):
        Runner.run_sync(agent, [], session=session)
    assert parsed == [entry]


def test_a_runs_own_journal_entry_is_never_refused_for_its_size(tmp_path, monkeypatch):
    """The cap is on what a session gives; a run whose state grew past it read its own entry back, was refused, and
    left that entry in the journal for every later run."""
    import miniagents.ledger

    @function_tool
    def big(n: int) -> str:
        return "x" * 3000

    monkeypatch.setattr(miniagents.ledger, "MAX_TEXT", 2000)
    agent, _ = make_agent([[function_call("big", {"n": 1}, call_id="c1")],
                           [function_call("big", {"n": 2}, call_id="c2")], [assistant_message("done")]], tools=[big])
    session = SQLiteSession("conv", str(tmp_path / "s.db"))
    assert Runner.run_sync(agent, "go", session=session).final_output == "done"
    assert session.read_journal() == ""


@pytest.mark.parametrize("entry", [5, ["x"], {"run_id": "r"}, b'{"a": 1}'])
def test_a_journal_a_custom_session_gives_as_no_text_is_a_session_store_error(tmp_path, entry):
    class Gives(SQLiteSession):
        def read_journal(self):
            return entry

    agent, _ = make_agent([[assistant_message("hi")]])
    with pytest.raises(SessionStoreError, match="holds an entry miniagents did not write"):
        Runner.run_sync(agent, [], session=Gives("conv", str(tmp_path / "s.db")))


def paused_document():
    @function_tool(needs_approval=True)
    def delete(p: str) -> str:
        return "deleted"

    agent, _ = make_agent([[function_call("delete", {"p": "a"}, call_id="c1")]], tools=[delete])
    return agent, Runner.run_sync(agent, "go").to_state().to_json()


def test_a_state_text_over_the_size_a_state_may_have_is_refused_before_it_is_parsed_and_never_written(monkeypatch):
    import miniagents.state

    agent, document = paused_document()
    text = json.dumps(document)
    monkeypatch.setattr(miniagents.state, "MAX_TEXT", len(text) - 1)
    with pytest.raises(UserError, match="over the"):
        RunState.from_string(agent, text)
    with pytest.raises(UserError, match="over the"):  # refused by its size, not as JSON that does not parse
        RunState.from_string(agent, "[" * len(text))
    state = RunState.from_json(agent, document)
    state.context_wrapper.context = {"notes": "x" * len(text)}
    with pytest.raises(UserError, match="could not be loaded again"):
        state.to_string()
    monkeypatch.setattr(miniagents.state, "MAX_TEXT", len(text))  # at the bound, not over it: read
    assert RunState.from_string(agent, text).to_json() == RunState.from_json(agent, document).to_json()


def test_a_state_text_given_as_bytes_is_measured_in_the_bytes_its_characters_may_take(monkeypatch):
    """MAX_TEXT counts characters: as bytes, a text to_string() wrote below it (an emoji is 4 bytes in UTF-8) was
    refused; bytes over 4 bytes a character still are, before they are parsed."""
    import miniagents.state

    agent, document = paused_document()
    document["original_input"] = "\U0001F600" * 3000
    text = json.dumps(document, ensure_ascii=False)
    monkeypatch.setattr(miniagents.state, "MAX_TEXT", len(text))
    for given in (text.encode("utf-8"), bytearray(text.encode("utf-8"))):
        assert RunState.from_string(agent, given).original_input == document["original_input"]
    with pytest.raises(UserError, match=f"^Run state JSON of {4 * len(text) + 1:,} bytes is over the "
                                        f"{4 * len(text):,} a state may have$"):
        RunState.from_string(agent, b" " * (4 * len(text) + 1))


@pytest.mark.parametrize("depth", [201, 990, 5000])
def test_a_document_nested_deeper_than_a_state_may_be_is_a_user_error_not_a_recursion_error(depth):
    agent, document = paused_document()
    deep: dict = {}
    for _ in range(depth):
        deep = {"a": deep}
    document["context"]["context"] = deep
    with pytest.raises(UserError, match="nested deeper than 200 levels"):
        RunState.from_json(agent, document)
    document["context"]["context"] = "@"
    with pytest.raises(UserError, match="nested|Failed to parse"):  # (json's own limit may come first)
        RunState.from_string(agent, json.dumps(document).replace('"@"', "[" * depth + "]" * depth))


def test_a_document_nested_as_deep_as_a_state_may_be_loads_and_saves_again():
    agent, document = paused_document()
    deep: dict = {}
    for _ in range(190):
        deep = {"a": deep}
    document["context"]["context"] = deep
    assert json.loads(RunState.from_json(agent, document).to_string())["context"]["context"] == deep


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


class Plays(Model):
    """A custom model answering with the items it is given, as they are (ScriptedModel copies them, recursing)."""

    def __init__(self, *answers):
        self.answers = list(answers)

    def get_response(self, *args, **kwargs):
        return ModelResponse(output=self.answers.pop(0))


@pytest.mark.parametrize("depth", [199, 3000])
def test_a_state_holding_a_models_item_nested_deeper_than_a_state_may_be_is_refused_when_written(depth):
    """A custom model's item may hold anything: nested 199 deep beside a call waiting for a person, to_string wrote
    a state that from_string refused (the person's decision could never be given); 3000 deep, a bare
    RecursionError. So deep that Python cannot copy it, it is refused as the response is made: nothing has run."""
    call = {**function_call("delete", {"p": "a"}, call_id="c1"), "extra": nested(depth)}

    @function_tool(needs_approval=True)
    def delete(p: str) -> str:
        return "deleted"

    agent = Agent(name="A", tools=[delete], model=Plays([call]))
    if depth == 3000:
        with pytest.raises(UserError, match=r"^ModelResponse.output holds an item nested deeper than Python copies"):
            Runner.run_sync(agent, "hi")
        return
    state = Runner.run_sync(agent, "hi").to_state()
    with pytest.raises(UserError, match=r"^This RunState cannot be written as JSON that loads again .*: "
                                        r"generated_items\[0\]\['raw_item'\]\['extra'\](\[0\])+ \(nested deeper "
                                        r"than 200 levels\)$"):
        state.to_string()


def test_a_models_item_nested_deeper_than_a_journal_may_be_stops_the_run_before_its_call_runs(tmp_path):
    """With a session's ledger, the turn's journal entry is written before its calls run: it raised a bare
    RecursionError (3000 deep), or was written and could not be read to continue the turn after a crash (199)."""
    ran = []

    @function_tool
    def delete(p: str) -> str:
        ran.append(p)
        return "deleted"

    for depth in (199, 3000):
        call = {**function_call("delete", {"p": "a"}, call_id="c1"), "extra": nested(depth)}
        agent = Agent(name="A", tools=[delete], model=Plays([call], [assistant_message("done")]))
        session = SQLiteSession(f"deep{depth}", str(tmp_path / "s.db"))
        with pytest.raises(UserError, match="nested deeper than (200 levels|Python copies)"):
            Runner.run_sync(agent, "hi", session=session)
        assert ran == [] and session.get_items() == []


def test_a_state_whose_run_ended_does_not_run_again(tmp_path):
    """Run again, it asked the model once more with no new input and the session got a second answer."""
    @function_tool(needs_approval=True)
    def delete(p: str) -> str:
        return "deleted"

    agent, model = make_agent([[function_call("delete", {"p": "a"}, call_id="c1")], [assistant_message("Done.")],
                               [assistant_message("Done again.")]], tools=[delete])
    session = SQLiteSession("conv", str(tmp_path / "s.db"))
    state = Runner.run_sync(agent, "delete a", session=session).to_state()
    state.approve(state.get_interruptions()[0])
    assert Runner.run_sync(agent, state, session=session).final_output == "Done."
    for again in (state, RunState.from_string(agent, state.to_string())):
        with pytest.raises(UserError, match="already ended with a final output"):
            Runner.run_sync(agent, again, session=session)
    assert len(model.calls) == 2 and [i.get("role") or i["type"] for i in session.get_items()] == [
        "user", "function_call", "function_call_output", "assistant"]


CHILD = """
import os, sys
from miniagents import Agent, Runner, RunState, SQLiteSession, function_tool
from miniagents.testing import ScriptedModel, assistant_message

@function_tool(needs_approval=True)
def delete_file(path: str) -> str:
    open(sys.argv[2], "a").write("deleted\\n")
    os._exit(7)  # the process dies inside the approved call, before its output is recorded

agent = Agent("A", tools=[delete_file], model=ScriptedModel([[assistant_message("child")]]))
Runner.run_sync(agent, RunState.from_string(agent, open(sys.argv[3]).read()), session=SQLiteSession("conv", sys.argv[1]))
"""


def test_a_process_that_dies_in_an_approved_resume_leaves_its_turn_to_continue(tmp_path):
    """The resumed turn is journaled as it starts: a continue finds it (new input is refused), asks the person
    about the call that may have happened, and the history says what happened, once."""
    import subprocess
    import sys

    from miniagents import UnfinishedTurnError
    from miniagents.ledger import MAY_HAVE_HAPPENED
    from support import ROOT

    @function_tool(needs_approval=True)
    def delete_file(path: str) -> str:
        raise AssertionError("a call that may have happened never runs again unasked")

    db, log, saved = tmp_path / "s.db", tmp_path / "log", tmp_path / "state.json"
    agent, _ = make_agent([[function_call("delete_file", {"path": "a.txt"}, call_id="c1")],
                           [assistant_message("done")]], tools=[delete_file], name="A")
    session = SQLiteSession("conv", str(db))
    state = Runner.run_sync(agent, "tidy", session=session).to_state()
    state.approve(state.get_interruptions()[0])
    saved.write_text(state.to_string())
    child = subprocess.run([sys.executable, "-c", CHILD, str(db), str(log), str(saved)], cwd=ROOT, timeout=120,
                           env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert child.returncode == 7 and log.read_text() == "deleted\n"
    with pytest.raises(UnfinishedTurnError):
        Runner.run_sync(agent, "something else", session=session)
    asked = Runner.run_sync(agent, [], session=session)
    assert [i.raw_item["call_id"] for i in asked.interruptions] == ["c1"] and session.get_items() == []
    state = asked.to_state()
    state.reject(asked.interruptions[0])
    assert Runner.run_sync(agent, state, session=session).final_output == "done"
    assert [(i.get("role") or i["type"], i.get("output")) for i in session.get_items()] == [
        ("user", None), ("function_call", None), ("function_call_output", MAY_HAVE_HAPPENED), ("assistant", None)]
    assert session.read_journal() == ""


@pytest.mark.parametrize("version", [2, 6])
def test_a_document_of_version_two_or_later_without_its_run_id_is_refused(version):
    agent, document = paused_document()  # a run id is what every resume of one paused state shares (version 2 on)
    document = {key: value for key, value in document.items() if key != "run_id"}
    with pytest.raises(UserError, match="missing required field 'run_id'"):
        RunState.from_json(agent, {**document, "schema_version": version})


def test_a_paused_turn_handed_to_another_agent_in_the_document_is_refused_not_run_with_its_tools():
    """B's `pay` waits for a person; the document edited to make A current ran A's `pay` (no approval) instead."""
    ran = []

    @function_tool(needs_approval=True)
    def pay(cents: int) -> str:
        ran.append(("B", cents))
        return "paid"

    @function_tool(name_override="pay")
    def pay_freely(cents: int) -> str:
        ran.append(("A", cents))
        return "paid"

    b, _ = make_agent([[function_call("pay", {"cents": 5}, call_id="c1")], [assistant_message("B done")]], name="B",
                      tools=[pay])
    a, _ = make_agent([[function_call("transfer_to_b", {}, call_id="h1")], [assistant_message("A done")]], name="A",
                      tools=[pay_freely], handoffs=[b])
    document = Runner.run_sync(a, "go").to_state().to_json()
    assert document["current_agent"] == document["pending_turn"]["agent"] == "B"
    with pytest.raises(UserError, match="pending_turn.agent 'B' is not current_agent 'A'"):
        RunState.from_json(a, {**document, "current_agent": "A"})
    assert ran == []


HUGE = "sk-SECRET-" + "Z" * 100_000  # a key or name the document (or the context) holds: quoted, it is cut short


def _set(path, value):
    def edit(document):
        target = document
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return edit


@pytest.mark.parametrize("edit", [
    _set(("context", "context"), {HUGE: float("nan")}), _set(("context", "approvals", HUGE), {"approved": 5}),
    _set(("generated_items", 0, "type"), HUGE), _set(("current_agent",), HUGE), _set(("starting_agent",), HUGE),
    _set(("pending_turn", "nested", HUGE), {}), _set(("schema_version",), int("9" * 4000)),
    _set(("pending_turn", "start"), int("9" * 4000))],
    ids=["context key", "approvals key", "item type", "current_agent", "starting_agent", "nested call id",
         "schema_version", "pending_turn.start"])
def test_what_a_refused_document_holds_is_quoted_cut_short(edit):
    """Each was quoted whole: a message of 100,000 characters (a secret in a key, too) in a log or a reply."""
    agent, document = paused_document()
    edit(document)
    with pytest.raises(UserError) as refused:
        RunState.from_json(agent, document)
    assert len(refused.value.message) < 1000 and "ZZZ" * 100 not in refused.value.message


@pytest.mark.parametrize("context", [{HUGE: object()}, {(HUGE,): 1}, {"deps": {HUGE: [float("nan")]}}],
                         ids=["value JSON cannot hold", "non-string key", "NaN"])
def test_a_context_json_cannot_hold_is_a_user_error_quoting_its_path_cut_short(context):
    """A non-string or huge key raised a bare TypeError quoting it whole."""
    agent, document = paused_document()
    state = RunState.from_json(agent, document, context_override=context)
    for write in (state.to_json, state.to_string):
        with pytest.raises(UserError, match="run context is not JSON-serialisable at context") as refused:
            write()
        assert len(refused.value.message) < 1000


SURROGATES = st.text(alphabet=st.sampled_from(["a", "é", "\ud800", "\udfff", "\ud83d", "\ude00"]), max_size=8)


@settings(max_examples=40, deadline=None)
@given(text=SURROGATES, as_items=st.booleans())
def test_a_lone_surrogate_in_run_input_is_repaired_where_it_enters(text, as_items):
    """`Runner.run_sync(agent, "go \\ud800")` sent it to the model, and the state's to_string() could not be
    written as UTF-8 (nor could the session or a request take it)."""
    agent, _ = paused_document()
    given_input = [{"role": "user", "content": [{"type": "input_text", "text": text}]}] if as_items else text
    model = ScriptedModel([[function_call("delete", {"p": "a"}, call_id="c1")]])
    state = Runner.run_sync(agent.clone(model=model), given_input).to_state()
    state.add_input(text)
    json.dumps(model.calls[0].input, ensure_ascii=False).encode("utf-8")
    state.to_string().encode("utf-8")
    json.dumps(state.pending_input, ensure_ascii=False).encode("utf-8")  # as it entered, not only once written


@pytest.mark.parametrize("as_items", [False, True])
def test_a_lone_surrogate_in_a_state_made_by_hand_is_repaired_as_it_is_made(as_items):
    """RunState(None, "go \\ud800", agent) sent it to the model (a run given that input sends U+FFFD) and its
    to_string() wrote what from_string refused."""
    agent, _ = make_agent([[assistant_message("done")]])
    state = RunState(None, [{"role": "user", "content": "go \ud800"}] if as_items else "go \ud800", agent)
    assert Runner.run_sync(agent, state).final_output == "done"
    assert agent.model.calls[0].input[0]["content"] == "go \ufffd"
    assert RunState.from_string(agent, state.to_string()).to_json() == state.to_json()


def test_a_lone_surrogate_in_a_loaded_document_is_repaired_as_it_loads():
    agent, document = paused_document()
    document["original_input"] = "go \ud800"  # as a \\ud800 escape in the JSON text reads
    document["context"]["context"] = {"note \udfff": "\ud83d\ude00"}  # (a pair is joined)
    for loaded in (RunState.from_json(agent, document), RunState.from_string(agent, json.dumps(document))):
        assert loaded.original_input == "go \ufffd"
        assert loaded.context_wrapper.context == {"note \ufffd": "\U0001F600"}
        loaded.to_string().encode("utf-8")


def test_a_turn_in_flight_whose_response_holds_an_item_the_loop_skips_continues_after_a_crash(tmp_path):
    """The journal holds the turn's response as it came, local_shell_call and all (the loop warned and skipped
    it): continuing refused the journal as holding a turn this agent cannot continue."""
    ran = []

    @function_tool
    def boom(x: int) -> str:
        ran.append(x)
        if len(ran) == 1:
            raise KeyboardInterrupt  # the process stops inside the call, before its output is recorded
        return "boom ok"

    shell = {"type": "local_shell_call", "id": "ls1", "call_id": "ls1", "status": "completed",
             "action": {"type": "exec", "command": ["ls"], "env": {}}}
    agent, _ = make_agent([[shell, function_call("boom", {"x": 2}, call_id="c1")], [assistant_message("done")]],
                          tools=[boom])
    with pytest.raises(KeyboardInterrupt):
        Runner.run_sync(agent, "go", session=SQLiteSession("conv", str(tmp_path / "s.db")))
    result = Runner.run_sync(agent, [], session=SQLiteSession("conv", str(tmp_path / "s.db")))
    assert [i.raw_item["call_id"] for i in result.interruptions] == ["c1"] and ran == [2]  # a person decides


@settings(max_examples=30, deadline=None)
@given(text=SURROGATES)
def test_a_lone_surrogate_in_the_callers_context_or_a_decision_is_repaired_where_the_state_is_written(text):
    """No entry point cleans the caller's context (nor a rejection message): to_string() gave text UTF-8 cannot
    encode, so the state could be neither written to a file nor loaded from one."""
    agent, document = paused_document()
    state = RunState.from_json(agent, document)
    state.context_wrapper.context = {"note " + text: [text, {"k": text}]}
    state.reject(state.get_interruptions()[0], rejection_message=text)
    written = state.to_string()
    written.encode("utf-8")
    repaired = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    assert RunState.from_string(agent, written).context_wrapper.context == {"note " + repaired: [repaired,
                                                                                                 {"k": repaired}]}
    assert state.context_wrapper.context == {"note " + text: [text, {"k": text}]}  # the state's own, untouched
    serialized = state.to_json(context_serializer=lambda context: "serialized " + text)
    json.dumps(serialized, ensure_ascii=False).encode("utf-8")
