"""A run's own plugins (`Runner.run_sync(..., plugins=[...])`): they take part in that run only, after the registered
ones, through the same seams; an agent tool's inner run has its own (`as_tool(plugins=...)`), never its caller's."""
import asyncio
import contextlib
import threading

import pytest

from miniagents import Agent, Runner, RunState, UserError, function_tool, seams
from miniagents.run import Options, start_run
from miniagents.testing import ScriptedModel, assistant_message, function_call


class Seen(seams.Plugin):
    """Records the seams it is called at: (seam, agent name, what)."""

    def __init__(self):
        self.events = []

    def agent_started(self, run, agent):
        self.events.append(("agent_started", agent.name))

    def final_output(self, run, agent, output):
        self.events.append(("final_output", agent.name, output))

    @contextlib.contextmanager
    def model_call(self, run, step):
        self.events.append(("model_call", step.agent.name))
        yield

    @contextlib.contextmanager
    def tool_call(self, run, step):
        yield
        self.events.append(("tool_call", step.tool.name, step.value))


@function_tool
def double(x: int) -> int:
    """Double a number."""
    return 2 * x


def doubling_agent(name="Main", answer="42"):
    model = ScriptedModel([[function_call("double", {"x": 21}, call_id="c1")], [assistant_message(answer)]])
    return Agent(name=name, tools=[double], model=model)


def test_a_plugin_given_to_a_run_sees_the_seams_of_that_run_only():
    seen = Seen()
    Runner.run_sync(doubling_agent("Observed"), "go", plugins=[seen])
    Runner.run_sync(doubling_agent("Other"), "go")  # a run it was not given
    assert seen.events == [("agent_started", "Observed"), ("model_call", "Observed"), ("tool_call", "double", 42),
                           ("model_call", "Observed"), ("final_output", "Observed", "42")]


def test_a_run_s_own_plugins_come_after_the_registered_ones_and_a_registered_one_takes_part_once(monkeypatch):
    registered, own = Seen(), Seen()
    monkeypatch.setattr(seams, "plugins", (registered,))
    run = start_run(doubling_agent(), "go", Options(plugins=[own, registered]))
    assert run.plugins == (registered, own)


def test_a_plugin_of_a_module_loaded_again_takes_the_place_of_its_earlier_loads_own(monkeypatch):
    """A shell imported twice (dropped from sys.modules and imported anew) registered its plugins twice: each of
    its rules ran twice in every run. Two plugins of one class, or of classes made in a function, both stay."""
    earlier, other = type("Shells", (Seen,), {})(), Seen()
    monkeypatch.setattr(seams, "plugins", (earlier, other))
    again = type("Shells", (Seen,), {})()
    seams.register(again)
    assert seams.plugins == (again, other)
    second = Seen()
    seams.register(second)
    made = [type("Made", (Seen,), {"__qualname__": "factory.<locals>.Made"})() for _ in range(2)]
    for plugin in made:
        seams.register(plugin)
    assert seams.plugins == (again, other, second, *made)


def test_a_plain_run_has_no_plugin_and_takes_no_plugin_step(monkeypatch):
    monkeypatch.setattr(seams, "plugins", ())  # no shell registered (another test may have imported one)
    plain = start_run(doubling_agent(), "go", Options())
    observed = start_run(doubling_agent(), "go", Options(plugins=[Seen()]))
    assert plain.plugins == () and len(observed.plugins) == 1
    def names(run):  # a step made for the run (the turn inside the `turn` seam) is named by its maker
        return {s.__qualname__.split(".")[0] for s in run.start + run.fresh + run.entered + run.after}

    plugin_steps = {"prepare_run", "observed_turn", "agent_started", "leave_agent"}
    assert not names(plain) & plugin_steps and names(observed) >= plugin_steps


def test_two_concurrent_runs_with_different_plugins_do_not_see_each_other():
    barrier = threading.Barrier(2, timeout=10)

    @function_tool
    def meet() -> str:
        """Wait until the other run is here too."""
        barrier.wait()  # both runs are in flight at once
        return "met"

    def agent(name):
        return Agent(name=name, tools=[meet], model=ScriptedModel([[function_call("meet", "{}", call_id="m")],
                                                                   [assistant_message(name)]]))

    first, second = Seen(), Seen()

    async def both():
        return await asyncio.gather(Runner.run(agent("First"), "go", plugins=[first]),
                                    Runner.run(agent("Second"), "go", plugins=[second]))

    results = asyncio.run(both())
    assert [r.final_output for r in results] == ["First", "Second"]
    assert first.events == [("agent_started", "First"), ("model_call", "First"), ("tool_call", "meet", "met"),
                            ("model_call", "First"), ("final_output", "First", "First")]
    assert second.events == [("agent_started", "Second"), ("model_call", "Second"), ("tool_call", "meet", "met"),
                             ("model_call", "Second"), ("final_output", "Second", "Second")]


