"""Specification of human approval: a call that needs a person pauses the run, and the run's state resumes it.

Arranged with the scripted model; each test asserts what ran (a tool log), what the model was sent and how often
it was called. The rules: a tool that needs approval never runs before an explicit approve for that
call; a resumed run executes the approved calls and answers the rejected ones without calling the model again
for the paused turn; a call id never executes twice.
"""
import asyncio
import importlib.util
import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, strategies as st

from miniagents.errors import AlreadyResumedError, UserError
from miniagents import Agent, RunContextWrapper, Runner, RunState, ToolApprovalItem, function_tool
from miniagents.items import drop_orphans
from miniagents.session import SQLiteSession
from miniagents.testing import ScriptedModel, assistant_message, function_call

from support import ROOT, outputs_sent  # noqa: E402
HELPER = os.path.join(ROOT, "tests", "helpers", "resume_in_new_process.py")
REJECTED = "Tool execution was not approved."


def make_tools(log, needs_approval=True):
    @function_tool(needs_approval=needs_approval)
    def delete_file(path: str) -> str:
        """Delete one file."""
        log.append(("delete_file", path))
        return f"deleted {path}"

    @function_tool(needs_approval=True)
    def send_email(to: str) -> str:
        """Send an email."""
        log.append(("send_email", to))
        return f"sent to {to}"

    @function_tool
    def list_files(folder: str) -> str:
        """List a folder."""
        log.append(("list_files", folder))
        return "a.txt b.txt"

    return delete_file, send_email, list_files


def janitor(model, log, **tool_options):
    return Agent("Janitor", instructions="Keep the disk tidy.", tools=list(make_tools(log, **tool_options)),
                 model=model)


def delete(path, call_id):
    return function_call("delete_file", {"path": path}, call_id=call_id)


def output_count(items, call_id):
    return sum(1 for i in items if i.get("type") == "function_call_output" and i.get("call_id") == call_id)


def paused(model, log, *first_turn, **tool_options):
    """Run until the first turn pauses; returns (agent, result)."""
    model.enqueue(list(first_turn))
    agent = janitor(model, log, **tool_options)
    return agent, Runner.run_sync(agent, "tidy up")


# --- Pausing ------------------------------------------------------------------------------------------------


def test_call_needing_approval_does_not_run_and_is_listed_as_an_interruption():
    log, model = [], ScriptedModel()
    _, result = paused(model, log, delete("a.txt", "c1"))
    assert log == []
    assert result.final_output is None
    [item] = result.interruptions
    assert isinstance(item, ToolApprovalItem)
    assert item.type == "tool_approval_item"
    assert (item.tool_name, item.name, item.call_id) == ("delete_file", "delete_file", "c1")
    assert item.parsed_arguments == {"path": "a.txt"} and item.arguments == '{"path":"a.txt"}'
    assert len(model.calls) == 1


def test_an_approval_items_arguments_that_are_no_json_are_given_as_the_model_sent_them():
    log, model = [], ScriptedModel()
    _, result = paused(model, log, function_call("delete_file", "path=a.txt", call_id="c1"))
    [item] = result.interruptions
    assert item.parsed_arguments == item.arguments == "path=a.txt" and log == []


def test_an_approval_item_is_no_transcript_item():
    log, model = [], ScriptedModel()
    _, result = paused(model, log, delete("a.txt", "c1"))
    with pytest.raises(TypeError, match="^a ToolApprovalItem is not a transcript item; approve or reject it instead$"):
        result.interruptions[0].to_input_item()


def test_two_pending_approvals_of_one_turn_are_both_listed_in_model_order():
    log, model = [], ScriptedModel()
    _, result = paused(model, log, delete("a.txt", "c1"), function_call("send_email", {"to": "bob"}, call_id="c2"))
    assert [(i.tool_name, i.call_id, i.parsed_arguments) for i in result.interruptions] == [
        ("delete_file", "c1", {"path": "a.txt"}), ("send_email", "c2", {"to": "bob"})]
    assert log == []


