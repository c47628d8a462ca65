"""A session's store that fails mid-run with an error of its own (what an attack on the ledger found): whatever a
ledger-keeping session's write, claim or journal raises in a run (a driver's error the dialect does not classify,
a trigger of your own, a custom session's exception) is the store failing, as a `SessionStoreError` is. The run
raises a `SessionStoreError` whose `__cause__` is that error, writes nothing more of its turn, and leaves the turn
journaled, as a crash does: a continue (`[]`) finishes it from the ledger, no call runs twice, and the history says
what happened. A call whose claim failed never started, and is never said to have. A state the journal cannot hold
(a value JSON cannot hold) is a `UserError` before any call of its turn runs."""
import datetime
import sqlite3

import pytest

from miniagents import Agent, RunConfig, Runner, SQLiteSession, UnfinishedTurnError, UserError, function_tool
from miniagents.ledger import MAY_HAVE_HAPPENED, NEVER_STARTED, NOT_RUN_AGAIN
from miniagents.sql_session import SessionStoreError
from miniagents.testing import ScriptedModel, assistant_message, function_call
from miniagents.turn import HALTED, STOPPED_MIDWAY

UNSURE = {STOPPED_MIDWAY, MAY_HAVE_HAPPENED, NOT_RUN_AGAIN}  # what a call that may have run is told
NOT_RUN = {NEVER_STARTED, HALTED}


def charging(charges):
    @function_tool
    def charge(cents: int) -> str:
        """Charge the customer."""
        charges.append(cents)
        return f"charged {cents}"

    return charge


def one_charge(charges, model=None):
    model = model or ScriptedModel([[function_call("charge", {"cents": 500}, call_id="k1")],
                                    [assistant_message("done")]])
    return Agent(name="Till", tools=[charging(charges)], model=model)


def kinds(session):
    return [(item.get("type") or item.get("role"), item.get("output")) for item in session.get_items()]


def test_a_turn_write_a_trigger_refuses_leaves_the_turn_journaled_and_a_continue_charges_once(tmp_path):
    path, charges = str(tmp_path / "s.db"), []
    session = SQLiteSession("s", path)
    with sqlite3.connect(path) as db:  # a rule of your own database: it refuses the turn's tool outputs
        db.execute("CREATE TRIGGER no_outputs BEFORE INSERT ON agent_messages WHEN NEW.message_data LIKE "
                   "'%function_call_output%' BEGIN SELECT RAISE(ABORT, 'refused'); END")
    with pytest.raises(SessionStoreError, match="add_items raised IntegrityError") as raised:
        Runner.run_sync(one_charge(charges), "pay", session=session)
    assert isinstance(raised.value.__cause__, sqlite3.IntegrityError) and "refused" not in str(raised.value)
    assert charges == [500] and session.get_items() == [] and session.read_journal()  # kept, as after a crash
    with pytest.raises(UnfinishedTurnError):
        Runner.run_sync(one_charge(charges), "pay", session=session)
    with sqlite3.connect(path) as db:
        db.execute("DROP TRIGGER no_outputs")
    model = ScriptedModel([[assistant_message("done")]])
    assert Runner.run_sync(one_charge(charges, model), [], session=session).final_output == "done"
    assert charges == [500] and not session.read_journal()
    assert kinds(session) == [("user", None), ("function_call", None), ("function_call_output", "charged 500"),
                              ("message", None)]


@pytest.mark.parametrize("error", [sqlite3.OperationalError("interrupted"), RuntimeError("the host is gone")])
def test_a_claim_that_fails_before_its_call_starts_never_says_the_call_may_have_happened(tmp_path, error):
    charges = []

    class Refusing(SQLiteSession):
        refuse = True

        def claim_call(self, run_id, call_id):
            if call_id == "k1" and self.refuse:
                raise error
            return super().claim_call(run_id, call_id)

    session = Refusing("s", str(tmp_path / "s.db"))
    with pytest.raises(SessionStoreError) as raised:
        Runner.run_sync(one_charge(charges), "pay", session=session)
    assert raised.value.__cause__ is error and charges == [] and session.get_items() == [] and session.read_journal()
    session.refuse = False  # the call never started: the continue runs it, once, and the history says so
    assert Runner.run_sync(one_charge(charges), [], session=session).final_output == "done" and charges == [500]
    assert ("function_call_output", "charged 500") in kinds(session) and not session.read_journal()


