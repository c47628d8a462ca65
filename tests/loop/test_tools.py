"""Specification of function tools in a run (miniagents/tool.py, turn.py): schemas sent, arguments,
results, failures, timeouts, unknown tools and concurrency. Issue 2, behaviours 3-8.
"""
from __future__ import annotations

import asyncio
import copy
import json
import threading
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, TypedDict

from hypothesis import given, strategies as st
import pytest

from miniagents import (Agent, ModelBehaviorError, RunConfig, RunContextWrapper, Runner, RunState, ToolContext,
                        ToolError, ToolTimeoutError, UserError, function_tool)
from miniagents.errors import AlreadyResumedError, MissingFeatureError, SessionStoreError, UnfinishedTurnError
from miniagents.testing import ScriptedModel, assistant_message, function_call
from support import REDACTED, make_agent, outputs_sent

def output_order(call):
    return [i["call_id"] for i in call.input if i.get("type") == "function_call_output"]


def run_one_call(tool, arguments, *, call_id="c1", run_config=None, **agent_kw):
    """One response calling `tool`, then a plain answer; returns (result, the text the model got back)."""
    name = tool.name if hasattr(tool, "name") else tool
    tools = [tool] if hasattr(tool, "name") else []
    agent, model = make_agent([[function_call(name, arguments, call_id=call_id)], [assistant_message("done")]],
                              tools=tools, **agent_kw)
    result = Runner.run_sync(agent, "go", run_config=run_config)
    assert len(model.calls) == 2
    return result, outputs_sent(model.calls[1])[call_id]


# --- Behaviour 3: the schema the model is sent ------------------------------------------------


@dataclass
class Address:
    city: str
    zip_code: str


def test_the_model_is_sent_a_strict_schema_built_from_the_signature_and_docstring():
    @function_tool
    def ship(item: str, quantity: int, address: Address, express: bool = False) -> str:
        """Ship an item to an address.

        Args:
            item: The item's SKU.
            quantity: How many to ship.
            address: Where to ship it.
            express: Use express delivery.
        """
        return "shipped"

    agent, model = make_agent([[assistant_message("ok")]], tools=[ship])
    Runner.run_sync(agent, "hi")
    (spec,) = model.calls[0].tools
    assert spec["name"] == "ship"
    assert spec["description"] == "Ship an item to an address."  # the Args section is not in it
    assert spec["strict"] is True
    params = spec["parameters"]
    assert params["type"] == "object"
    assert params["additionalProperties"] is False
    assert sorted(params["required"]) == ["address", "express", "item", "quantity"]
    assert params["properties"]["item"]["description"] == "The item's SKU."
    assert params["properties"]["quantity"]["type"] == "integer"
    assert params["properties"]["express"]["default"] is False

    def objects(node):
        if isinstance(node, dict):
            if node.get("type") == "object":
                yield node
            for v in node.values():
                yield from objects(v)
        elif isinstance(node, list):
            for v in node:
                yield from objects(v)

    for obj in objects(params):
        assert obj["additionalProperties"] is False
        assert sorted(obj["required"]) == sorted(obj["properties"])


@pytest.mark.parametrize("who", ["tool", "tool input guardrail"])
def test_a_tool_or_its_guardrail_editing_the_tool_call_it_is_shown_never_rewrites_the_history(tmp_path, who):
    """`ToolContext.tool_call` was the response's own item: editing it (a tool, a tool guardrail) rewrote the call
    the session kept and the next request sent (another name and arguments, a call id its output no longer
    answered: an unpaired history the server refuses)."""
    from miniagents import SQLiteSession, ToolGuardrailFunctionOutput, tool_input_guardrail

    def meddle(ctx):
        ctx.tool_call.update(call_id="other", name="evil", arguments='{"amount": 999}')

    @tool_input_guardrail
    def meddling_guardrail(data):
        meddle(data.context)
        return ToolGuardrailFunctionOutput.allow()

    @function_tool(tool_input_guardrails=[meddling_guardrail] if who != "tool" else None)
    def pay(ctx: ToolContext, amount: int) -> str:
        if who == "tool":
            meddle(ctx)
        return f"paid {amount}"

    agent, model = make_agent([[function_call("pay", {"amount": 5}, call_id="c1")], [assistant_message("ok")]],
                              tools=[pay])
    session = SQLiteSession("s", str(tmp_path / "s.db"))
    assert Runner.run_sync(agent, "go", session=session).final_output == "ok"
    call = function_call("pay", {"amount": 5}, call_id="c1")
    assert [i for i in model.calls[1].input if i.get("type") == "function_call"] == [call]
    assert [i for i in session.get_items() if i.get("type") == "function_call"] == [call]
    assert outputs_sent(model.calls[1]) == {"c1": "paid 5"}