def test_sibling_calls_that_need_no_approval_already_ran_and_their_outputs_are_kept():
    log, model = [], ScriptedModel()
    _, result = paused(model, log, delete("a.txt", "c1"), function_call("list_files", {"folder": "/"}, call_id="c2"))
    assert log == [("list_files", "/")]
    outputs = [i.raw_item for i in result.new_items if i.type == "tool_call_output_item"]
    assert outputs == [{"type": "function_call_output", "call_id": "c2", "output": "a.txt b.txt"}]
    assert result.final_output is None and [i.call_id for i in result.interruptions] == ["c1"]


def test_sibling_output_kept_at_pause_is_not_recomputed_on_resume():
    log, model = [], ScriptedModel()
    agent, result = paused(model, log, delete("a.txt", "c1"),
                           function_call("list_files", {"folder": "/"}, call_id="c2"))
    state = result.to_state()
    state.approve(result.interruptions[0])
    model.enqueue([assistant_message("done")])
    Runner.run_sync(agent, state)
    assert log == [("list_files", "/"), ("delete_file", "a.txt")]
    assert output_count(model.calls[1].input, "c2") == 1


def test_get_interruptions_on_the_state_lists_the_pending_approvals():
    log, model = [], ScriptedModel()
    _, result = paused(model, log, delete("a.txt", "c1"), delete("b.txt", "c2"))
    assert [i.call_id for i in result.to_state().get_interruptions()] == ["c1", "c2"]


# --- Approve and resume -------------------------------------------------------------------------------------


def test_approved_call_runs_once_and_the_model_is_called_exactly_once_more():
    log, model = [], ScriptedModel()
    agent, result = paused(model, log, delete("a.txt", "c1"))
    state = result.to_state()
    state.approve(result.interruptions[0])
    model.extend([[assistant_message("done")], [assistant_message("an extra call")]])
    resumed = Runner.run_sync(agent, state)
    assert resumed.final_output == "done"
    assert log == [("delete_file", "a.txt")]
    assert len(model.calls) == 2 and model.remaining_steps == 1
    assert outputs_sent(model.calls[1]) == {"c1": "deleted a.txt"}
    assert resumed.interruptions == []


def test_resume_with_await_runner_run():
    log, model = [], ScriptedModel()
    agent, result = paused(model, log, delete("a.txt", "c1"))
    state = result.to_state()
    state.approve(result.interruptions[0])
    model.enqueue([assistant_message("done")])
    resumed = asyncio.run(Runner.run(agent, state))
    assert resumed.final_output == "done"
    assert log == [("delete_file", "a.txt")] and len(model.calls) == 2


def test_resume_with_run_streamed():
    log, model = [], ScriptedModel()
    agent, result = paused(model, log, delete("a.txt", "c1"))
    state = result.to_state()
    state.approve(result.interruptions[0])
    model.enqueue([assistant_message("done")])
    streamed = Runner.run_streamed(agent, state)

    async def drain():
        return [event async for event in streamed.stream_events()]

    events = asyncio.run(drain())
    assert streamed.final_output == "done" and events
    assert log == [("delete_file", "a.txt")] and len(model.calls) == 2


def test_a_still_undecided_call_keeps_the_run_paused_without_a_model_call():
    log, model = [], ScriptedModel()
    agent, result = paused(model, log, delete("a.txt", "c1"), delete("b.txt", "c2"))
    state = result.to_state()
    state.approve(result.interruptions[0])
    again = Runner.run_sync(agent, state)
    assert [i.call_id for i in again.interruptions] == ["c2"] and again.final_output is None
    assert log == [("delete_file", "a.txt")] and len(model.calls) == 1
    state = again.to_state()
    state.approve(again.interruptions[0])
    model.enqueue([assistant_message("done")])
    assert Runner.run_sync(agent, state).final_output == "done"
    assert log == [("delete_file", "a.txt"), ("delete_file", "b.txt")] and len(model.calls) == 2


def test_a_call_id_repeated_in_one_response_runs_once():
    log, model = [], ScriptedModel()
    agent = janitor(model, log)
    model.extend([[function_call("list_files", {"folder": "/"}, call_id="c1"),
                   function_call("list_files", {"folder": "/"}, call_id="c1")], [assistant_message("done")]])
    Runner.run_sync(agent, "tidy up")
    assert log == [("list_files", "/")]
    assert output_count(model.calls[1].input, "c1") == 1


# --- Reject ---------------------------------------------------------------------------------------------------


