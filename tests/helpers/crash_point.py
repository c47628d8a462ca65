"""A scripted run that kills its own process with SIGKILL at the K-th point it passes (tests/loop/test_crash.py).

    python tests/helpers/crash_point.py SPEC_JSON PLAN_JSON K EFFECTS_FILE MODE

The run's points, in the order a run passes them: every call into the session's ledger and journal (`claim_call`,
`settle_call`, `lookup_call`, `add_items`, `write_journal`), before and after; the model call's start and end; each
tool call's start and its side effect (a line appended to EFFECTS_FILE, the call's idempotency key). So the kill
lands before, during and after the model call, at each tool call's start, side effect and return (before its
output is recorded), and before and after the turn's write. K = 0 never kills.

MODE "start" runs the plan's input on the session; "continue" finishes what the session holds (`finish`),
approving every call a person is asked about (it prints "approved CALL_ID" first); "resume=PATH" approves every
interruption of the paused state saved as JSON at PATH and resumes it once; "take-over=PATH" the same, taking it
over (`take_over()`) first. With CRASH_POINT_NAMES set in the environment it prints "point N NAME" as it passes each. Prints "points N" and
"final TEXT" when it was not killed ("final halted": `halt` or `boom` stopped the run; "final already resumed
(OUTCOME)": `AlreadyResumedError`). The parent test imports this module for the same agent and `finish`.
"""
import json
import os
import signal
import sys

INPUT = "pay the bills"
PASSED = [0, 0]  # points passed, the point to die at (0: never)


def point(name):
    PASSED[0] += 1
    if os.environ.get("CRASH_POINT_NAMES"):  # the points a run passes, named, for a test to choose where to kill
        os.write(1, f"point {PASSED[0]} {name}\n".encode())
    if PASSED[0] == PASSED[1]:
        os.kill(os.getpid(), signal.SIGKILL)


def instrumented(session):
    """The session, its ledger and journal methods each passing a point before and after."""
    cls = type(session)

    class Instrumented(cls):
        pass

    for name in ("claim_call", "settle_call", "lookup_call", "add_items", "write_journal"):
        def wrapped(self, *args, _name=name, **kwargs):
            point(f"{_name}:before")
            value = getattr(super(Instrumented, self), _name)(*args, **kwargs)
            point(f"{_name}:after")
            return value
        setattr(Instrumented, name, wrapped)
    session.__class__ = Instrumented
    return session


def agent_for(plan, effects_path):
    """An agent whose model plays `plan` (turns of [tool, amount] calls, then a final message naming every
    output it saw), deciding from the history alone, so a continued run is asked what an uninterrupted one is.
    `pay` is a side effect; `ship` is declared idempotent; `refund` asks a person first; `halt`'s input guardrail stops the run (a tripwire);
    `boom` stops it too, raising once its side effect happened (`failure_error_function=None`)."""
    from miniagents import (Agent, ModelResponse, ToolContext, ToolGuardrailFunctionOutput, function_tool,
                            tool_input_guardrail)
    from miniagents.context import Usage
    from miniagents.models.interface import Model
    from miniagents.testing import assistant_message, function_call

    def effect(ctx, what):
        point(f"{ctx.tool_call_id}:start")
        with open(effects_path, "a") as f:
            f.write(ctx.idempotency_key + "\n")
        point(f"{ctx.tool_call_id}:effect")
        return what

    @function_tool
    def pay(ctx: ToolContext, amount: int) -> str:
        """Pay an amount."""
        return effect(ctx, f"paid {amount}")

    @function_tool(idempotent=True)
    def ship(ctx: ToolContext, amount: int) -> str:
        """Ship an order."""
        return effect(ctx, f"shipped {amount}")

    @function_tool(needs_approval=True)
    def refund(ctx: ToolContext, amount: int) -> str:
        """Refund an amount (a person approves it first)."""
        return effect(ctx, f"refunded {amount}")

    @function_tool(tool_input_guardrails=[tool_input_guardrail(
        lambda data: ToolGuardrailFunctionOutput.raise_exception("halted"))])
    def halt(ctx: ToolContext, amount: int) -> str:
        """Never runs: its guardrail stops the run."""
        return effect(ctx, "halted")

    @function_tool(failure_error_function=None)
    def boom(ctx: ToolContext, amount: int) -> str:
        """Does its side effect, then raises."""
        effect(ctx, "boomed")
        raise RuntimeError("boom")

    class PlanModel(Model):
        def get_response(self, instructions, input, *args, **kwargs):
            point("model:start")
            seen = {i.get("call_id") for i in input if i.get("type") == "function_call"}
            turn = next((t for t in range(len(plan)) if f"t{t}c0" not in seen), len(plan))
            if turn == len(plan):
                outputs = [str(i["output"]) for i in input if i.get("type") == "function_call_output"]
                output = [assistant_message("done: " + "; ".join(outputs))]
            else:
                output = [function_call(tool, {"amount": amount}, call_id=f"t{turn}c{n}")
                          for n, (tool, amount) in enumerate(plan[turn])]
            point("model:end")
            return ModelResponse(output=output, usage=Usage(requests=1))

        def stream_response(self, *args, **kwargs):
            raise NotImplementedError

    return Agent(name="Payer", tools=[pay, ship, refund, halt, boom], model=PlanModel())