def test_a_context_parameter_is_injected_and_left_out_of_the_schema():
    seen = {}

    @function_tool
    def whoami(ctx: RunContextWrapper, greeting: str) -> str:
        seen["context"] = ctx.context
        return f"{greeting}, {ctx.context['name']}"

    @function_tool
    def which_call(ctx: ToolContext) -> str:
        return f"{ctx.tool_name}/{ctx.tool_call_id}"

    agent, model = make_agent([[function_call("whoami", {"greeting": "hi"}, call_id="c1"),
                                function_call("which_call", "{}", call_id="c2")],
                               [assistant_message("ok")]], tools=[whoami, which_call])
    Runner.run_sync(agent, "go", context={"name": "ada"})
    specs = {t["name"]: t["parameters"] for t in model.calls[0].tools}
    assert list(specs["whoami"]["properties"]) == ["greeting"]
    assert specs["which_call"]["properties"] == {}
    assert outputs_sent(model.calls[1]) == {"c1": "hi, ada", "c2": "which_call/c2"}
    assert seen["context"] == {"name": "ada"}


def test_a_dict_parameter_is_refused_in_strict_mode_at_decoration_time_naming_the_parameter():
    with pytest.raises(UserError, match="filters"):
        @function_tool
        def lookup(filters: Dict[str, int]) -> str:
            return "x"

    @function_tool(strict_mode=False)
    def lookup_loose(filters: Dict[str, int]) -> str:
        return json.dumps(filters)

    assert lookup_loose.strict_json_schema is False
    _, text = run_one_call(lookup_loose, {"filters": {"a": 1}})
    assert text == '{"a": 1}'


def test_an_annotation_the_kernel_cannot_express_fails_at_decoration_time():
    class Opaque:
        pass

    with pytest.raises(UserError):
        @function_tool
        def use(thing: Opaque) -> str:
            return "x"


def test_a_tool_name_outside_the_allowed_pattern_is_a_clear_error():
    with pytest.raises(UserError, match="tool name"):
        @function_tool(name_override="has spaces!")
        def tool() -> str:
            return "x"
    with pytest.raises(UserError):
        function_tool(name_override="x" * 65)(lambda: "x")


def test_name_and_description_overrides_are_what_the_model_sees():
    @function_tool(name_override="lookup_v2", description_override="Look it up.")
    def lookup() -> str:
        """Original docstring."""
        return "x"

    agent, model = make_agent([[function_call("lookup_v2", "{}", call_id="c1")], [assistant_message("ok")]],
                              tools=[lookup])
    Runner.run_sync(agent, "go")
    assert [(t["name"], t["description"]) for t in model.calls[0].tools] == [("lookup_v2", "Look it up.")]
    assert outputs_sent(model.calls[1]) == {"c1": "x"}


# --- Behaviour 4: arguments ---------------------------------------------------------------------


ran: list = []


@pytest.fixture(autouse=True)
def _reset():
    ran.clear()


@function_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    ran.append((a, b))
    return a + b


@function_tool
def ping() -> str:
    ran.append("ping")
    return "pong"


@pytest.mark.parametrize("arguments", ["", "   ", "{}"])
def test_empty_arguments_mean_no_arguments(arguments):
    _, text = run_one_call(ping, arguments)
    assert text == "pong"
    assert ran == ["ping"]


def test_missing_arguments_field_means_no_arguments():
    call = function_call("ping", "{}", call_id="c1")
    del call["arguments"]
    agent, model = make_agent([[call], [assistant_message("ok")]], tools=[ping])
    Runner.run_sync(agent, "go")
    assert outputs_sent(model.calls[1]) == {"c1": "pong"}


def test_invalid_json_arguments_do_not_run_the_tool_and_the_model_is_told_what_to_fix():
    _, text = run_one_call(add, '{"a": 1, "b": ')
    assert ran == []
    assert "Invalid JSON input for tool add" in text
    assert '{"a": 1, "b": ' in text  # a preview of what was received


@pytest.mark.parametrize("garbage", [
    pytest.param("{" + "x" * 5000, id="broken-json"),
    pytest.param('{"a": 1, "b": "' + "x" * 5000 + '"}', id="wrong-type-long-value"),
    pytest.param('{"a": 1, "b": 2, "' + "x" * 5000 + '": 3}', id="unexpected-long-key"),
])
def test_the_preview_of_bad_arguments_is_bounded(garbage):
    _, text = run_one_call(add, garbage)
    assert ran == []
    assert "xxxxxxxxxx" in text
    assert len(text) < 1000


@pytest.mark.parametrize("arguments", ["[1, 2]", "42", '"a string"', "null"])
def test_arguments_that_are_not_a_json_object_do_not_run_the_tool(arguments):
    _, text = run_one_call(add, arguments)
    assert ran == []
    assert "object" in text
    assert arguments in text


def test_a_missing_required_argument_is_named_and_the_tool_does_not_run():
    _, text = run_one_call(add, {"a": 1})
    assert ran == []
    assert "'b'" in text and "missing" in text


def test_an_argument_of_the_wrong_type_is_named_and_the_tool_does_not_run():
    _, text = run_one_call(add, {"a": 1, "b": "two"})
    assert ran == []
    assert "'b'" in text and "integer" in text
    assert '"two"' in text  # the preview shows what the model sent