def test_an_agent_tool_s_inner_run_has_the_plugins_its_tool_was_given_not_its_caller_s():
    outer, inner = Seen(), Seen()
    helper = Agent(name="Helper", model=ScriptedModel([[assistant_message("helped")]]))
    tool = helper.as_tool("ask_helper", "Ask the helper.", plugins=[inner])
    main = Agent(name="Main", tools=[tool], model=ScriptedModel([[function_call("ask_helper", {"input": "hi"},
                                                                                call_id="a1")],
                                                                 [assistant_message("done")]]))
    assert Runner.run_sync(main, "go", plugins=[outer]).final_output == "done"
    assert inner.events == [("agent_started", "Helper"), ("model_call", "Helper"),
                            ("final_output", "Helper", "helped")]
    assert outer.events == [("agent_started", "Main"), ("model_call", "Main"), ("tool_call", "ask_helper", "helped"),
                            ("model_call", "Main"), ("final_output", "Main", "done")]


def test_a_streamed_run_s_plugins_see_its_seams():
    seen = Seen()

    async def read():
        result = Runner.run_streamed(doubling_agent("Streamed"), "go", plugins=[seen])
        events = [event async for event in result.stream_events()]
        return events, result.final_output

    events, output = asyncio.run(read())
    assert events and output == "42"
    assert seen.events == [("agent_started", "Streamed"), ("model_call", "Streamed"), ("tool_call", "double", 42),
                           ("model_call", "Streamed"), ("final_output", "Streamed", "42")]


def test_a_resumed_run_has_the_plugins_its_resume_is_given():
    @function_tool(needs_approval=True)
    def delete(path: str) -> str:
        """Delete a file."""
        return f"deleted {path}"

    before, after = Seen(), Seen()
    agent = Agent(name="Asker", tools=[delete], model=ScriptedModel([[function_call("delete", {"path": "x"},
                                                                                    call_id="d1")],
                                                                     [assistant_message("done")]]))
    paused = Runner.run_sync(agent, "delete x", plugins=[before])
    state = RunState.from_string(agent, paused.to_state().to_string())  # plugins are never saved
    state.approve(state.get_interruptions()[0])
    assert Runner.run_sync(agent, state, plugins=[after]).final_output == "done"
    assert before.events == [("agent_started", "Asker"), ("model_call", "Asker")]
    assert after.events == [("agent_started", "Asker"), ("tool_call", "delete", "deleted x"), ("model_call", "Asker"),
                            ("final_output", "Asker", "done")]


class Broken(RuntimeError):
    pass


def test_a_plugin_that_raises_makes_the_step_fail_as_the_step_would():
    class BreaksModelCalls(seams.Plugin):
        def model_call(self, run, step):
            raise Broken("the plugin broke")

    class BreaksTools(seams.Plugin):
        def tool_call(self, run, step):
            raise Broken("the plugin broke")

    class BreaksOnStart(seams.Plugin):
        def agent_started(self, run, agent):
            raise Broken("the plugin broke")

    def failing_model():
        return ScriptedModel([Broken("the plugin broke")])

    # a model call: the run raises what the plugin raised, as it raises what a model raises
    with pytest.raises(Broken, match="the plugin broke"):
        Runner.run_sync(Agent(name="A", model=failing_model()), "go")
    with pytest.raises(Broken, match="the plugin broke"):
        Runner.run_sync(doubling_agent(), "go", plugins=[BreaksModelCalls()])

    # around a tool call: the call's step fails (the tool never runs), and the run with it
    ran = []

    @function_tool(name_override="double")
    def counted_double(x: int) -> int:
        """Double a number."""
        ran.append(x)
        return 2 * x

    agent = Agent(name="A", tools=[counted_double], model=doubling_agent().model)
    with pytest.raises(Broken, match="the plugin broke"):
        Runner.run_sync(agent, "go", plugins=[BreaksTools()])
    assert ran == [] and len(agent.model.calls) == 1
    # an event: the run fails where the event happens, before the model is called
    with pytest.raises(Broken, match="the plugin broke"):
        Runner.run_sync(agent, "go", plugins=[BreaksOnStart()])
    assert len(agent.model.calls) == 1