def test_rejection_message_is_the_output_the_model_sees():
    log, model = [], ScriptedModel()
    agent, result = paused(model, log, delete("a.txt", "c1"))
    state = result.to_state()
    state.reject(result.interruptions[0], rejection_message="Not that file; it is the backup.")
    model.enqueue([assistant_message("ok, leaving it")])
    resumed = Runner.run_sync(agent, state)
    assert log == []
    assert outputs_sent(model.calls[1]) == {"c1": "Not that file; it is the backup."}
    assert resumed.final_output == "ok, leaving it" and len(model.calls) == 2


@pytest.mark.parametrize("message", [["not allowed"], 5, {"text": "no"}, b"no"])
def test_a_rejection_message_that_is_no_text_is_refused_when_given_and_nothing_is_decided(message):
    log, model = [], ScriptedModel()
    agent, result = paused(model, log, delete("a.txt", "c1"))
    state = result.to_state()
    with pytest.raises(UserError, match=f"rejection_message must be a str or None, got {type(message).__name__}"):
        state.reject(result.interruptions[0], rejection_message=message)
    with pytest.raises(UserError, match="rejection_message must be a str or None"):
        state.context_wrapper.reject_tool(result.interruptions[0], always_reject=True, rejection_message=message)
    assert state.context_wrapper.approvals == {}  # the call still waits for a person
    assert state.get_interruptions() == result.interruptions


def test_rejection_without_message_sends_the_default_text():
    log, model = [], ScriptedModel()
    agent, result = paused(model, log, delete("a.txt", "c1"))
    state = result.to_state()
    state.reject(result.interruptions[0])
    model.enqueue([assistant_message("ok")])
    Runner.run_sync(agent, state)
    assert log == []
    assert outputs_sent(model.calls[1]) == {"c1": REJECTED}


def test_approving_one_and_rejecting_the_other_of_a_turn():
    log, model = [], ScriptedModel()
    agent, result = paused(model, log, delete("a.txt", "c1"), delete("b.txt", "c2"))
    state = result.to_state()
    state.approve(result.interruptions[0])
    state.reject(result.interruptions[1], rejection_message="keep b")
    model.enqueue([assistant_message("done")])
    Runner.run_sync(agent, state)
    assert log == [("delete_file", "a.txt")]
    assert outputs_sent(model.calls[1]) == {"c1": "deleted a.txt", "c2": "keep b"}
    # Outputs follow the calls in the model's order.
    kinds = [(i.get("type"), i.get("call_id")) for i in model.calls[1].input[1:]]
    assert kinds == [("function_call", "c1"), ("function_call", "c2"),
                     ("function_call_output", "c1"), ("function_call_output", "c2")]


def test_the_last_decision_about_a_call_wins_a_rejection_withdraws_an_earlier_approval_and_back():
    for decisions, ran, output in ((("approve", "reject"), [], REJECTED),
                                   (("reject", "approve"), [("delete_file", "a.txt")], "deleted a.txt")):
        log, model = [], ScriptedModel()
        agent, result = paused(model, log, delete("a.txt", "c1"))
        state = result.to_state()
        for decision in decisions:  # a person changes their mind before the run resumes
            getattr(state, decision)(result.interruptions[0])
        model.enqueue([assistant_message("done")])
        Runner.run_sync(agent, state)
        assert log == ran and outputs_sent(model.calls[1]) == {"c1": output}


# --- needs_approval as a callable ------------------------------------------------------------------------------


def big_deletes_need_approval(asked):
    def needs(ctx, params, call_id):
        asked.append((type(ctx).__name__, getattr(ctx, "context", None), params, call_id))
        return params["path"].startswith("/")
    return needs


def test_needs_approval_callable_receives_context_parsed_params_and_call_id():
    log, asked, model = [], [], ScriptedModel()
    agent = janitor(model, log, needs_approval=big_deletes_need_approval(asked))
    model.enqueue([delete("/etc", "c1")])
    result = Runner.run_sync(agent, "tidy up", context={"user": "ann"})
    assert len(asked) == 1
    kind, context, params, call_id = asked[0]
    assert context == {"user": "ann"} and params == {"path": "/etc"} and call_id == "c1"
    assert [i.call_id for i in result.interruptions] == ["c1"] and log == []