@dataclass
class Line:
    city: str


@dataclass
class Shipment:
    lines: List[Line]


def test_a_problem_deep_inside_an_argument_is_named_by_its_path():
    @function_tool
    def ship(shipment: Shipment) -> str:
        ran.append(shipment)
        return "shipped"

    _, text = run_one_call(ship, {"shipment": {"lines": [{"city": "Oslo"}, {"city": 5}]}})
    assert ran == []
    assert "shipment.lines[1].city" in text and "string" in text


def test_an_unexpected_argument_is_refused():
    _, text = run_one_call(add, {"a": 1, "b": 2, "c": 3})
    assert ran == []
    assert "'c'" in text


def test_the_model_can_correct_bad_arguments_on_its_next_turn():
    agent, model = make_agent([
        [function_call("add", "{oops", call_id="c1")],
        [function_call("add", {"a": 2, "b": 3}, call_id="c2")],
        [assistant_message("5")],
    ], tools=[add])
    result = Runner.run_sync(agent, "go")
    assert result.final_output == "5"
    assert ran == [(2, 3)]
    assert outputs_sent(model.calls[2])["c2"] == "5"


@dataclass
class Order:
    sku: str
    address: Address
    notes: Optional[str] = None


def test_valid_arguments_are_converted_to_the_annotated_types_with_dataclasses_built():
    received = []

    @function_tool
    def place(order: Order, tags: List[str], count: float) -> str:
        received.append((order, tags, count))
        return "placed"

    _, text = run_one_call(place, {"order": {"sku": "A1", "address": {"city": "Paris", "zip_code": "75001"},
                                             "notes": None}, "tags": ["x"], "count": 2})
    assert text == "placed"
    ((order, tags, count),) = received
    assert order == Order("A1", Address("Paris", "75001"), None)
    assert isinstance(order.address, Address)
    assert tags == ["x"]
    assert isinstance(count, float)


# --- Behaviour 5: results --------------------------------------------------------------------------


class Point(TypedDict):
    x: int
    y: int


class Custom:
    def __str__(self):
        return "custom-str"


@dataclass
class City:
    name: str
    population: int


@pytest.mark.parametrize("value, expected", [
    ("plain text", "plain text"),
    ('{"already": "json"}', '{"already": "json"}'),
    ({"city": "Zürich", "n": 1}, '{"city": "Zürich", "n": 1}'),
    ([1, "deux", None], '[1, "deux", null]'),
    (City("Kraków", 800000), '{"name": "Kraków", "population": 800000}'),
    (Point(x=1, y=2), '{"x": 1, "y": 2}'),
    (42, "42"),
    (Custom(), "custom-str"),
])
def test_tool_results_reach_the_model_as_text_strings_as_is_data_as_json(value, expected):
    @function_tool
    def produce() -> object:
        return value

    result, text = run_one_call(produce, "{}")
    assert text == expected
    (output_item,) = [i for i in result.new_items if i.type == "tool_call_output_item"]
    assert output_item.output is value  # the Python value stays on the item
    assert output_item.raw_item["output"] == expected


# --- Behaviour 6: failures -----------------------------------------------------------------------


def test_a_tool_error_reaches_the_model_verbatim():
    @function_tool
    def book(day: str) -> str:
        raise ToolError(f"No slots left on {day}; try another day.")

    _, text = run_one_call(book, {"day": "Monday"})
    assert text == "No slots left on Monday; try another day."


def test_any_other_exception_is_redacted():
    @function_tool
    def connect() -> str:
        raise RuntimeError("password=hunter2 at /etc/secret")

    result, text = run_one_call(connect, "{}")
    assert text == REDACTED
    assert "hunter2" not in json.dumps(result.to_input_list())


@dataclass
class PricedOrder:
    qty: int

    def __post_init__(self):
        if self.qty <= 0:
            raise ValueError("qty must be positive")
        self.price = PRICES.get("sku") * self.qty  # a bug of the developer's: None * int, a TypeError


PRICES: dict = {}


def test_a_bug_in_a_parameters_post_init_is_the_tools_failure_and_a_check_there_the_models_mistake(caplog):
    """A ValueError from __post_init__ is a check saying what is wrong with the value: the model reads it. Anything
    else is a bug of the developer's, which was blamed on the model, its text sent verbatim past the redaction, no
    warning logged, and the model asked to fix arguments that were right (it called again and again)."""
    @function_tool
    def place(order: PricedOrder) -> str:
        return "placed"

    assert run_one_call(place, '{"order": {"qty": 0}}')[1] == (
        "Invalid JSON input for tool place: parameter 'order': invalid PricedOrder: qty must be positive. Received: "
        '{"order": {"qty": 0}}\nFix the arguments and call the tool again.')
    with caplog.at_level("WARNING", logger="miniagents"):
        assert run_one_call(place, {"order": {"qty": 2}})[1] == REDACTED
    assert [r.exc_info[0] for r in caplog.records] == [TypeError]
    place.failure_error_function = None
    agent, _ = make_agent([[function_call("place", {"order": {"qty": 2}}, call_id="c1")]], tools=[place])
    with pytest.raises(TypeError, match="unsupported operand"):
        Runner.run_sync(agent, "go")