def test_an_agent_tools_inner_run_whose_claim_fails_stops_its_caller_never_a_tool_error(tmp_path):
    charges = []

    class Refusing(SQLiteSession):
        def claim_call(self, run_id, call_id):
            if call_id == "i1":
                raise sqlite3.OperationalError("disk I/O error")
            return super().claim_call(run_id, call_id)

    inner = Agent(name="Inner", tools=[charging(charges)], model=ScriptedModel(
        [[function_call("charge", {"cents": 5}, call_id="i1")], [assistant_message("paid")]]))
    outer_model = ScriptedModel([[function_call("helper", {"input": "pay"}, call_id="o1")],
                                 [assistant_message("again?")]])
    outer = Agent(name="Outer", tools=[inner.as_tool("helper", "Pays.")], model=outer_model)
    session = Refusing("s", str(tmp_path / "s.db"))
    with pytest.raises(SessionStoreError, match="OperationalError"):  # not told to the model as the tool's failure
        Runner.run_sync(outer, "pay", session=session)
    assert len(outer_model.calls) == 1 and session.read_journal() and session.get_items() == []


class Faulty(SQLiteSession):
    """A session whose `fault`-th call of a store method (counted from 0 across all of them) raises `error`:
    "before" the method runs (nothing stored) or "after" it returned (stored, and the caller told it failed)."""

    fault, error, when, count = -1, None, "before", 0

    def _faulty(self, method, *args, **options):
        hit, self.count = self.count == self.fault, self.count + 1
        if hit and self.when == "before":
            raise self.error
        result = getattr(super(), method)(*args, **options)
        if hit:
            raise self.error
        return result

    def add_items(self, items, **options):
        return self._faulty("add_items", items, **options)

    def claim_call(self, run_id, call_id):
        return self._faulty("claim_call", run_id, call_id)

    def settle_call(self, run_id, call_id, output):
        return self._faulty("settle_call", run_id, call_id, output)

    def lookup_call(self, run_id, call_id):
        return self._faulty("lookup_call", run_id, call_id)

    def read_journal(self):
        return self._faulty("read_journal")

    def write_journal(self, expected, entry):
        return self._faulty("write_journal", expected, entry)


def shop(call):
    """The model: charges 1 and 2 in one turn, then 3, then says it is done, by what its input holds."""
    asked = {item["call_id"] for item in call.input if item.get("type") == "function_call"}
    if "a" not in asked:
        return [function_call("charge", {"cents": 1}, call_id="a"), function_call("charge", {"cents": 2}, call_id="b")]
    if "c" not in asked:
        return [function_call("charge", {"cents": 3}, call_id="c")]
    return [assistant_message("done")]


def finish(session, charges, config):
    """Go on after the failure, as the error says: continue the journaled turn with [] (a call that may have run is
    left to a person, who rejects it), or, when the session holds nothing of the run, ask again."""
    agent = Agent(name="Till", tools=[charging(charges)], model=ScriptedModel([shop] * 8))
    journaled, items = session.read_journal(), session.get_items()
    if not journaled and not items:
        assert charges == []  # nothing ran and nothing is kept: the run is asked for again
        return Runner.run_sync(agent, "pay", session=session, run_config=config)
    if not journaled:  # the run ended, and its last write was stored though the store said it failed
        return None
    result = Runner.run_sync(agent, [], session=session, run_config=config)
    while result.interruptions:
        state = result.to_state()
        for item in result.interruptions:
            state.reject(item)
        result = Runner.run_sync(agent, state, session=session, run_config=config)
    return result


FAULTS = [(sqlite3.IntegrityError("refused"), "before"), (sqlite3.OperationalError("disk I/O error"), "after"),
          (RuntimeError("the store is gone"), "before"), (RuntimeError("the store is gone"), "after"),
          (SessionStoreError("the disk is full"), "before")]