def test_needs_approval_callable_returning_false_runs_the_tool_without_pausing():
    log, asked, model = [], [], ScriptedModel()
    agent = janitor(model, log, needs_approval=big_deletes_need_approval(asked))
    model.extend([[delete("tmp.txt", "c1")], [assistant_message("done")]])
    result = Runner.run_sync(agent, "tidy up")
    assert result.interruptions == [] and result.final_output == "done"
    assert log == [("delete_file", "tmp.txt")]


def test_needs_approval_callable_is_never_asked_again_for_a_call_with_a_decision():
    log, asked, model = [], [], ScriptedModel()
    agent = janitor(model, log, needs_approval=big_deletes_need_approval(asked))
    model.enqueue([delete("/etc", "c1"), delete("tmp.txt", "c2"), delete("/var", "c3")])
    result = Runner.run_sync(agent, "tidy up")
    assert [a[3] for a in asked] == ["c1", "c2", "c3"]
    state = result.to_state()
    state.approve(result.interruptions[0])
    state.reject(result.interruptions[1])
    model.enqueue([assistant_message("done")])
    Runner.run_sync(agent, RunState.from_string(agent, state.to_string()))
    assert [a[3] for a in asked] == ["c1", "c2", "c3"]  # nobody asked again after the decision
    assert log == [("delete_file", "tmp.txt"), ("delete_file", "/etc")]


def test_async_needs_approval_callable_is_awaited():
    log, model = [], ScriptedModel()

    async def needs(ctx, params, call_id):
        return params["path"] == "/etc"

    agent = janitor(model, log, needs_approval=needs)
    model.enqueue([delete("/etc", "c1"), delete("tmp.txt", "c2")])
    result = Runner.run_sync(agent, "tidy up")
    assert [i.call_id for i in result.interruptions] == ["c1"] and log == [("delete_file", "tmp.txt")]


# --- always_approve / always_reject ----------------------------------------------------------------------------


def test_always_approve_applies_to_later_calls_of_the_same_tool_only():
    log, model = [], ScriptedModel()
    agent, result = paused(model, log, delete("a.txt", "c1"))
    state = result.to_state()
    state.approve(result.interruptions[0], always_approve=True)
    model.extend([[delete("b.txt", "c2"), delete("c.txt", "c3"), function_call("send_email", {"to": "bob"},
                                                                               call_id="c4")]])
    again = Runner.run_sync(agent, state)
    assert log == [("delete_file", "a.txt"), ("delete_file", "b.txt"), ("delete_file", "c.txt")]
    assert [i.call_id for i in again.interruptions] == ["c4"]  # another tool still asks
    assert len(model.calls) == 2


def test_always_approve_survives_serialisation():
    log, model = [], ScriptedModel()
    agent, result = paused(model, log, delete("a.txt", "c1"))
    state = result.to_state()
    state.approve(result.interruptions[0], always_approve=True)
    model.extend([[delete("b.txt", "c2")], [assistant_message("done")]])
    final = Runner.run_sync(agent, RunState.from_string(agent, state.to_string()))
    assert final.final_output == "done" and final.interruptions == []
    assert log == [("delete_file", "a.txt"), ("delete_file", "b.txt")]


def test_always_reject_applies_to_later_calls_of_the_same_tool():
    log, model = [], ScriptedModel()
    agent, result = paused(model, log, delete("a.txt", "c1"))
    state = result.to_state()
    state.reject(result.interruptions[0], always_reject=True)
    model.extend([[delete("b.txt", "c2"), function_call("list_files", {"folder": "/"}, call_id="c3")],
                  [assistant_message("giving up")]])
    final = Runner.run_sync(agent, state)
    assert final.interruptions == [] and final.final_output == "giving up"
    assert log == [("list_files", "/")]
    assert outputs_sent(model.calls[1]) == {"c1": REJECTED}
    assert outputs_sent(model.calls[2]) == {"c1": REJECTED, "c2": REJECTED, "c3": "a.txt b.txt"}


def test_a_plain_approval_does_not_stick_to_later_calls():
    log, model = [], ScriptedModel()
    agent, result = paused(model, log, delete("a.txt", "c1"))
    state = result.to_state()
    state.approve(result.interruptions[0])
    model.enqueue([delete("b.txt", "c2")])
    again = Runner.run_sync(agent, state)
    assert [i.call_id for i in again.interruptions] == ["c2"]
    assert log == [("delete_file", "a.txt")]