def test_failure_error_function_none_lets_the_exception_propagate():
    class Boom(Exception):
        pass

    @function_tool(failure_error_function=None)
    def explode() -> str:
        raise Boom("kaboom")

    agent, model = make_agent([[function_call("explode", "{}", call_id="c1")], [assistant_message("never")]],
                              tools=[explode])
    with pytest.raises(Boom, match="kaboom"):
        Runner.run_sync(agent, "go")
    assert len(model.calls) == 1


def test_failure_error_function_none_raises_bad_arguments_as_model_behavior_error():
    """Upstream's rule: with no failure policy every failure raises, the model's bad arguments too (the default
    policy tells the model what to fix instead)."""
    @function_tool(failure_error_function=None)
    def echo(value: str) -> str:
        return value

    agent, model = make_agent([[function_call("echo", "[]", call_id="c1")], [assistant_message("never")]],
                              tools=[echo])
    with pytest.raises(ModelBehaviorError, match="Invalid JSON input for tool echo: expected a JSON object"):
        Runner.run_sync(agent, "go")
    assert len(model.calls) == 1


def test_a_failure_error_function_supplies_the_text():
    seen = []

    def explain(ctx, error):
        seen.append((type(ctx).__name__, error))
        return f"failed with {type(error).__name__}: {error}"

    @function_tool(failure_error_function=explain)
    def divide(a: int, b: int) -> float:
        return a / b

    _, text = run_one_call(divide, {"a": 1, "b": 0})
    assert text == "failed with ZeroDivisionError: division by zero"
    assert isinstance(seen[0][1], ZeroDivisionError)


def test_an_async_failure_error_function_is_awaited():
    async def explain(ctx, error):
        return "async explanation"

    @function_tool(failure_error_function=explain)
    def fail() -> str:
        raise ValueError("x")

    _, text = run_one_call(fail, "{}")
    assert text == "async explanation"


def test_a_tool_error_raised_by_an_async_tool_reaches_the_model_verbatim():
    @function_tool
    async def check() -> str:
        await asyncio.sleep(0)
        raise ToolError("async tool says no")

    _, text = run_one_call(check, "{}")
    assert text == "async tool says no"


@pytest.mark.parametrize("is_async", [False, True])
@pytest.mark.parametrize("error", [SessionStoreError("the inner run's session cannot be written"),
                                   AlreadyResumedError("r1", 1, None), UnfinishedTurnError("s", "r1", 1),
                                   MissingFeatureError("sessions", "_sqlite3", "install it", "SQLiteSession")],
                         ids=lambda error: type(error).__name__)
def test_a_kernel_error_a_sync_or_async_tool_raises_stops_the_run(is_async, error):
    """An inner run's session or ledger failing inside a tool (or a feature this Python lacks) stops the run with
    that error, whether the tool is sync or async: no text can fix it for the model, and the call may have run (an
    async tool's was told to the model as the redacted failure, inviting it to run the call again)."""
    def book() -> str:
        raise error

    async def book_async() -> str:
        await asyncio.sleep(0)
        raise error

    tool = function_tool(book_async if is_async else book, name_override="book")
    agent, model = make_agent([[function_call("book", "{}", call_id="c1")], [assistant_message("done")]], tools=[tool])
    with pytest.raises(type(error)) as raised:
        Runner.run_sync(agent, "go")
    assert raised.value is error and len(model.calls) == 1


def test_a_slow_sync_tool_times_out_with_a_message_and_the_run_continues():
    @function_tool(timeout=0.05)
    def slow() -> str:
        time.sleep(0.5)
        return "too late"

    start = time.monotonic()
    result, text = run_one_call(slow, "{}")
    assert time.monotonic() - start < 0.45
    assert text == "Tool 'slow' timed out after 0.05 seconds. It could not be stopped and may still complete: what it does may still happen."  # a sync function runs on
    assert result.final_output == "done"


def test_a_slow_async_tool_times_out_with_a_message_and_the_run_continues():
    @function_tool(timeout=0.05)
    async def slow_async() -> str:
        await asyncio.sleep(0.5)
        return "too late"

    start = time.monotonic()
    result, text = run_one_call(slow_async, "{}")
    assert time.monotonic() - start < 0.45
    assert text == "Tool 'slow_async' timed out after 0.05 seconds."
    assert result.final_output == "done"


def test_an_async_tool_past_its_timeout_is_cancelled_not_left_running():
    cancelled, finished = threading.Event(), []

    @function_tool(timeout=0.05)
    async def slow_async() -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        finished.append("too late")  # a side effect after the model was told the call timed out
        return "too late"

    _, text = run_one_call(slow_async, "{}")
    assert text == "Tool 'slow_async' timed out after 0.05 seconds."
    assert cancelled.wait(20) and finished == []


