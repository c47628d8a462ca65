"""Upstream's runner and run configuration, and its rules on the kernel's seams (`UpstreamPlugin`).

- `Runner`'s class methods go through a default `AgentRunner` that a program may replace
  (`set_default_agent_runner`), and take upstream's positional arguments and a `run_config` dict, and `hooks=`:
  the run's `RunHooks` and its agents' `AgentHooks`, a plugin of that run only (hooks.py).
- `RunConfig` takes upstream's extra fields: `tool_execution` (its concurrency limit), `reasoning_item_id_policy`
  ("omit": reasoning items are sent back without their ids), the two policies miniagents does not vary
  (`tool_not_found_behavior`: the model is told; `tool_name_collision_policy`: two tools with one name are refused),
  and upstream's callbacks (`session_input_callback`, `call_model_input_filter`, `tool_error_formatter`,
  `output_guardrail_blocked_message`: run_callbacks.py).
- A run that names no model provider gets upstream's default, a `MultiProvider` (providers.py): model-name
  prefixes route ("openai/gpt-4.1"); the kernel's own default sends a name as it is written.
- `UpstreamPlugin`: a model written for upstream's async `Model` protocol (`async def get_response`, an async
  generator `stream_response`) is awaited and iterated on an event loop of its own; the reasoning-id policy; the
  callbacks, each on its seam.
"""
from __future__ import annotations

import copy
import dataclasses
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Optional, Union

from .. import caller, seams
from ..config import RunConfig as KernelRunConfig
from ..context import RunContextWrapper
from ..errors import UserError, needs
from ..models.interface import ModelResponse
from ..run import DEFAULT_MAX_TURNS, Runner as KernelRunner, choose, refuse_with_server_history
from ..state import RunState
from . import refuse_left_out_keywords, run_callbacks
from .hooks import hook_plugins
from .raw_items import ReadableModel, readable_state

asyncio = needs("asyncio", f"the shell {__name__.rpartition('.')[0]}")  # the typed error on import


@dataclass
class ToolExecutionConfig:
    """Upstream's `RunConfig.tool_execution`; its limit becomes `RunConfig.max_function_tool_concurrency`.
    Pre-approval tool guardrails are refused: miniagents runs them after approval, just before the tool."""

    max_function_tool_concurrency: Optional[int] = None
    pre_approval_tool_input_guardrails: bool = False


@dataclass(eq=False)
class RunConfig(KernelRunConfig):
    """The kernel's `RunConfig` with upstream's extra fields (see the module)."""

    tool_execution: Optional[ToolExecutionConfig] = None
    tool_not_found_behavior: str = "return_error_to_model"
    tool_name_collision_policy: str = "error"
    reasoning_item_id_policy: Optional[str] = None
    error_handlers: Optional[dict] = None  # what `Runner.run_sync(error_handlers=...)` takes (error_handlers.py)
    session_input_callback: Optional[Callable] = None  # these four: run_callbacks.py
    call_model_input_filter: Optional[Callable] = None
    tool_error_formatter: Optional[Callable] = None
    output_guardrail_blocked_message: Union[str, Callable, None] = None

    def __new__(cls, *args: Any, **kwargs: Any) -> "RunConfig":
        """An upstream field of a left-out feature is refused here, named (its generated `__init__` would say only
        that the keyword is unexpected)."""
        refuse_left_out_keywords("RunConfig", kwargs)
        return super().__new__(cls)

    def __post_init__(self):
        super().__post_init__()
        if self.tool_not_found_behavior != "return_error_to_model":
            raise UserError(f"tool_not_found_behavior={self.tool_not_found_behavior!r}: miniagents always tells the "
                            "model about a tool it does not have, so it can correct itself")
        if self.tool_name_collision_policy not in ("warn", "error"):
            raise UserError(f"Invalid tool_name_collision_policy: {self.tool_name_collision_policy!r}")
        if self.reasoning_item_id_policy not in (None, "preserve", "omit"):
            raise UserError(f"Invalid reasoning_item_id_policy: {self.reasoning_item_id_policy!r}")
        execution = self.tool_execution
        if execution is not None and execution.pre_approval_tool_input_guardrails:
            raise UserError("pre_approval_tool_input_guardrails=True is not supported: tool input guardrails "
                            "run after approval, just before the tool")
        if self.max_function_tool_concurrency is None and execution is not None:
            self.max_function_tool_concurrency = execution.max_function_tool_concurrency
        run_callbacks.check(self)