@pytest.mark.parametrize("error, when", FAULTS)
@pytest.mark.parametrize("concurrency", [1, 2])
def test_every_store_call_of_a_multi_call_run_may_fail_and_a_continue_runs_no_call_twice_and_tells_the_truth(
        tmp_path, error, when, concurrency):
    config, fault = RunConfig(max_function_tool_concurrency=concurrency), 0
    while True:
        charges = []
        session = Faulty(f"s{fault}", str(tmp_path / f"{fault}.db"))
        session.fault, session.error, session.when = fault, error, when
        agent = Agent(name="Till", tools=[charging(charges)], model=ScriptedModel([shop] * 8))
        try:
            Runner.run_sync(agent, "pay", session=session, run_config=config)
        except Exception as failure:
            raised = failure
        else:  # the run made fewer store calls than that: every one of them was swept
            assert session.count <= fault
            break
        session.fault = -1  # the store works again
        result = finish(session, charges, config)
        items = session.get_items()
        where = f"fault at store call {fault} ({when}): {charges}, {items}"
        assert result is None or result.final_output == "done", where
        assert sorted(charges) == sorted(set(charges)) and not session.read_journal(), where  # none ran twice
        assert [item.get("content") for item in items if item.get("role") == "user"] == ["pay"], where
        calls = [item["call_id"] for item in items if item.get("type") == "function_call"]
        outputs = {item["call_id"]: item["output"] for item in items if item.get("type") == "function_call_output"}
        assert sorted(calls) == ["a", "b", "c"] and sorted(outputs) == ["a", "b", "c"], where  # each once, paired
        for call_id, cents in (("a", 1), ("b", 2), ("c", 3)):
            told = {f"charged {cents}"} | UNSURE if cents in charges else NOT_RUN | UNSURE
            assert outputs[call_id] in told, where
        assert raised is error or isinstance(raised, SessionStoreError) and raised.__cause__ is error, where
        fault += 1
    assert fault > 20  # the run's store calls: the journal, the claims, the outcomes, the writes


def test_a_claim_that_fails_while_a_sibling_call_raises_leaves_the_turn_to_say_the_claimed_call_never_ran(tmp_path):
    ran = []

    @function_tool(failure_error_function=None)
    def crash() -> str:
        """Raise."""
        ran.append("crash")
        raise RuntimeError("the host is gone")

    class Refusing(SQLiteSession):
        refuse = True

        def claim_call(self, run_id, call_id):
            if call_id == "b" and self.refuse:
                raise sqlite3.OperationalError("disk I/O error")
            return super().claim_call(run_id, call_id)

    charges, session = [], Refusing("s", str(tmp_path / "s.db"))
    agent = Agent(name="Till", tools=[crash, charging(charges)], model=ScriptedModel(
        [[function_call("crash", {}, call_id="a"), function_call("charge", {"cents": 2}, call_id="b")],
         [assistant_message("done")]]))
    config = RunConfig(max_function_tool_concurrency=2)
    with pytest.raises(RuntimeError, match="the host is gone"):  # the first error in call order: the tool's own
        Runner.run_sync(agent, "go", session=session, run_config=config)
    assert ran == ["crash"] and charges == [] and session.get_items() == [] and session.read_journal()
    session.refuse = False
    assert Runner.run_sync(agent, [], session=session, run_config=config).final_output == "done"
    assert ran == ["crash"] and charges == []  # the turn ended where it failed: nothing more of it runs
    assert kinds(session)[1:5] == [("function_call", None), ("function_call", None), ("function_call_output",
                                   STOPPED_MIDWAY), ("function_call_output", NEVER_STARTED)]

def test_an_input_item_the_journal_cannot_hold_is_a_user_error_before_the_model_is_asked(tmp_path):
    session, model = SQLiteSession("s", str(tmp_path / "s.db")), ScriptedModel([[assistant_message("ok")]])
    item = {"role": "user", "content": "hi", "metadata": {"at": datetime.datetime(2026, 1, 1)}}
    with pytest.raises(UserError, match="journal .*datetime"):
        Runner.run_sync(Agent(name="a", model=model), [item], session=session)
    assert model.calls == () and session.get_items() == [] and not session.read_journal()


def test_a_custom_models_item_the_journal_cannot_hold_is_a_user_error_before_any_call_runs(tmp_path):
    charges, session = [], SQLiteSession("s", str(tmp_path / "s.db"))
    call = {**function_call("charge", {"cents": 500}, call_id="k1"), "score": float("-inf")}
    with pytest.raises(UserError, match=r"journal .*\['score'\] \(-inf: JSON has no such number\)"):
        Runner.run_sync(one_charge(charges, ScriptedModel([[call]])), "pay", session=session)
    assert charges == [] and session.get_items() == [] and not session.read_journal()