@pytest.mark.parametrize("is_async", [False, True])
def test_timeout_behavior_raise_exception_raises_tool_timeout_error(is_async):
    if is_async:
        async def slow() -> str:
            await asyncio.sleep(0.5)
            return "late"
    else:
        def slow() -> str:
            time.sleep(0.5)
            return "late"

    tool = function_tool(slow, timeout=0.05, timeout_behavior="raise_exception")
    agent, model = make_agent([[function_call("slow", "{}", call_id="c1")], [assistant_message("never")]],
                              tools=[tool])
    with pytest.raises(ToolTimeoutError, match=r"^Tool 'slow' timed out after 0.05 seconds\.") as info:
        Runner.run_sync(agent, "go")
    assert info.value.tool_name == "slow" and info.value.timeout_seconds == 0.05
    assert info.value.still_running is not is_async  # an async tool is cancelled; a sync one cannot be
    assert len(model.calls) == 1


def test_an_approved_sync_tool_past_its_timeout_that_still_completes_is_not_reported_as_not_having_happened(tmp_path):
    """The model and the session are told the call may still complete, and it does (issue 20, item 4)."""
    done = threading.Event()

    @function_tool(timeout=0.05, needs_approval=True)
    def transfer() -> str:
        time.sleep(0.3)
        done.set()  # the side effect happens after the deadline
        return "transferred"

    from miniagents import RunState, SQLiteSession

    session = SQLiteSession("s", str(tmp_path / "db"))
    agent, model = make_agent([[function_call("transfer", "{}", call_id="c1")], [assistant_message("ok")]],
                              tools=[transfer])
    state = Runner.run_sync(agent, "go", session=session).to_state()
    state.approve(state.get_interruptions()[0])
    Runner.run_sync(agent, RunState.from_string(agent, state.to_string()), session=session)
    told = outputs_sent(model.calls[1])["c1"]
    assert "may still complete" in told and done.wait(10)
    assert [i["output"] for i in session.get_items() if i.get("type") == "function_call_output"] == [told]


def test_timeout_messages_format_seconds_like_upstream():
    assert str(ToolTimeoutError("lookup", 2.0)) == "Tool 'lookup' timed out after 2 seconds."
    assert str(ToolTimeoutError("lookup", 0.25)) == "Tool 'lookup' timed out after 0.25 seconds."


def test_a_fast_tool_with_a_timeout_returns_normally():
    @function_tool(timeout=2)
    def quick() -> str:
        return "quick"

    _, text = run_one_call(quick, "{}")
    assert text == "quick"


def test_a_timeout_error_function_supplies_the_timeout_text():
    @function_tool(timeout=0.05, timeout_error_function=lambda ctx, e: f"gave up after {e.timeout_seconds}s")
    def slow() -> str:
        time.sleep(0.5)
        return "late"

    _, text = run_one_call(slow, "{}")
    assert text == "gave up after 0.05s"



@pytest.mark.parametrize("timeout", [None, 0.05])
def test_an_on_invoke_tool_or_timeout_set_after_the_tool_was_made_is_how_its_calls_run(timeout):
    """Setting either later composes how a call runs again (a wrapper, a timeout), never silently ignored; a copy
    changed later runs as changed, the original as it was."""
    @function_tool(timeout=timeout)
    def slow() -> str:
        time.sleep(0.3)
        return "slow"

    inner = slow.on_invoke_tool
    slow.on_invoke_tool = lambda ctx, args: "wrapped " + inner(ctx, args)
    assert run_one_call(slow, "{}")[1] == ("wrapped slow" if timeout is None else
                                           "Tool 'slow' timed out after 0.05 seconds. It could not be stopped and "
                                           "may still complete: what it does may still happen.")
    slow.timeout_seconds = None
    assert run_one_call(slow, "{}")[1] == "wrapped slow"
    twin = copy.copy(slow)
    twin.timeout_seconds = 0.01
    assert run_one_call(twin, "{}")[1].startswith("Tool 'slow' timed out after 0.01 seconds")
    assert run_one_call(slow, "{}")[1] == "wrapped slow"
    with pytest.raises(UserError, match="timeout must be a number of seconds > 0 and at most 9223372036 "
                                        r"\(None: no timeout\), got 0$"):
        slow.timeout_seconds = 0
    with pytest.raises(UserError, match="got inf$"):  # set later as when the tool is made
        slow.timeout_seconds = float("inf")


@pytest.mark.parametrize("timeout", ["5", True, [1], float("nan"), float("inf"), 1e10, 10 ** 400, -1], ids=repr)
def test_a_timeout_that_is_no_number_of_seconds_a_thread_can_wait_is_refused_where_the_tool_is_made(timeout):
    """A string was a bare TypeError, True one second; past threading.TIMEOUT_MAX (inf, 1e10: "no practical
    limit") the tool was made, and each call started it and then raised OverflowError waiting for it: the model was
    told the redacted failure of a call that ran (a bare OverflowError with timeout_behavior="raise_exception")."""
    ran = []

    def charge(amount: int) -> str:
        ran.append(amount)
        return "charged"

    with pytest.raises(UserError, match=f"^tool 'charge': timeout must be a number of seconds > 0 and at most "
                                        f"{threading.TIMEOUT_MAX:.0f}"):
        function_tool(charge, timeout=timeout)
    assert ran == []