def _options(starting_agent: Any, input: Any, context: Any, max_turns: Optional[int], hooks: Any, run_config: Any,
             previous_response_id: Any, auto_previous_response_id: bool, conversation_id: Any, session: Any,
             error_handlers: Any) -> dict:
    """Upstream's arguments as the kernel's `Runner` takes them (a `run_config` dict made a `RunConfig`; the
    error handlers kept on it; the run's hooks and its agents' own hooks a plugin of this run, hooks.py; what is
    given beside a `RunState`, a plugin of this run too: `GivenBeside`)."""
    if isinstance(run_config, dict):
        run_config = RunConfig(**run_config)
    if run_config is not None and not isinstance(run_config, KernelRunConfig):
        raise UserError(f"run_config must be a RunConfig (or a dict of its fields), got {type(run_config).__name__}")
    if error_handlers is not None and not isinstance(error_handlers, dict):
        raise UserError(f"error_handlers must be a dict of handlers by error kind, got {type(error_handlers).__name__}")
    if error_handlers:
        if not isinstance(run_config, RunConfig):  # the kernel's, or none: the same settings in this shell's
            run_config = RunConfig(**{f.name: getattr(run_config, f.name) for f in dataclasses.fields(KernelRunConfig)
                                      if f.init} if run_config is not None else {})
        run_config = dataclasses.replace(run_config, error_handlers=dict(error_handlers))
    if run_config is None or run_config.model_provider is None:  # upstream's default: prefixes route ("openai/...")
        from .providers import default_provider

        run_config = copy.copy(run_config) if run_config is not None else RunConfig()
        run_config.model_provider = default_provider()
    plugins = hook_plugins(hooks, starting_agent, input.current_agent if isinstance(input, RunState) else None)
    if isinstance(input, RunState) and (context is not None or conversation_id or previous_response_id
                                        or auto_previous_response_id):
        plugins.append(GivenBeside(context, conversation_id, previous_response_id, auto_previous_response_id))
    return dict(context=context, max_turns=max_turns, plugins=plugins,
                run_config=run_config, session=session, previous_response_id=previous_response_id,
                conversation_id=conversation_id, auto_previous_response_id=auto_previous_response_id)


class GivenBeside(seams.Plugin):
    """What is given beside a `RunState`, as upstream resumes: a context replaces the state's application context
    (its usage and approvals stay), a conversation id or previous response id the state's (its `max_turns` stays).
    They are written when the run starts (`prepare_run`, after the kernel's `take`), so a run the kernel refuses
    because another holds the state, even one started at the same instant, never reaches that run. A conversation
    id changes the steps the run takes: they are checked and chosen again."""

    def __init__(self, context: Any, conversation_id: Any, previous_response_id: Any, auto_previous_response_id: bool):
        self.context = context.context if isinstance(context, RunContextWrapper) else context
        self.replaces_context = context is not None
        self.ids = (conversation_id, previous_response_id, bool(auto_previous_response_id))

    def prepare_run(self, run: Any) -> None:
        state = run.state
        before = (state.conversation_id, state.previous_response_id, state.auto_previous_response_id)
        after = tuple(given or own for given, own in zip(self.ids, before))
        if after != before:
            state.conversation_id, state.previous_response_id, state.auto_previous_response_id = after
            try:
                refuse_with_server_history(run)
            except UserError:
                state.conversation_id, state.previous_response_id, state.auto_previous_response_id = before
                raise
            choose(run)
        if self.replaces_context:
            replace_context(state, self.context)


def replace_context(state: RunState, context: Any) -> None:
    """The state's application context, and its agent tools' paused inner runs' (as loading it with
    `context_override` gives them): one call's tools never run with another user's context."""
    state.context_wrapper.context = context
    for nested in state.pending.nested.values() if state.pending else ():
        replace_context(nested, context)