# --- Agents as tools -------------------------------------------------------------------------------------------


def nested_agents(log, inner_steps, outer_steps, **as_tool_options):
    inner_model, outer_model = ScriptedModel(inner_steps), ScriptedModel(outer_steps)
    inner = Agent("Cleaner", tools=list(make_tools(log)), model=inner_model)
    outer = Agent("Boss", tools=[inner.as_tool("cleaner", "Cleans the disk.", **as_tool_options)],
                  model=outer_model)
    return outer, inner_model, outer_model


def call_cleaner(call_id="o1"):
    return function_call("cleaner", {"input": "clean /tmp"}, call_id=call_id)


def test_approvals_inside_an_agent_tool_surface_on_the_parent_result():
    log = []
    outer, inner_model, outer_model = nested_agents(log, [[delete("a.txt", "i1"), delete("b.txt", "i2")]],
                                                    [[call_cleaner()]])
    result = Runner.run_sync(outer, "go")
    assert [(i.tool_name, i.call_id, i.agent.name) for i in result.interruptions] == [
        ("delete_file", "i1", "Cleaner"), ("delete_file", "i2", "Cleaner")]
    assert result.final_output is None and log == []
    assert not any(i.get("call_id") == "o1" for i in [i.raw_item for i in result.new_items
                                                      if i.type == "tool_call_output_item"])


@pytest.mark.parametrize("through_json", [False, True], ids=["state-object", "to_string-from_string"])
def test_nested_approvals_resume_through_the_parent_state(through_json):
    log = []
    outer, inner_model, outer_model = nested_agents(
        log, [[delete("a.txt", "i1"), delete("b.txt", "i2")], [assistant_message("inner done")]],
        [[call_cleaner()], [assistant_message("outer done")]])
    result = Runner.run_sync(outer, "go")
    state = result.to_state()
    state.approve(result.interruptions[0])
    state.reject(result.interruptions[1], rejection_message="not b")
    if through_json:
        state = RunState.from_string(outer, state.to_string())
    final = Runner.run_sync(outer, state)
    assert final.final_output == "outer done"
    assert log == [("delete_file", "a.txt")]
    assert len(inner_model.calls) == 2 and len(outer_model.calls) == 2
    assert outputs_sent(inner_model.calls[1]) == {"i1": "deleted a.txt", "i2": "not b"}
    assert outputs_sent(outer_model.calls[1]) == {"o1": "inner done"}


def test_agent_tool_with_needs_approval_does_not_start_the_inner_run_before_approval():
    log = []
    outer, inner_model, outer_model = nested_agents(
        log, [[assistant_message("inner done")]], [[call_cleaner()], [assistant_message("outer done")]],
        needs_approval=True)
    result = Runner.run_sync(outer, "go")
    assert [(i.tool_name, i.call_id) for i in result.interruptions] == [("cleaner", "o1")]
    assert inner_model.calls == ()
    state = result.to_state()
    state.approve(result.interruptions[0])
    final = Runner.run_sync(outer, RunState.from_string(outer, state.to_string()))
    assert final.final_output == "outer done" and len(inner_model.calls) == 1


# --- Across processes and with a session ------------------------------------------------------------------------