@pytest.mark.parametrize("is_async", [False, True])
def test_a_timeout_of_threading_timeout_max_is_taken_and_the_call_runs(is_async):
    def charge(amount: int) -> str:
        return f"charged {amount}"

    async def charge_async(amount: int) -> str:
        return f"charged {amount}"

    tool = function_tool(charge_async if is_async else charge, name_override="charge", timeout=threading.TIMEOUT_MAX)
    assert run_one_call(tool, {"amount": 5})[1] == "charged 5"

# --- Behaviour 7: unknown tools --------------------------------------------------------------------


def test_an_unknown_tool_is_answered_with_the_list_of_available_tools_and_the_run_continues():
    agent, model = make_agent([[function_call("serch", {"q": "x"}, call_id="c1")],
                               [function_call("ping", "{}", call_id="c2")],
                               [assistant_message("found it")]], tools=[ping, add])
    result = Runner.run_sync(agent, "go")
    text = outputs_sent(model.calls[1])["c1"]
    assert text.startswith("Tool 'serch' not found.")
    assert "add" in text and "ping" in text
    assert result.final_output == "found it"
    assert [i.type for i in result.new_items][:2] == ["tool_call_item", "tool_call_output_item"]


def test_a_call_id_repeated_in_one_response_runs_once_and_is_logged(caplog):
    """A server that repeats a call in one response (a streaming bug) gets one run of it, and whoever reads the
    log learns which id was dropped."""
    agent, model = make_agent([[function_call("ping", "{}", call_id="call_x"), function_call("ping", "{}",
                                                                                              call_id="call_x")],
                               [assistant_message("ok")]], tools=[ping])
    with caplog.at_level("WARNING", logger="miniagents"):
        Runner.run_sync(agent, "go")
    assert ran == ["ping"] and outputs_sent(model.calls[1]) == {"call_x": "pong"}
    assert [r.getMessage() for r in caplog.records] == ["ignoring repeated call id 'call_x' in one response"]


def test_what_a_server_sent_is_logged_capped(caplog):
    """An item type, or a call id, of megabytes (a server's bug, or one probing) was logged whole: a record of as
    many megabytes, in every log the application keeps."""
    def raises(ctx, params, call_id):
        raise RuntimeError("policy service down")

    @function_tool(needs_approval=raises)
    def guarded() -> str:
        return "guarded"

    call_id, kind = "call_" + "x" * 100_000, "y" * 100_000
    agent, model = make_agent([[{"type": kind}, function_call("guarded", "{}", call_id=call_id),
                                function_call("ping", "{}", call_id=call_id)]], tools=[ping, guarded])
    with caplog.at_level("WARNING", logger="miniagents"):
        assert Runner.run_sync(agent, "go").interruptions
    said = sorted(r.getMessage() for r in caplog.records)
    assert [m[:30] for m in said] == ["ignoring output item of unsupp", "ignoring repeated call id 'cal",
                                      "needs_approval of tool 'guarde"]
    assert all(len(m) < 200 and "…" in m for m in said)


def test_an_empty_tool_name_is_an_unknown_tool_and_a_state_holding_it_loads():
    @function_tool(needs_approval=True)
    def guarded() -> str:
        return "guarded"

    agent, model = make_agent([[function_call("", "{}", call_id="c1")], [function_call("guarded", "{}", call_id="c2")],
                               [assistant_message("ok")]], tools=[ping, guarded])
    state = Runner.run_sync(agent, "go").to_state()
    assert outputs_sent(model.calls[1])["c1"].startswith("Tool '' not found.")
    state = RunState.from_string(agent, state.to_string())  # it was refused: "without a string 'name'"
    state.approve(state.get_interruptions()[0])
    assert Runner.run_sync(agent, state).final_output == "ok"
    assert ran == []


def test_unknown_tools_still_count_against_max_turns():
    from miniagents import MaxTurnsExceeded

    agent, model = make_agent([[function_call("nope", "{}", call_id=f"c{i}")] for i in range(3)])
    with pytest.raises(MaxTurnsExceeded):
        Runner.run_sync(agent, "go", max_turns=2)
    assert len(model.calls) == 2


def test_all_function_calls_of_one_response_run_concurrently():
    barrier = threading.Barrier(2, timeout=2)

    @function_tool
    def left() -> str:
        barrier.wait()
        return "left"

    @function_tool
    def right() -> str:
        barrier.wait()
        return "right"

    agent, model = make_agent([[function_call("left", "{}", call_id="c1"), function_call("right", "{}", call_id="c2")],
                               [assistant_message("ok")]], tools=[left, right])
    Runner.run_sync(agent, "go")
    assert outputs_sent(model.calls[1]) == {"c1": "left", "c2": "right"}