class AgentRunner:
    """Runs an agent: what `Runner`'s class methods call (`get_default_agent_runner()`). Subclass it and install
    yours with `set_default_agent_runner` to change how every run of the program starts."""

    def run_sync(self, starting_agent: Any, input: Any, *, context: Any = None,
                 max_turns: Optional[int] = DEFAULT_MAX_TURNS, hooks: Any = None, run_config: Any = None,
                 previous_response_id: Any = None, auto_previous_response_id: bool = False,
                 conversation_id: Any = None, session: Any = None, error_handlers: Any = None) -> Any:
        return KernelRunner.run_sync(starting_agent, input, **_options(
            starting_agent, input, context, max_turns, hooks, run_config, previous_response_id,
            auto_previous_response_id, conversation_id, session, error_handlers))

    async def run(self, starting_agent: Any, input: Any, *, context: Any = None,
                  max_turns: Optional[int] = DEFAULT_MAX_TURNS, hooks: Any = None, run_config: Any = None,
                  previous_response_id: Any = None, auto_previous_response_id: bool = False,
                  conversation_id: Any = None, session: Any = None, error_handlers: Any = None) -> Any:
        return await KernelRunner.run(starting_agent, input, **_options(
            starting_agent, input, context, max_turns, hooks, run_config, previous_response_id,
            auto_previous_response_id, conversation_id, session, error_handlers))

    def run_streamed(self, starting_agent: Any, input: Any, context: Any = None,
                     max_turns: Optional[int] = DEFAULT_MAX_TURNS, hooks: Any = None, run_config: Any = None,
                     previous_response_id: Any = None, auto_previous_response_id: bool = False,
                     conversation_id: Any = None, session: Any = None, *, error_handlers: Any = None) -> Any:
        return KernelRunner.run_streamed(starting_agent, input, **_options(
            starting_agent, input, context, max_turns, hooks, run_config, previous_response_id,
            auto_previous_response_id, conversation_id, session, error_handlers))


_default_runner = AgentRunner()


def set_default_agent_runner(runner: Optional[AgentRunner]) -> None:
    """Make `runner` the one `Runner.run_sync`/`run`/`run_streamed` use (None: back to a plain `AgentRunner`)."""
    global _default_runner
    _default_runner = runner if runner is not None else AgentRunner()


def get_default_agent_runner() -> AgentRunner:
    return _default_runner


class Runner:
    """Upstream's `Runner`: each class method calls the default agent runner's (see `AgentRunner`), with every
    option by keyword (`keywords`)."""

    @classmethod
    def run_sync(cls, starting_agent: Any, input: Any, **options: Any) -> Any:
        return get_default_agent_runner().run_sync(starting_agent, input, **keywords("run_sync", (), options))

    @classmethod
    async def run(cls, starting_agent: Any, input: Any, **options: Any) -> Any:
        return await get_default_agent_runner().run(starting_agent, input, **keywords("run", (), options))

    @classmethod
    def run_streamed(cls, starting_agent: Any, input: Any, *args: Any, **options: Any) -> Any:
        return get_default_agent_runner().run_streamed(starting_agent, input, **keywords("run_streamed", args, options))


def keywords(method: str, args: tuple, options: dict) -> dict:
    """Every option of upstream's `Runner.<method>`, defaults too, by keyword, as upstream hands them to the default
    agent runner: a runner of the program's own written for upstream (`def run_streamed(self, agent, input,
    **kwargs)`) reads any of them, and gets those given by position (`Runner.run_streamed(agent, input, context)`
    was a TypeError there)."""
    bound = inspect.signature(getattr(AgentRunner, method)).bind(None, None, None, *args, **options)
    bound.apply_defaults()
    return dict(list(bound.arguments.items())[3:])


class AwaitedModel:
    """A model written for upstream's async `Model` protocol, as the kernel calls a model: its answer awaited,
    its stream advanced one event at a time on an event loop of its own (a cancel stops the step it waits on)."""

    def __init__(self, model: Any):
        self.wrapped = model  # not `model`: a tracing span reads a model's name from `model.model`

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # what copy asks of this object (__deepcopy__, __setstate__), never passed on:
            raise AttributeError(name)  # a copy being built has no `wrapped` yet to ask (a RecursionError)
        return getattr(self.wrapped, name)

    def get_response(self, *args: Any, **kwargs: Any) -> Any:
        return caller.resolve(self.wrapped.get_response(*args, **kwargs))

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        events = self.wrapped.stream_response(*args, **kwargs)
        return iterate(events) if hasattr(events, "__anext__") else events


def iterate(events: Any) -> Any:
    """An async iterator as a plain one, each step on an event loop of its own; closed when left."""
    loop, aborts = asyncio.new_event_loop(), caller.CANCEL_CALLBACKS.get() or []

    def step(awaitable: Any) -> Any:
        async def wait() -> Any:
            return await awaitable
        task = loop.create_task(wait())
        abort = lambda: loop.call_soon_threadsafe(task.cancel)  # noqa: E731 - from another thread: a cancel
        aborts.append(abort)
        try:
            if running_loop():  # this thread runs a loop already (run_sync from async code)
                return caller.in_thread(lambda: loop.run_until_complete(task))
            return loop.run_until_complete(task)
        except asyncio.CancelledError:
            raise caller.Cancelled() from None
        finally:
            aborts.remove(abort)
    try:
        while True:
            try:
                item = step(events.__anext__())
            except StopAsyncIteration:
                return
            yield item
    finally:
        try:
            if hasattr(events, "aclose"):
                step(events.aclose())
        finally:
            loop.close()