def load_helper():
    spec = importlib.util.spec_from_file_location("resume_in_new_process", HELPER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_approve_serialise_and_resume_in_a_new_process(tmp_path):
    helper = load_helper()
    log_path, state_path = tmp_path / "tool.log", tmp_path / "state.json"
    log_path.write_text("")
    model = ScriptedModel([[delete("a.txt", "c1"), function_call("list_files", {"folder": "/"}, call_id="c2")]])
    agent = helper.build_agent(model, str(log_path))
    result = Runner.run_sync(agent, "tidy up")
    state = result.to_state()
    state.approve(result.interruptions[0])
    state_path.write_text(state.to_string(), encoding="utf-8")

    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, HELPER, str(state_path), str(log_path)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["tool_runs"] == ["list_files /", "delete_file a.txt"]  # each call ran once, in total
    assert report["model_calls"] == 1 and report["remaining_steps"] == 1
    assert report["final_output"] == "cleaned up"
    sent = report["model_input"]
    assert [output_count(sent, c) for c in ("c1", "c2")] == [1, 1]
    assert {i["call_id"]: i["output"] for i in sent if i.get("type") == "function_call_output"} == {
        "c1": "deleted a.txt", "c2": "a.txt b.txt"}
    assert len(model.calls) == 1  # this process's model was not called again


@pytest.mark.parametrize("reopen", [False, True], ids=["same-session-object", "reopened-session"])
def test_resuming_the_same_json_twice_with_one_session_runs_the_tool_once(tmp_path, reopen):
    """The session is the record of what ran: the second resume of one paused state (a retried webhook) is refused
    with `AlreadyResumedError` before it runs, writes or calls the model, so the history holds one answer.

    Without a session, idempotency is the caller's job: a state JSON cannot know it was already resumed
    elsewhere, so resuming one copy twice without a session may run the approved call twice. Store the JSON
    somewhere you can mark as consumed, or resume with a session. Nothing is asserted about that case here.
    """
    db = tmp_path / "conversation.db"
    log, model = [], ScriptedModel([[delete("a.txt", "c1")]])
    agent = janitor(model, log)
    session = SQLiteSession("conv", db)
    result = Runner.run_sync(agent, "tidy up", session=session)
    state = result.to_state()
    state.approve(result.interruptions[0])
    text = state.to_string()
    model.enqueue([assistant_message("done")])
    assert Runner.run_sync(agent, RunState.from_string(agent, text), session=session).final_output == "done"
    if reopen:
        session.close()
        session = SQLiteSession("conv", db)
    with pytest.raises(AlreadyResumedError) as refused:
        Runner.run_sync(agent, RunState.from_string(agent, text), session=session)
    assert refused.value.outcome == "completed" and "already resumed" in str(refused.value)
    assert "it completed, and the session holds its turn" in str(refused.value)  # what to do next: nothing
    assert log == [("delete_file", "a.txt")] and len(model.calls) == 2
    items = session.get_items()
    assert output_count(items, "c1") == 1
    assert sum(1 for i in items if i.get("type") == "function_call" and i.get("call_id") == "c1") == 1
    assert sum(1 for i in items if i.get("role") == "assistant" and i.get("type", "message") == "message") == 1
    assert drop_orphans(items) == items
    assert outputs_sent(model.calls[1]) == {"c1": "deleted a.txt"}
    session.close()


def test_a_paused_state_holds_the_runs_new_input_once_with_its_paused_turn(tmp_path):
    """A run's new input waits in the state until the session gets it with the first turn written; a turn that
    pauses takes it along (the resumed turn writes both). The paused state holds it in that turn alone: kept also as
    input still to write, the state said two things at once, and its resume, meeting another run's turn in flight
    in the session's journal, took itself for a fresh run with new input and stopped (`UnfinishedTurnError`)."""
    session = SQLiteSession("conv", tmp_path / "conversation.db")
    result = Runner.run_sync(janitor(ScriptedModel([[delete("a.txt", "c1")]]), []), "tidy up", session=session)
    data = result.to_state().to_json()
    assert data["unsaved_session_input"] == []
    assert data["pending_turn"]["session_input"] == [{"role": "user", "content": "tidy up"}]
    assert session.get_items() == []
    session.close()


def test_a_context_wrapper_passed_to_the_tool_sees_the_run_context_after_resume():
    seen, model = [], ScriptedModel()

    @function_tool(needs_approval=True)
    def whoami(ctx: RunContextWrapper) -> str:
        """Report the user."""
        seen.append(ctx.context["user"])
        return ctx.context["user"]

    agent = Agent("A", tools=[whoami], model=model)
    model.enqueue([function_call("whoami", {}, call_id="c1")])
    result = Runner.run_sync(agent, "who", context={"user": "ann"})
    state = RunState.from_string(agent, result.to_state().to_string())
    state.approve(state.get_interruptions()[0])
    model.enqueue([assistant_message("done")])
    Runner.run_sync(agent, state)
    assert seen == ["ann"]


def test_to_input_list_normalized_drops_calls_still_waiting_for_approval():
    log, model = [], ScriptedModel()
    agent, result = paused(model, log, delete("a.txt", "c1"))
    kept = result.to_input_list()
    normalized = result.to_input_list(mode="normalized")
    assert [i.get("call_id") for i in kept if i.get("type") == "function_call"] == ["c1"]
    assert not [i for i in normalized if i.get("type") == "function_call"]


def test_an_approval_covers_the_arguments_it_was_given_for_not_arguments_edited_into_the_json_later():
    """Editing the arguments in the RunState document after approval (5 -> 5000) once ran pay(5000): the call now
    waits for a person again, who sees the edited arguments (issue 20, item 3)."""
    paid = []

    @function_tool(needs_approval=True)
    def pay(amount: int) -> str:
        """Pay an amount."""
        paid.append(amount)
        return f"paid {amount}"

    model = ScriptedModel([[function_call("pay", {"amount": 5}, call_id="c1")], [assistant_message("done")]])
    agent = Agent(name="Payer", tools=[pay], model=model)
    state = Runner.run_sync(agent, "pay 5").to_state()
    state.approve(state.get_interruptions()[0])
    data = state.to_json()
    for item in data["pending_turn"]["output"] + [i["raw_item"] for i in data["generated_items"]]:
        if item.get("type") == "function_call":
            item["arguments"] = '{"amount": 5000}'
    resumed = Runner.run_sync(agent, RunState.from_json(agent, data))
    assert paid == [] and [i.raw_item["arguments"] for i in resumed.interruptions] == ['{"amount": 5000}']
    state = resumed.to_state()
    state.approve(state.get_interruptions()[0])  # a person approves what they now see
    assert Runner.run_sync(agent, state).final_output == "done" and paid == [5000]


def test_the_same_arguments_written_differently_are_still_the_approved_ones():
    paid = []

    @function_tool(needs_approval=True)
    def pay(amount: int, note: str = "") -> str:
        """Pay an amount."""
        paid.append(amount)
        return "paid"

    model = ScriptedModel([[function_call("pay", '{"amount": 5, "note": "x"}', call_id="c1")],
                           [assistant_message("done")]])
    agent = Agent(name="Payer", tools=[pay], model=model)
    state = Runner.run_sync(agent, "pay 5").to_state()
    state.approve(state.get_interruptions()[0])
    data = state.to_json()
    for call in (data["pending_turn"]["output"][0], data["generated_items"][0]["raw_item"]):  # (one call: both agree)
        call["arguments"] = '{ "note" : "x", "amount" : 5 }'
    assert Runner.run_sync(agent, RunState.from_json(agent, data)).final_output == "done" and paid == [5]


@given(name=st.text(min_size=1, max_size=12), given_name=st.sampled_from([None, ""]))
def test_an_approval_item_built_from_a_raw_call_alone_is_named_by_the_call(name, given_name):
    """`ToolApprovalItem(agent=..., raw_item=call)` (as upstream code builds one) has the call's name as its
    `tool_name`, not '' (issue 30); a name given explicitly stands."""
    from miniagents.items import ToolApprovalItem

    agent = Agent(name="A")
    call = function_call(name, {}, call_id="c1")
    extra = {} if given_name is None else {"tool_name": given_name}
    item = ToolApprovalItem(agent=agent, raw_item=call, **extra)
    assert item.tool_name == item.name == name
    assert ToolApprovalItem(agent=agent, raw_item=call, tool_name="other").tool_name == "other"


# --- What an attack found: an agent tool switched off while its inner run waited for a person -------------------


@pytest.mark.parametrize("through_json", [False, True])
def test_an_agent_tool_switched_off_while_its_inner_run_waits_goes_on_and_the_history_says_what_ran(through_json):
    ran, enabled = [], {"sub": True}

    @function_tool
    def step1() -> str:
        ran.append("step1")
        return "s1"

    @function_tool(needs_approval=True)
    def step2() -> str:
        ran.append("step2")
        return "s2"

    inner = Agent(name="I", tools=[step1, step2], model=ScriptedModel(
        [[function_call("step1", {}, call_id="a")], [function_call("step2", {}, call_id="b")],
         [assistant_message("inner done")]]))
    outer = Agent(name="O", tools=[inner.as_tool("sub", "s", is_enabled=lambda ctx, agent: enabled["sub"])],
                  model=ScriptedModel([[function_call("sub", {"input": "x"}, call_id="o1")],
                                       [assistant_message("outer done")]]))
    state = Runner.run_sync(outer, "go").to_state()
    if through_json:
        state = RunState.from_string(outer, state.to_string())
    state.approve(state.get_interruptions()[0])
    enabled["sub"] = False  # switched off while the person decided: the call had begun, its inner steps ran
    result = Runner.run_sync(outer, state)
    assert ran == ["step1", "step2"] and result.final_output == "outer done"
    assert outputs_sent(outer.model.calls[-1]) == {"o1": "inner done"}


def test_approving_and_resuming_many_calls_reads_each_decision_once_not_once_per_call(monkeypatch):
    """Each call's decision was found by searching the list of every decided call: approving, then resuming, n
    calls took n² steps (32,000 calls: 5 seconds)."""
    from miniagents import context

    read = []

    class ReadCounting(context.CallIds):  # counts the ids read when the set beside the list is made
        def __iter__(self):
            read.append(len(self))
            return list.__iter__(self)

    monkeypatch.setattr(context, "CallIds", ReadCounting)
    n = 400

    @function_tool(needs_approval=True)
    def pay(cents: int) -> str:
        return "paid"

    model = ScriptedModel([[function_call("pay", {"cents": i}, call_id=f"k{i}") for i in range(n)],
                           [assistant_message("done")]])
    agent = Agent("Payer", tools=[pay], model=model)
    result = Runner.run_sync(agent, "pay")
    state = result.to_state()
    for item in result.interruptions:
        state.approve(item)
    state.reject(result.interruptions[0])  # a decision changed: its list is read again, once
    again = agent.clone(model=ScriptedModel([[assistant_message("done")]]))
    loaded = RunState.from_string(again, state.to_string())  # a document's lists are read once too
    assert Runner.run_sync(agent, state).final_output == "done"
    assert sum(read) <= 2 * n
    read.clear()
    assert Runner.run_sync(again, loaded).final_output == "done" and 0 < sum(read) <= n  # its set, made once


@pytest.mark.parametrize("edit", ["remove, then append", "replace in place", "delete in place", "a new plain list"])
def test_a_decision_list_edited_in_place_is_read_as_it_is_now(edit):
    paid = []

    @function_tool(needs_approval=True)
    def pay(cents: int) -> str:
        paid.append(cents)
        return "paid"

    model = ScriptedModel([[function_call("pay", {"cents": 1}, call_id="a"), function_call("pay", {"cents": 2},
                                                                                        call_id="b")],
                           [assistant_message("done")]])
    agent = Agent("Payer", tools=[pay], model=model)
    state = Runner.run_sync(agent, "pay").to_state()
    first, second = state.get_interruptions()
    state.approve(first)
    assert state.context_wrapper.is_tool_approved("pay", "a")  # the set beside the list is made
    approved = state.context_wrapper.approvals["pay"]["approved"]
    if edit == "remove, then append":
        approved.remove("a")
        approved.append("b")
    elif edit == "replace in place":
        approved[0] = "b"
    elif edit == "delete in place":
        del approved[0]
    else:
        state.context_wrapper.approvals["pay"]["approved"] = ["b"]
    assert state.context_wrapper.is_tool_approved("pay", "a") is None  # the approval was withdrawn
    assert state.context_wrapper.is_tool_approved("pay", "b") is (None if edit == "delete in place" else True)


def test_a_rejection_message_with_a_lone_surrogate_is_repaired_before_the_model_or_the_document_gets_it():
    @function_tool(needs_approval=True)
    def pay(cents: int) -> str:
        return "paid"

    model = ScriptedModel([[function_call("pay", {"cents": 1}, call_id="a")], [assistant_message("done")]])
    agent = Agent("Payer", tools=[pay], model=model)
    state = Runner.run_sync(agent, "pay").to_state()
    state.reject(state.get_interruptions()[0], rejection_message="denied \ud83d by policy")
    state.to_string().encode("utf-8")  # it can be written
    assert Runner.run_sync(agent, state).final_output == "done"
    assert outputs_sent(model.calls[-1]) == {"a": "denied \ufffd by policy"}