def test_a_user_error_from_the_store_inside_an_agent_tool_stops_the_run_and_is_never_told_to_the_model(tmp_path):
    """A custom session's UserError (any error of the package's but a SessionStoreError) passed through as it was:
    inside an agent tool the model was told the tool failed, asked again, and the charge ran twice."""
    charges = []

    class Refusing(SQLiteSession):
        def settle_call(self, run_id, call_id, output):
            if call_id == "i1":
                raise UserError("quota exceeded")
            return super().settle_call(run_id, call_id, output)

    inner = Agent(name="Inner", tools=[charging(charges)], model=ScriptedModel(
        [[function_call("charge", {"cents": 5}, call_id="i1")], [assistant_message("paid")]] * 2))
    outer_model = ScriptedModel([[function_call("helper", {"input": "pay"}, call_id="o1")],
                                 [function_call("helper", {"input": "pay"}, call_id="o2")], [assistant_message("done")]])
    outer = Agent(name="Outer", tools=[inner.as_tool("helper", "Pays.")], model=outer_model)
    session = Refusing("s", str(tmp_path / "s.db"))
    with pytest.raises(SessionStoreError) as caught:
        Runner.run_sync(outer, "pay", session=session)
    assert isinstance(caught.value.__cause__, UserError) and "quota" not in str(caught.value)
    assert charges == [5] and len(outer_model.calls) == 1 and session.read_journal()


def test_ctrl_c_while_the_turn_is_written_leaves_the_turn_journaled(tmp_path):
    """The write was marked done before it ran, and Ctrl-C is no Exception: the journal was emptied, nothing said the
    charge happened, and asking again charged twice."""
    charges = []

    class CtrlC(SQLiteSession):
        armed = True

        def add_items(self, items, **options):
            if self.armed:
                self.armed = False
                raise KeyboardInterrupt  # pressed while the driver waited on the database
            return super().add_items(items, **options)

    session = CtrlC("s", str(tmp_path / "s.db"))
    with pytest.raises(KeyboardInterrupt):
        Runner.run_sync(one_charge(charges), "pay", session=session)
    assert session.get_items() == [] and session.read_journal()
    assert Runner.run_sync(one_charge(charges), [], session=session).final_output == "done"
    assert charges == [500] and kinds(session)[1:3] == [("function_call", None), ("function_call_output", "charged 500")]


def test_a_session_write_that_starts_after_an_immediate_cancel_still_runs(tmp_path):
    """A cancel stops the run at its next step; a coroutine the store awaits after it is no request to abort (every
    awaited callable added after the cancel was stopped at once: the turn's write never happened, and the charge
    was in no history)."""
    import asyncio

    from miniagents import RunState

    class Awaiting(SQLiteSession):  # a store whose methods await their database
        def __getattribute__(self, name):
            method = super().__getattribute__(name)
            if name not in ("add_items", "claim_call", "settle_call", "lookup_call", "read_journal", "write_journal"):
                return method

            async def later(*args, **options):
                await asyncio.sleep(0.01)
                return method(*args, **options)
            return later

    charges, holder = [], {}

    @function_tool
    def charge(cents: int) -> str:
        """Charge the customer."""
        charges.append(cents)
        holder["state"].cancel()
        return f"charged {cents}"

    agent = Agent(name="Till", tools=[charge], model=ScriptedModel(
        [[function_call("charge", {"cents": 500}, call_id="k1")], [assistant_message("done")]]))
    session = Awaiting("s", str(tmp_path / "s.db"))
    holder["state"] = RunState(None, "pay", agent)
    Runner.run_sync(agent, holder["state"], session=session)
    assert charges == [500] and ("function_call_output", "charged 500") in kinds(session)


def test_a_cancel_while_an_async_store_writes_the_turn_leaves_it_journaled(tmp_path):
    """The cancel stopped the write it awaited, and the run took the turn for written: the journal was emptied, and
    no history ever said the charge happened. Whether the stopped write did its part is unknown: the turn stays
    journaled, and a continue finishes it."""
    import asyncio
    import threading

    from miniagents import RunState

    writing = threading.Event()

    class Awaiting(SQLiteSession):
        def add_items(self, items, **options):
            async def later():
                writing.set()
                await asyncio.sleep(5)  # the cancel comes first
                return SQLiteSession.add_items(self, items, **options)
            return later()

    charges, path = [], str(tmp_path / "s.db")
    state = RunState(None, "pay", one_charge(charges))
    threading.Thread(target=lambda: (writing.wait(30), state.cancel())).start()
    Runner.run_sync(state.starting_agent, state, session=Awaiting("s", path))
    session = SQLiteSession("s", path)
    assert charges == [500] and session.get_items() == [] and session.read_journal()
    assert Runner.run_sync(one_charge(charges), [], session=session).final_output == "done"
    assert charges == [500] and ("function_call_output", "charged 500") in kinds(session)