@pytest.mark.parametrize("seam", ["model_call", "tool_call"])
def test_the_plugins_entered_before_one_that_raises_are_left_with_its_error(seam):
    """Around a step, a plugin raising as it is entered fails the step: the plugins entered before it are left with
    that error, as when the step itself fails, and never read the step as if it had succeeded."""
    left = []

    class Watches(seams.Plugin):
        @contextlib.contextmanager
        def watch(self, run, step):
            try:
                yield
            except Broken as error:
                left.append(str(error))
                raise
            left.append("succeeded")

        model_call = tool_call = watch

    def breaks(self, run, step):
        raise Broken("the plugin broke")

    breaking = type("Breaks", (seams.Plugin,), {seam: breaks})()
    with pytest.raises(Broken, match="the plugin broke"):
        Runner.run_sync(doubling_agent(), "go", plugins=[Watches(), breaking])
    assert left == ["succeeded"] * (seam == "tool_call") + ["the plugin broke"]


@pytest.mark.parametrize("seam", ["model_call", "tool_call", "turn"])
def test_a_plugin_observes_a_steps_error_but_cannot_suppress_it(seam):
    """A plugin whose context manager suppresses a step's error (its `__exit__` returns True): the run still fails
    with that error, and a plugin entered before it sees the error too. A suppressed error left no result: a run
    'completed' with no output, or failed later with a bare UnboundLocalError or KeyError."""
    seen = []

    @contextlib.contextmanager
    def swallow(self, run, step):
        try:
            yield
        except Broken as error:
            seen.append(str(error))

    class BrokenModel(ScriptedModel):
        def get_response(self, *args, **kwargs):
            raise Broken("the model broke")

    @function_tool(failure_error_function=None)
    def fails() -> str:
        """Fails."""
        raise Broken("the tool broke")

    swallows = type("Swallows", (seams.Plugin,), {seam: swallow})
    model = ScriptedModel([[function_call("fails", {}, call_id="c")], [assistant_message("x")]]) \
        if seam == "tool_call" else BrokenModel([])
    with pytest.raises(Broken, match="broke"):
        Runner.run_sync(Agent(name="A", model=model, tools=[fails]), "go", plugins=[swallows(), swallows()])
    assert len(seen) == 2 and len(set(seen)) == 1


@pytest.mark.parametrize("plugins", [object(), [object()], Seen(), "tracing"])
def test_plugins_that_are_not_a_list_of_plugins_are_refused_before_anything_runs(plugins):
    agent = doubling_agent()
    with pytest.raises(UserError, match="plugins must be a list of seams.Plugin objects"):
        Runner.run_sync(agent, "go", plugins=plugins)
    with pytest.raises(UserError, match="plugins must be a list of seams.Plugin objects"):
        agent.as_tool("t", "a tool", plugins=plugins)  # refused where the tool is made
    assert agent.model.calls == ()


def test_the_kernel_has_no_hooks_its_plugins_observe_a_run():
    with pytest.raises(TypeError, match="hooks"):
        Agent(name="A", hooks=object())
    with pytest.raises(TypeError, match="hooks"):
        Runner.run_sync(doubling_agent(), "go", hooks=object())


class Turns(seams.Plugin):
    """Records each turn the `turn` seam surrounds (number, resumed) and the model calls made inside it."""

    def __init__(self):
        self.events, self.inside = [], None

    @contextlib.contextmanager
    def turn(self, run, step):
        self.inside = (step.agent.name, step.number, step.resumed)
        self.events.append(("turn", *self.inside))
        yield
        self.events.append(("turn ended", *self.inside))
        self.inside = None

    @contextlib.contextmanager
    def model_call(self, run, step):
        self.events.append(("model_call inside", self.inside))
        yield


def test_the_turn_seam_surrounds_each_turn_fresh_and_resumed_with_its_number():
    @function_tool(needs_approval=True)
    def pay(amount: int) -> str:
        return f"paid {amount}"

    model = ScriptedModel([[function_call("pay", {"amount": 5}, call_id="c1")], [assistant_message("done")]])
    agent, turns = Agent(name="Payer", tools=[pay], model=model), Turns()
    paused = Runner.run_sync(agent, "go", plugins=[turns])
    state = RunState.from_json(agent, paused.to_state().to_json())
    state.approve(state.get_interruptions()[0])
    result = Runner.run_sync(agent, state, plugins=[turns])
    assert result.final_output == "done"
    assert turns.events == [
        ("turn", "Payer", 1, False), ("model_call inside", ("Payer", 1, False)), ("turn ended", "Payer", 1, False),
        ("turn", "Payer", 1, True), ("turn ended", "Payer", 1, True),  # the paused turn again: its response kept
        ("turn", "Payer", 2, False), ("model_call inside", ("Payer", 2, False)), ("turn ended", "Payer", 2, False)]