class WithoutReasoningIds(AwaitedModel):
    """A model whose reasoning items come without their ids (`reasoning_item_id_policy="omit"`): they are stored and
    sent back so."""

    def get_response(self, *args: Any, **kwargs: Any) -> Any:
        response = self.wrapped.get_response(*args, **kwargs)
        if isinstance(response, ModelResponse):  # anything else is left for the kernel to refuse
            response.output = without_ids(response.output)
        return response

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        events = self.wrapped.stream_response(*args, **kwargs)
        return stream_without_ids(events) if isinstance(events, Iterable) else events  # else left for the kernel


def stream_without_ids(events: Iterable) -> Iterator[Any]:
    """A stream's events, its completed response's reasoning items without their ids. Only a well-formed completed
    response is rewritten: any other event goes on as the model sent it, for the kernel's `ModelBehaviorError`
    (not a bare error here)."""
    for event in events:
        response = event.get("response") if isinstance(event, dict) else None
        if event_type(event) == "response.completed" and isinstance(response, dict) and \
                isinstance(response.get("output"), list):
            response["output"] = without_ids(response["output"])
        yield event


def event_type(event: Any) -> Any:
    return event.get("type") if isinstance(event, dict) else None


def without_ids(items: list) -> list:
    return [{k: v for k, v in i.items() if k != "id"} if event_type(i) == "reasoning" else i for i in items]


def running_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class UpstreamPlugin(seams.Plugin):
    """Upstream's rules on the kernel's seams (see the module)."""

    def prepare_run(self, run: Any) -> None:
        """The run counts its usage in upstream's `Usage` (each request's own entry kept too). An agent with a
        hosted tool and a Chat Completions model is refused when the run starts, before any model call (the
        kernel's adapter refuses it only when that agent's model is called)."""
        from .hosted_tools import HostedTool
        from ..turn import get_model
        from .classes import Usage

        context = run.state.context_wrapper
        context.usage = Usage.of(context.usage)
        if run.state.generated_items or run.state.model_responses:  # a state the run goes on from, which the
            readable_state(run.state)  # kernel may have loaded (continued from a session's journal, say)

        for agent in run.agents:
            hosted = next((t for t in agent.tools if isinstance(t, HostedTool)), None)
            if hosted is not None and type(get_model(agent, run.config)).__name__ == "OpenAIChatCompletionsModel":
                raise UserError(f"{type(hosted).__name__} ({hosted.name!r}) of agent {agent.name!r} is a hosted tool, "
                                "which only the Responses API runs, but the agent's model uses Chat Completions. Use "
                                "an OpenAIResponsesModel (OpenAIProvider(use_responses=True), or "
                                "set_default_openai_api('responses')), or remove the tool.")

    def model(self, run: Any, setup: Any, model: Any) -> Any:
        """An async model awaited, the reasoning-id policy, then what the model gives readable by attribute, as
        upstream's typed objects are (`ReadableModel`, last: the others may make new items)."""
        if inspect.iscoroutinefunction(getattr(model, "get_response", None)) or \
                inspect.isasyncgenfunction(getattr(model, "stream_response", None)):
            model = AwaitedModel(model)
        if getattr(run.config, "reasoning_item_id_policy", None) == "omit":
            model = WithoutReasoningIds(model)
        return ReadableModel(model)

    def session_input(self, run: Any, history: list, new_items: list, items: list) -> list:
        return run_callbacks.session_input(run, history, new_items, items)

    def model_input(self, run: Any, setup: Any, items: list) -> Any:
        """The program's `call_model_input_filter` first (its instructions too), then the reasoning-id policy."""
        filtered = getattr(run.config, "call_model_input_filter", None) is not None
        instructions, items = run_callbacks.filter_model_input(run, setup, items) if filtered else (None, items)
        if getattr(run.config, "reasoning_item_id_policy", None) == "omit":
            items = without_ids(items)
        return (instructions, items) if filtered else items

    def error_text(self, run: Any, call: Any, kind: str, text: str) -> str:
        return run_callbacks.error_text(run, call, kind, text)

    def blocked_output(self, run: Any, trip: Any, text: str) -> str:
        return run_callbacks.blocked_output(run, trip, text)

    def answer_error(self, run: Any, turn: Any, error: Any) -> Any:
        from .error_handlers import answer

        return answer(run, turn, error)


PLUGIN = UpstreamPlugin()  # the one the package registers: importlib.reload of the package registers it again, once
