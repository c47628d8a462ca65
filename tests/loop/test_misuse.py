"""Mistakes of the programmer fail where they are made, with a message that says what to do."""
import functools

import pytest

from miniagents import Agent, InputGuardrail, OutputGuardrail, Runner, UserError
from miniagents.testing import ScriptedModel, assistant_message
from support import outputs_sent


@pytest.mark.parametrize("bad", [42, None, {"role": "user", "content": "hi"}, [42], ("hi",)])
def test_an_input_that_is_not_text_items_or_a_state_is_a_user_error_before_any_model_call(bad):
    model = ScriptedModel([[assistant_message("never")]])
    with pytest.raises(UserError, match="input must be a string, a list of input items"):
        Runner.run_sync(Agent(name="A", model=model), bad)
    assert model.calls == ()


def test_a_starting_agent_that_is_not_an_agent_is_a_type_error():
    with pytest.raises(TypeError, match="starting_agent must be an Agent, got str"):
        Runner.run_sync("Assistant", "hi")


def test_a_plain_function_in_tools_is_a_type_error_that_names_the_decorator():
    with pytest.raises(TypeError, match="@function_tool"):
        Agent(name="A", tools=[lambda city: city])



@pytest.mark.parametrize("when", ["before the run", "during the run"])
def test_a_plain_function_added_to_an_agents_tools_later_is_a_user_error_naming_the_decorator(when):
    """The agent's own check ran when it was made; a function put in its list afterwards (before the run, or by a
    tool during it) is refused when the agent would offer it, not an AttributeError from inside the turn."""
    from miniagents import function_tool
    from miniagents.testing import function_call

    def plain(city: str) -> str:
        return city

    @function_tool
    def add_plain() -> str:
        """Add a tool."""
        agent.tools.append(plain)
        return "added"

    model = ScriptedModel([[function_call("add_plain", {}, call_id="c1")], [assistant_message("never")]])
    agent = Agent(name="A", tools=[add_plain], model=model)
    if when == "before the run":
        agent.tools.append(plain)
    with pytest.raises(UserError, match="Agent 'A' offers an object of type function, which is not a tool: "
                                        "decorate a function with @function_tool"):
        Runner.run_sync(agent, "go")
    assert len(model.calls) == (0 if when == "before the run" else 1)

@pytest.mark.parametrize("options", [{"mcp_servers": [object()]}, {"mcp_config": ["x"]}])
def test_mcp_fields_that_hold_no_mcp_server_are_refused(options):
    with pytest.raises(TypeError, match="mcp_"):
        Agent(name="A", **options)


def test_nest_handoff_history_is_refused_not_ignored():
    from miniagents import handoff

    with pytest.raises(UserError, match="nest_handoff_history"):
        handoff(Agent(name="B"), nest_handoff_history=True)



@pytest.mark.parametrize("bad", ["Triage", 5, None])
def test_something_else_added_to_an_agents_handoffs_later_is_a_user_error_naming_it(bad):
    """Upstream's programs append to `handoffs` after making agents (a cycle of agents): an entry that is neither an
    Agent nor a Handoff is refused when the run walks its agents, before any model call."""
    model = ScriptedModel([[assistant_message("never")]])
    agent = Agent(name="A", model=model)
    agent.handoffs.append(bad)
    with pytest.raises(UserError, match=f"Agent 'A' has an object of type {type(bad).__name__} among its handoffs, "
                                        "which is neither an Agent nor a Handoff"):
        Runner.run_sync(agent, "go")
    assert model.calls == ()


def forgot_the_decorator(*args):
    return None