def last_answer(items):
    for item in reversed(items):
        if item.get("type", "message") == "message" and item.get("role") == "assistant":
            return "".join(part.get("text", "") for part in item["content"])
    return None


def finish(session, agent, approved=None, say=lambda line: None):
    """What a person (or a supervisor) does after a crash: continue the session's unfinished turn (no new input);
    if the journal holds none, the run either never got its input recorded (send it again) or finished (its
    answer is in the history). Every call a person is asked about is approved. Returns the final output."""
    from miniagents import RunConfig, Runner

    config = RunConfig(max_function_tool_concurrency=1)
    if session.read_journal():
        result = Runner.run_sync(agent, [], session=session, run_config=config)
    elif not session.get_items():
        result = Runner.run_sync(agent, INPUT, session=session, run_config=config)
    else:
        return last_answer(session.get_items())
    while result.interruptions:
        state = result.to_state()
        for item in state.get_interruptions():
            say(f"approved {item.call_id}")
            if approved is not None:  # a list: a person may be asked about one call again (below)
                approved.append(item.call_id)
            state.approve(item)
        result = Runner.run_sync(agent, state, session=session, run_config=config)
    return result.final_output


def main(spec_json, plan_json, kill_at, effects_path, mode):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from session_backends import open_session
    from miniagents import RunConfig, Runner, RunState

    PASSED[1] = int(kill_at)
    session = instrumented(open_session(json.loads(spec_json), "crash"))
    agent = agent_for(json.loads(plan_json), effects_path)

    def say(line):
        os.write(1, (line + "\n").encode())

    from miniagents import AlreadyResumedError, ToolInputGuardrailTripwireTriggered

    try:
        if mode == "start":
            final = Runner.run_sync(agent, INPUT, session=session,
                                    run_config=RunConfig(max_function_tool_concurrency=1)).final_output
        elif mode.startswith(("resume=", "take-over=")):
            with open(mode.split("=", 1)[1], encoding="utf-8") as f:
                state = RunState.from_string(agent, f.read())
            for item in state.get_interruptions():
                state.approve(item)
            if mode.startswith("take-over="):
                state.take_over()
            final = Runner.run_sync(agent, state, session=session,
                                    run_config=RunConfig(max_function_tool_concurrency=1)).final_output
        else:
            final = finish(session, agent, say=say)
    except (ToolInputGuardrailTripwireTriggered, RuntimeError):
        final = "halted"
    except AlreadyResumedError as error:  # a second resume of one state, or a take-over of one that completed
        final = f"already resumed ({error.outcome})"
    say(f"points {PASSED[0]}")
    say(f"final {final}")


if __name__ == "__main__":
    main(*sys.argv[1:])