def test_async_tools_of_one_response_run_concurrently():
    barrier = threading.Barrier(2, timeout=2)

    @function_tool
    async def left() -> str:
        await asyncio.sleep(0)
        barrier.wait()
        return "left"

    @function_tool
    async def right() -> str:
        await asyncio.sleep(0)
        barrier.wait()
        return "right"

    agent, model = make_agent([[function_call("left", "{}", call_id="c1"), function_call("right", "{}", call_id="c2")],
                               [assistant_message("ok")]], tools=[left, right])
    Runner.run_sync(agent, "go")
    assert outputs_sent(model.calls[1]) == {"c1": "left", "c2": "right"}


@pytest.mark.parametrize("config", [RunConfig(max_function_tool_concurrency=1)])
def test_max_function_tool_concurrency_one_runs_calls_one_at_a_time_in_call_order(config):
    lock, active, peak, order = threading.Lock(), [0], [0], []

    @function_tool
    def work(n: int) -> str:
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
            order.append(n)
        time.sleep(0.02)
        with lock:
            active[0] -= 1
        return str(n)

    agent, model = make_agent([[function_call("work", {"n": i}, call_id=f"c{i}") for i in range(4)],
                               [assistant_message("ok")]], tools=[work])
    Runner.run_sync(agent, "go", run_config=config)
    assert peak[0] == 1
    assert order == [0, 1, 2, 3]
    assert outputs_sent(model.calls[1]) == {f"c{i}": str(i) for i in range(4)}


def test_concurrency_is_bounded_by_max_function_tool_concurrency():
    lock, active, peak = threading.Lock(), [0], [0]
    first_two = threading.Barrier(2, timeout=2)  # the limit is reached, not merely allowed

    @function_tool
    def work(n: int) -> str:
        if n < 2:
            first_two.wait()
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.03)
        with lock:
            active[0] -= 1
        return str(n)

    agent, model = make_agent([[function_call("work", {"n": i}, call_id=f"c{i}") for i in range(6)],
                               [assistant_message("ok")]], tools=[work])
    Runner.run_sync(agent, "go", run_config=RunConfig(max_function_tool_concurrency=2))
    assert peak[0] == 2
    assert output_order(model.calls[1]) == [f"c{i}" for i in range(6)]


def test_outputs_enter_the_transcript_in_call_order_even_when_the_first_call_finishes_last():
    second_done = threading.Event()
    finished = []

    @function_tool
    def first() -> str:
        assert second_done.wait(2)
        finished.append("first")
        return "1"

    @function_tool
    def second() -> str:
        finished.append("second")
        second_done.set()
        return "2"

    agent, model = make_agent([[function_call("first", "{}", call_id="a"), function_call("second", "{}", call_id="b")],
                               [assistant_message("ok")]], tools=[first, second])
    result = Runner.run_sync(agent, "go")
    assert finished == ["second", "first"]
    assert [i.get("call_id") for i in model.calls[1].input[1:]] == ["a", "b", "a", "b"]
    assert [(i.type, i.raw_item["call_id"]) for i in result.new_items[:4]] == [
        ("tool_call_item", "a"), ("tool_call_item", "b"), ("tool_call_output_item", "a"),
        ("tool_call_output_item", "b")]


def test_a_failing_tool_does_not_discard_its_siblings_outputs():
    @function_tool
    def broken() -> str:
        raise RuntimeError("internal")

    @function_tool
    def fine() -> str:
        return "fine"

    agent, model = make_agent([[function_call("broken", "{}", call_id="c1"), function_call("fine", "{}", call_id="c2"),
                                function_call("add", {"a": 1}, call_id="c3")],
                               [assistant_message("ok")]], tools=[broken, fine, add])
    Runner.run_sync(agent, "go")
    sent = outputs_sent(model.calls[1])
    assert sent["c1"] == REDACTED
    assert sent["c2"] == "fine"
    assert "missing" in sent["c3"]


def test_a_propagating_failure_still_lets_its_siblings_finish():
    finished = threading.Event()

    @function_tool(failure_error_function=None)
    def broken() -> str:
        raise KeyError("boom")

    @function_tool
    def slow_sibling() -> str:
        time.sleep(0.05)
        finished.set()
        return "done"

    agent, _ = make_agent([[function_call("broken", "{}", call_id="c1"), function_call("slow_sibling", "{}", call_id="c2")]],
                          tools=[broken, slow_sibling])
    with pytest.raises(KeyError):
        Runner.run_sync(agent, "go")
    assert finished.is_set()


def test_a_repeated_call_id_within_a_response_runs_once():
    agent, model = make_agent([[function_call("add", {"a": 1, "b": 1}, call_id="same"),
                                function_call("add", {"a": 2, "b": 2}, call_id="same")],
                               [assistant_message("ok")]], tools=[add])
    result = Runner.run_sync(agent, "go")
    assert ran == [(1, 1)]
    assert [i.get("call_id") for i in model.calls[1].input[1:]] == ["same", "same"]
    assert [i.get("type") for i in model.calls[1].input[1:]] == ["function_call", "function_call_output"]
    assert [i.type for i in result.new_items] == ["tool_call_item", "tool_call_output_item", "message_output_item"]