def test_a_streamed_turn_is_inside_the_turn_seam_too():
    turns = Turns()
    result = Runner.run_streamed(doubling_agent("Streamer"), "go", plugins=[turns])

    async def drain():
        return [event async for event in result.stream_events()]

    asyncio.run(drain())
    assert result.final_output == "42"
    assert [e for e in turns.events if e[0] == "model_call inside"] == [
        ("model_call inside", ("Streamer", 1, False)), ("model_call inside", ("Streamer", 2, False))]


BAD_RETURNS = [("session_input", None), ("session_input", ["not an item"]), ("offer", None), ("offer", {}),
               ("model_input", 5), ("model_input", ("too short",)), ("model_input", (None, [1])),
               ("model_input", ("instructions", "not a list")), ("model_input", (5, [])), ("model", None),
               ("model", object()), ("error_text", None), ("error_text", 5), ("blocked_output", None),
               ("answer_error", None), ("answer_error", "stop"), ("invoke", None), ("invoke", 5)]


@pytest.mark.parametrize("seam, value", BAD_RETURNS)
def test_a_change_a_seam_cannot_take_is_a_user_error_naming_the_plugin_and_the_seam(seam, value):
    """Each change seam's return is checked where it comes back, not left to fail deep in the turn as a bare
    TypeError or AttributeError; the message never shows the value (it may hold the run's data)."""
    from miniagents import OutputGuardrailTripwireTriggered, SQLiteSession, output_guardrail
    from miniagents.guardrails import GuardrailFunctionOutput

    @output_guardrail
    def block_everything(ctx, agent, output):
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered=True)

    class Careless(seams.Plugin):
        pass

    setattr(Careless, seam, lambda self, run, *args: value)
    steps = [[function_call("missing_tool", {}, call_id="c0")], [function_call("double", {"x": 2}, call_id="c1")],
             [assistant_message("done")]]
    options = dict(tool_use_behavior="stop_on_first_tool", output_guardrails=[block_everything]) \
        if seam == "blocked_output" else {}
    agent = Agent(name="A", tools=[double], model=ScriptedModel(steps), **options)
    with SQLiteSession("s") as session, pytest.raises(UserError) as info:
        Runner.run_sync(agent, "go", plugins=[Careless()], session=session, max_turns=1 if seam == "answer_error" else 9)
    assert f"Careless's {seam} returned {type(value).__name__}: it must return" in str(info.value)
    assert repr(value) not in str(info.value) or value is None
    assert not isinstance(info.value, OutputGuardrailTripwireTriggered)


def test_a_change_that_keeps_or_rightly_replaces_the_value_passes():
    """The check refuses only what a seam cannot take: an answer that ends the run, a changed setup, input items
    with new instructions all go through."""
    import dataclasses

    from miniagents.turn import NextStepFinalOutput

    class Helpful(seams.Plugin):
        def offer(self, run, setup):
            return dataclasses.replace(setup, instructions="Be brief.")

        def model_input(self, run, setup, items):
            return setup.instructions + " Really.", [*items, {"role": "user", "content": "more"}]

        def answer_error(self, run, turn, error):
            return NextStepFinalOutput("stopped at the limit")

    model = ScriptedModel([[function_call("double", {"x": 2}, call_id="c1")]])
    result = Runner.run_sync(Agent(name="A", tools=[double], model=model), "go", plugins=[Helpful()], max_turns=1)
    assert result.final_output == "stopped at the limit"
    assert model.calls[0].system_instructions == "Be brief. Really."
    assert model.calls[0].input[-1] == {"role": "user", "content": "more"}


# --- What an attack found: a plugin that raises as the run ends kept the session's journal open -----------------


def test_a_plugin_raising_as_the_agent_leaves_cannot_keep_the_sessions_turn_unfinished(tmp_path):
    from miniagents import SQLiteSession

    class Boom(seams.Plugin):
        def agent_ended(self, run, agent, error):
            raise RuntimeError("plugin failed")

    agent = Agent(name="A", model=ScriptedModel([[assistant_message("one")], [assistant_message("two")]]))
    with pytest.raises(RuntimeError, match="plugin failed"):
        Runner.run_sync(agent, "first", session=SQLiteSession("s", tmp_path / "chat.db"), plugins=[Boom()])
    session = SQLiteSession("s", tmp_path / "chat.db")
    assert len(session.get_items()) == 2 and not session.read_journal()
    assert Runner.run_sync(agent, "second", session=session).final_output == "two"