@pytest.mark.parametrize("make, message", [
    (lambda: Agent(name="A", input_guardrails=[forgot_the_decorator]),
     "Agent input_guardrails must be InputGuardrail objects (decorate functions with @input_guardrail), got function"),
    (lambda: Agent(name="A", output_guardrails=["strict"]),
     "Agent output_guardrails must be OutputGuardrail objects (decorate functions with @output_guardrail), got str"),
    (lambda: __import__("miniagents").RunConfig(output_guardrails=[forgot_the_decorator]),
     "RunConfig output_guardrails must be OutputGuardrail objects"),
])
def test_a_guardrail_list_holding_no_guardrail_is_refused_where_it_is_made(make, message):
    """A plain function in a guardrail list (its decorator forgotten) failed only when a run reached it, as an
    AttributeError: now it is a TypeError naming the decorator, as for a plain function among an agent's tools."""
    with pytest.raises(TypeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make()


@pytest.mark.parametrize("field", ["tool_input_guardrails", "tool_output_guardrails"])
def test_a_tools_guardrail_list_holding_no_guardrail_is_refused_where_the_tool_is_made(field):
    from miniagents import function_tool

    with pytest.raises(TypeError, match=f"tool 'act' {field} must be Tool"):
        @function_tool(**{field: [forgot_the_decorator]})
        def act() -> str:
            """Act."""
            return "done"


@pytest.mark.parametrize("options, message", [
    ({"failure_error_function": 5}, "failure_error_function must be a callable or None, got int"),
    ({"timeout_error_function": "text"}, "timeout_error_function must be a callable or None, got str"),
    ({"is_enabled": 5}, "is_enabled must be a callable or a bool, got int"),
])
def test_a_tools_callbacks_that_cannot_be_called_are_refused_where_the_tool_is_made(options, message):
    """They were taken, and failed (or were read as true) only when a call needed them."""
    from miniagents import function_tool

    def act() -> str:
        """Act."""
        return "done"

    with pytest.raises(UserError, match=f"tool 'act': {message}"):
        function_tool(act, **options)


@pytest.mark.parametrize("options, message", [
    ({"idempotent": "yes"}, "idempotent must be a bool, got str"),
    ({"idempotent": 1}, "idempotent must be a bool, got int"),
    ({"timeout_behavior": "raise"}, "timeout_behavior must be 'error_as_result' or 'raise_exception', got 'raise'"),
])
def test_a_tools_idempotent_or_timeout_behavior_of_the_wrong_kind_is_refused_where_the_tool_is_made(options, message):
    from miniagents import function_tool

    def act() -> str:
        """Act."""
        return "done"

    with pytest.raises(UserError, match=f"^tool 'act': {message}$"):
        function_tool(act, **options)


@pytest.mark.parametrize("options, message", [
    ({"handoff_input_filter": 5}, "RunConfig.handoff_input_filter must be a callable or None, got int"),
    ({"model": 5}, "RunConfig.model must be a model name, a Model or None, got int"),
    # an attack found these failing deep in the run, as a bare AttributeError or TypeError (inside an agent tool, as
    # a redacted tool failure the model was told)
    ({"usage_limits": 5}, r"RunConfig.usage_limits must be UsageLimits, a dict of its fields or None, got int"),
    ({"usage_limits": True}, r"RunConfig.usage_limits must be UsageLimits, a dict of its fields or None, got bool"),
    ({"model_settings": 5}, r"RunConfig.model_settings must be ModelSettings, a dict of its fields or None, got int"),
    # a dict with a key its class lacks (pydantic-ai's requests_limit), or no string, was a bare TypeError
    ({"usage_limits": {"requests_limit": 3}}, r"^RunConfig.usage_limits has no field 'requests_limit' \(the fields of "
                                               r"UsageLimits: request_limit, input_tokens_limit, "),
    ({"usage_limits": {1: 3}}, r"^RunConfig.usage_limits has no field 1 \(the fields of UsageLimits: "),
    ({"model_settings": {1: 2, "a": 3}}, r"^RunConfig.model_settings has no field 'a', 1 \(the fields of "
                                         r"ModelSettings: temperature, top_p, "),
    ({"input_guardrails": InputGuardrail(lambda ctx, agent, given: None)},  # one, not a list of one
     "RunConfig.input_guardrails must be a list or None, got InputGuardrail"),
    ({"output_guardrails": OutputGuardrail(lambda ctx, agent, output: None)},
     "RunConfig.output_guardrails must be a list or None, got OutputGuardrail"),
])
def test_a_run_config_part_that_cannot_work_is_refused_where_it_is_made(options, message):
    from miniagents import RunConfig

    with pytest.raises(UserError, match=message):
        RunConfig(**options)


@pytest.mark.parametrize("options, message", [
    ({"is_enabled": 5}, "is_enabled must be a callable or a bool, got int"),
    ({"input_filter": "all"}, "input_filter must be a callable or None, got str"),
    ({"on_invoke_handoff": None}, "on_invoke_handoff must be a callable, got NoneType"),
])
def test_a_handoff_built_by_hand_is_checked_where_it_is_made(options, message):
    """As `handoff()`'s arguments are: a Handoff built by hand with `is_enabled=5` was read as true."""
    from miniagents import Handoff

    fields = {"tool_name": "to_b", "tool_description": "Go to B.", "input_json_schema": {},
              "on_invoke_handoff": lambda ctx, args: None, "agent_name": "B", **options}
    with pytest.raises(UserError, match=f"Handoff 'to_b': {message}"):
        Handoff(**fields)


# --- What an attack found: run options and dynamic instructions taken as they came --------------------------------


@pytest.mark.parametrize("options, message", [
    ({"max_turns": float("nan")}, "max_turns must be a whole number >= 0 or None, got nan"),  # it was no limit at all
    ({"max_turns": "5"}, "max_turns must be a whole number >= 0 or None, got '5'"),
    ({"max_turns": True}, "max_turns must be a whole number >= 0 or None, got True"),
    ({"max_turns": -3}, "max_turns must be a whole number >= 0 or None, got -3"),  # it was MaxTurnsExceeded
    ({"run_config": {"usage_limits": None}}, "run_config must be a RunConfig, got dict"),
])
@pytest.mark.parametrize("given", ["text", "a RunState"])
def test_a_run_option_of_the_wrong_kind_is_a_user_error_before_the_model_is_asked(options, message, given):
    """Given a state, the run takes its max_turns from the state; an option of the wrong kind is still a mistake."""
    from miniagents import RunState

    model = ScriptedModel([[assistant_message("never")]])
    agent = Agent(name="a", model=model)
    with pytest.raises(UserError, match=message):
        Runner.run_sync(agent, "hi" if given == "text" else RunState(None, "hi", agent), **options)
    assert model.calls == ()


def test_max_turns_zero_allows_no_model_call_as_upstreams_does():
    from miniagents import MaxTurnsExceeded

    model = ScriptedModel([[assistant_message("never")]])
    with pytest.raises(MaxTurnsExceeded, match=r"Max turns \(0\) exceeded"):
        Runner.run_sync(Agent(name="a", model=model), "hi", max_turns=0)
    assert model.calls == ()


@pytest.mark.parametrize("limit", [-1, 0, "2", 1.5, True])
def test_a_tool_concurrency_that_cannot_be_kept_is_refused_where_the_config_is_made(limit):
    from miniagents import RunConfig

    with pytest.raises(UserError, match="max_function_tool_concurrency must be a whole number >= 1 or None"):
        RunConfig(max_function_tool_concurrency=limit)


@pytest.mark.parametrize("returned", [{"role": "system"}, 42, ["a", "b"], b"bytes"])
def test_instructions_a_function_returns_must_be_text_or_none(returned):
    model = ScriptedModel([[assistant_message("never")]])
    agent = Agent(name="helper", model=model, instructions=lambda ctx, agent: returned)
    with pytest.raises(UserError, match=f"instructions function of agent 'helper' must return a string or None, "
                                        f"got {type(returned).__name__}"):
        Runner.run_sync(agent, "hi")
    assert model.calls == ()


def test_instructions_a_function_returns_as_text_or_none_are_sent():
    for returned in ("Be brief.", None):
        model = ScriptedModel([[assistant_message("ok")]])
        Runner.run_sync(Agent(name="a", model=model, instructions=lambda ctx, agent: returned), "hi")
        assert model.calls[0].system_instructions == returned


def test_a_session_that_is_no_session_is_a_user_error_before_the_model_is_asked():
    model = ScriptedModel([[assistant_message("never")]])
    for session in (5, "chat.db", object()):
        with pytest.raises(UserError, match="session must be a session .* got"):
            Runner.run_sync(Agent(name="a", model=model), "hi", session=session)
    assert model.calls == ()


class Returns:
    """A session of the program's own whose get_items returns `value` (or what `value()` returns)."""

    def __init__(self, value):
        self.value, self.added = value, []

    def get_items(self, limit=None):
        return self.value() if callable(self.value) else self.value

    def add_items(self, items):
        self.added += items


@pytest.mark.parametrize("returned, said", [
    (None, "returned NoneType, not a list of items"), (5, "returned int, not a list of items"),
    ("hi", "returned str, not a list of items"), ({"role": "user", "content": "hi"}, "returned dict, not a list"),
    ([1, 2], "returned a list holding int, not only items"),
    ([{"role": "user", "content": "hi"}, None], "returned a list holding NoneType"),
    (["hi"], "returned a list holding str, not only items"),
    (lambda: (item for item in [{"role": "user", "content": "hi"}]), "returned generator, not a list of items"),
])
def test_a_sessions_get_items_that_returns_no_list_of_items_is_a_user_error_before_the_model_is_asked(returned,
                                                                                                       said):
    """Its history was a bare TypeError or AttributeError from deep in the loop (or a dict's keys, taken as none)."""
    model, session = ScriptedModel([[assistant_message("never")]]), Returns(returned)
    with pytest.raises(UserError, match=f"^The session's get_items {said}"):
        Runner.run_sync(Agent(name="a", model=model), "hi", session=session)
    assert model.calls == () and session.added == []


def test_a_sessions_get_items_may_return_a_tuple_of_items():
    model = ScriptedModel([[assistant_message("ok")]])
    Runner.run_sync(Agent(name="a", model=model), "hi", session=Returns(({"role": "user", "content": "before"},)))
    assert [item["content"] for item in model.calls[0].input] == ["before", "hi"]


class Provides:
    def __init__(self, model):
        self.model = model

    def get_model(self, name):
        return self.model


@pytest.mark.parametrize("returned", [None, "gpt-4o", 5, object()])
def test_a_model_provider_that_returns_no_model_is_a_user_error_naming_what_it_returned(returned):
    """It was a bare AttributeError ('NoneType' object has no attribute 'get_response') from the turn."""
    from miniagents import RunConfig

    with pytest.raises(UserError, match=f"^The model provider's get_model\\('m'\\) returned "
                                        f"{type(returned).__name__}, not a Model"):
        Runner.run_sync(Agent(name="a", model="m"), "hi", run_config=RunConfig(model_provider=Provides(returned)))


@pytest.mark.parametrize("decide", ["approve", "reject"])
def test_approving_or_rejecting_something_that_is_no_interruption_is_a_user_error(decide):
    from miniagents import function_tool
    from miniagents.testing import function_call

    @function_tool(needs_approval=True)
    def rm(path: str) -> str:
        return path

    state = Runner.run_sync(Agent(name="a", model=ScriptedModel([[function_call("rm", {"path": "a"}, call_id="c1")]]),
                                  tools=[rm]), "go").to_state()
    for wrong in ("c1", None, {"name": "rm", "call_id": "c1"}):
        with pytest.raises(UserError, match="take an interruption of the run"):
            getattr(state, decide)(wrong)
    assert state.context_wrapper.approvals == {}


SENT = []  # what a tool's body did: a generator's never runs


class Mailer:
    def send(self, to: str) -> str:
        SENT.append(to)
        yield f"sent to {to}"

    def __call__(self, to: str) -> str:
        SENT.append(to)
        yield f"sent to {to}"


class AsyncMailer:
    async def __call__(self, to: str) -> str:
        SENT.append(to)
        yield f"sent to {to}"


def send_emails(to: str, subject: str = "") -> str:
    SENT.append(to)
    yield f"sent to {to}"


async def send_emails_async(to: str) -> str:
    SENT.append(to)
    yield f"sent to {to}"


def logged(fn):
    """An ordinary decorator: the generator function behind it is not one to `inspect`."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


def collected(fn):
    """A decorator that consumes the generator: its tool returns the values."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return list(fn(*args, **kwargs))
    return wrapper


def run_send(tool):
    """One call of `tool` named 'send' with to='ann', then an answer; the model's second request, if made."""
    from miniagents.testing import function_call

    model = ScriptedModel([[function_call("send", {"to": "ann"}, call_id="c1")], [assistant_message("done")]])
    Runner.run_sync(Agent(name="A", model=model, tools=[tool]), "go")
    return model.calls[1]


@pytest.mark.parametrize("make, kind", [
    (lambda: send_emails, "generator"), (lambda: send_emails_async, "async_generator"),
    (lambda: Mailer().send, "generator"), (Mailer, "generator"), (AsyncMailer, "async_generator"),
    (lambda: functools.partial(send_emails, subject="hi"), "generator"), (lambda: logged(send_emails), "generator"),
    (lambda: logged(send_emails_async), "async_generator")],
    ids=["generator", "async generator", "method", "callable object", "async callable object", "partial", "decorated",
         "decorated async"])
@pytest.mark.parametrize("timeout", [None, 5])
def test_a_tool_that_returns_a_generator_is_a_user_error_and_the_model_is_told_nothing(make, kind, timeout):
    """A call made the generator and never ran its body: the model was told `<generator object ...>` and the history
    said the call ran, though nothing happened. The value is what is checked: a generator function behind a
    decorator (functools.wraps) is no generator function to `inspect`, and was accepted."""
    from miniagents import function_tool

    SENT.clear()
    with pytest.raises(UserError, match=rf"^tool 'send' returned a {kind} it never ran: a generator function only "
                                        r"makes a generator when called \(return the values, a list\), and a coroutine "
                                        r"runs only once awaited \(await it in the tool\)$"):
        run_send(function_tool(make(), name_override="send", timeout=timeout))
    assert SENT == []


def test_an_async_tool_that_returns_a_coroutine_it_never_awaited_is_a_user_error():
    """`return pay()` for `return await pay()`: the model was told `<coroutine object ...>`, and nothing was paid."""
    from miniagents import function_tool

    async def pay():
        SENT.append("paid")
        return "paid"

    @function_tool
    async def send(to: str) -> str:
        """Send."""
        return pay()

    SENT.clear()
    with pytest.raises(UserError, match=r"^tool 'send' returned a coroutine it never ran: .*\(await it in the tool\)$"):
        run_send(send)
    assert SENT == []


@pytest.mark.parametrize("kind", ["Task", "Future"])
def test_an_async_tool_that_returns_a_task_or_future_it_never_awaited_is_a_user_error(kind):
    """`return asyncio.ensure_future(pay())` for `return await pay()`: the tool's event loop ends as it returns,
    cancelling the task, and the model was told `<Task cancelled ...>` (or `<Future pending>`) as its output."""
    import asyncio

    from miniagents import function_tool

    async def pay():
        await asyncio.Event().wait()  # never set: the tool's event loop ends first
        SENT.append("paid")

    @function_tool
    async def send(to: str) -> str:
        """Send."""
        if kind == "Task":
            return asyncio.ensure_future(pay())
        return asyncio.get_running_loop().create_future()

    SENT.clear()
    with pytest.raises(UserError, match=rf"^tool 'send' returned a {kind}[^ ]* it never awaited: .*\(await it in "
                                        r"the tool\)$"):
        run_send(send)
    assert SENT == []


def test_a_tool_that_returns_a_sessions_items_gives_the_model_those_items():
    """A session's `get_items()` is a list that can also be awaited: a tool's value, not an awaitable left over."""
    from miniagents import SQLiteSession, function_tool

    session = SQLiteSession("s")
    session.add_items([{"role": "user", "content": "hi"}])

    @function_tool
    async def send(to: str) -> list:
        """Send."""
        return session.get_items()

    assert outputs_sent(run_send(send)) == {"c1": '[{"role": "user", "content": "hi"}]'}


def test_a_generator_a_decorator_consumes_and_a_types_coroutine_are_tools():
    """What the function gives when called decides, not what it is: a decorator may turn a generator function into
    one that returns the values, and a `@types.coroutine` generator is awaited as a coroutine is (it was refused
    where the tool was made)."""
    import types

    from miniagents import function_tool

    @types.coroutine
    def triple(to: str):
        yield  # suspends once, as asyncio.sleep(0) does
        return to * 3

    SENT.clear()
    assert outputs_sent(run_send(function_tool(collected(send_emails), name_override="send"))) == {
        "c1": '["sent to ann"]'}
    assert SENT == ["ann"]
    assert outputs_sent(run_send(function_tool(triple, name_override="send"))) == {"c1": "annannann"}


def test_a_callable_object_or_method_that_returns_its_result_is_a_tool():
    from miniagents import function_tool

    class Greeter:
        def __call__(self, name: str) -> str:
            return f"hi {name}"

        async def greet(self, name: str) -> str:
            return f"hello {name}"

    assert function_tool(Greeter(), name_override="greet").on_invoke_tool(None, '{"name": "ann"}') == "hi ann"
    assert function_tool(Greeter().greet).name == "greet"


def nested_past_pythons_reach() -> list:
    value: list = []
    for _ in range(20_000):
        value = [value]
    return value


def unprintable_values() -> list:
    """A list nested deeper than repr recurses, and one holding an int of more digits than str() writes (3.11+)."""
    return [nested_past_pythons_reach(), [10**5000]]


def wrong_value_sites() -> list:
    """Where a value of the wrong kind is refused with a message quoting it (each was a bare RecursionError, or
    ValueError for the int, from building that message)."""
    from miniagents import RunConfig, SQLiteSession, UsageLimits, function_tool, handoff
    from miniagents.retry import ModelRetrySettings

    def tool(x: int) -> int:
        return x

    agent = Agent(name="b")
    return [
        ("max_turns", lambda v: Runner.run_sync(Agent(name="a"), "hi", max_turns=v)),
        ("tool_use_behavior", lambda v: Agent(name="a", tool_use_behavior=v)),
        ("output_type", lambda v: Agent(name="a", output_type=v)),
        ("as_tool max_turns", lambda v: agent.as_tool("t", "d", max_turns=v)),
        ("as_tool plugins", lambda v: agent.as_tool("t", "d", plugins=v)),
        ("tool name", lambda v: agent.as_tool(v, "d")),
        ("name_override", lambda v: function_tool(tool, name_override=v)),
        ("docstring_style", lambda v: function_tool(tool, docstring_style=v)),
        ("tool timeout", lambda v: function_tool(tool, timeout=v)),
        ("timeout_behavior", lambda v: function_tool(tool, timeout=1, timeout_behavior=v)),
        ("input_filter", lambda v: handoff(agent, input_filter=v)),
        ("UsageLimits", lambda v: UsageLimits(request_limit=v)),
        ("RunConfig.tracing", lambda v: RunConfig(tracing=v)),
        ("RunConfig.max_function_tool_concurrency", lambda v: RunConfig(max_function_tool_concurrency=v)),
        ("ModelRetrySettings", lambda v: ModelRetrySettings(max_retries=v)),
        ("table name", lambda v: SQLiteSession("s", sessions_table=v)),
    ]


@pytest.mark.parametrize("site", range(len(wrong_value_sites())))
@pytest.mark.parametrize("kind", ["nested", "long int"])
def test_a_wrong_value_python_cannot_print_is_refused_with_its_kind_named(site, kind):
    where, make = wrong_value_sites()[site]
    value = unprintable_values()[kind == "long int"]
    with pytest.raises((UserError, TypeError)) as refused:
        make(value)
    assert not isinstance(refused.value, RecursionError) and len(str(refused.value)) < 600, where