def test_missing_or_empty_call_ids_get_unique_generated_ids():
    no_id = function_call("add", {"a": 1, "b": 1}, call_id="x")
    del no_id["call_id"]
    empty_id = function_call("add", {"a": 2, "b": 2}, call_id="")
    other_empty = function_call("add", {"a": 3, "b": 3}, call_id="")
    agent, model = make_agent([[no_id, empty_id, other_empty], [assistant_message("ok")]], tools=[add])
    Runner.run_sync(agent, "go")
    assert sorted(ran) == [(1, 1), (2, 2), (3, 3)]
    sent = model.calls[1].input[1:]
    call_ids = [i["call_id"] for i in sent if i["type"] == "function_call"]
    assert len(call_ids) == 3 and all(call_ids) and len(set(call_ids)) == 3
    assert outputs_sent(model.calls[1]) == dict(zip(call_ids, ["2", "4", "6"]))


def test_a_failed_calls_output_value_is_the_text_the_model_saw_for_manual_tools_and_timeouts():
    from miniagents import FunctionTool

    def broken(ctx, args):
        raise RuntimeError("internal detail")

    manual = FunctionTool(name="manual", description="", params_json_schema={}, on_invoke_tool=broken)

    @function_tool(timeout=0.05)
    async def slow() -> str:
        await asyncio.sleep(5)
        return "late"

    agent, model = make_agent([[function_call("manual", "{}", call_id="c1"), function_call("slow", "{}", call_id="c2")],
                               [assistant_message("done")]], tools=[manual, slow])
    result = Runner.run_sync(agent, "go")
    outputs = {i.call_id: i for i in result.new_items if i.type == "tool_call_output_item"}
    assert outputs["c1"].output == outputs["c1"].raw_item["output"] == REDACTED
    assert outputs["c2"].output == outputs["c2"].raw_item["output"] == "Tool 'slow' timed out after 0.05 seconds."


class Unusual(BaseException):
    """A BaseException that is neither an exit nor an interrupt."""


@pytest.mark.parametrize("raised", [GeneratorExit, Unusual], ids=["GeneratorExit", "custom BaseException"])
@pytest.mark.parametrize("concurrent", [False, True], ids=["alone", "beside another call"])
def test_a_tool_raising_a_base_exception_that_is_no_exit_is_a_failure_the_model_is_told(raised, concurrent):
    """It once escaped run_sync untyped; KeyboardInterrupt and SystemExit still propagate (tested elsewhere)."""
    @function_tool
    def odd() -> str:
        raise raised()

    @function_tool
    def fine() -> str:
        return "fine"

    calls = [function_call("odd", "{}", call_id="c1")] + ([function_call("fine", "{}", call_id="c2")] if concurrent
                                                          else [])
    agent, model = make_agent([calls, [assistant_message("done")]], tools=[odd, fine])
    result = Runner.run_sync(agent, "go")
    assert result.final_output == "done" and outputs_sent(model.calls[1])["c1"] == REDACTED


def test_a_tool_raising_system_exit_still_ends_the_program():
    @function_tool
    def leave() -> str:
        raise SystemExit(3)

    agent, _ = make_agent([[function_call("leave", "{}", call_id="c1")], [assistant_message("never")]], tools=[leave])
    with pytest.raises(SystemExit):
        Runner.run_sync(agent, "go")


def test_the_text_the_model_sees_for_bad_arguments_names_the_tool_once_what_to_fix_and_what_it_sent():
    from miniagents.tool import failure_text
    from miniagents.validate import ArgumentsError, parse_arguments

    @function_tool
    def f(x: int) -> str:
        """F."""
        return ""

    with pytest.raises(ArgumentsError) as bad_json:
        parse_arguments("{bad", "f")
    assert failure_text(f, None, "{bad", bad_json.value) == (
        "Invalid JSON input for tool f: Expecting property name enclosed in double quotes at line 1 column 2. "
        "Send one JSON object. Received: {bad\nFix the arguments and call the tool again.")
    wrong = ArgumentsError("parameter 'x': expected integer, got string \"a\"")
    assert failure_text(f, None, '{"x": "a"}', wrong) == (
        "Invalid JSON input for tool f: parameter 'x': expected integer, got string \"a\". Received: {\"x\": \"a\"}\n"
        "Fix the arguments and call the tool again.")


@given(st.one_of(st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False),
                 st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(), max_size=3)))
def test_a_plain_value_reaches_the_model_as_its_json_whatever_way_it_takes(value):
    """Whole numbers take a short way to their text; every plain value must read back as the value it was."""
    from miniagents.tool import tool_output

    text = tool_output(value, "t")
    assert json.loads(text) == value and (type(value) is not bool or text in ("true", "false"))
