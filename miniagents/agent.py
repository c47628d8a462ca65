"""`Agent`: a read-only dataclass of configuration, and `as_tool`, which wraps one as a function tool.

An agent holds no run state, so one instance serves any number of concurrent runs; everything a run
changes lives in its `RunState`. Field types are checked on construction so that a mistake shows up
where it was made, not three turns into a run.
"""
from __future__ import annotations

import contextvars
import dataclasses
import inspect
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, List, Optional, TypedDict, Union

from . import caller, seams
from .agent_output import output_schema
from .config import RunConfig
from .context import RunContextWrapper, TContext
from .errors import ModelBehaviorError, UsageLimitExceeded, UserError, warn
from .handoffs import Handoff, handoff
from .items import clean_text, described
from .models.interface import Model, ModelSettings
from .schema import tool_name_from, type_schema
from .tool import FunctionTool, NestedInterruption, ToolError, default_tool_error_function, output_text
from .validate import ArgumentsError, parse_arguments, validate_value


class StopAtTools(TypedDict):
    """`tool_use_behavior={"stop_at_tool_names": [...]}`: a call of one of these tools ends the run."""

    stop_at_tool_names: List[str]


class AgentToolStreamEvent(TypedDict):
    """What `as_tool(on_stream=...)` receives for each event of the nested run: the event, the nested agent, and
    the `function_call` item that started it."""

    event: Any
    agent: Any
    tool_call: Optional[dict]


# How many agent-tool runs are nested where a call starts (an agent may be its own tool): one more than MAX_NESTING is
# not run, as the state of a run paused so deep could not be loaded again (state.MAX_DEPTH), nor the stack hold it.
NESTING: contextvars.ContextVar = contextvars.ContextVar("miniagents_agent_tool_nesting", default=0)
MAX_NESTING = 50

# field -> (the types it takes, what the error says it must be)
FIELD_TYPES = {"name": ((str,), "a string"), "handoff_description": ((str, type(None)), "a string or None"),
               "tools": ((list,), "a list"), "handoffs": ((list,), "a list"), "mcp_servers": ((list,), "a list"),
               "mcp_config": ((dict,), "a dict"), "input_guardrails": ((list,), "a list"),
               "output_guardrails": ((list,), "a list"), "capabilities": ((list,), "a list"),
               "model_settings": ((ModelSettings,), "a ModelSettings instance or a dict"),
               "reset_tool_choice": ((bool,), "a bool"),
               "model": ((str, Model, type(None)), "a string, a Model or None"),
               "instructions": ((str, type(None)), "a string, a callable or None")}


@dataclass(frozen=True)
class Agent(Generic[TContext]):
    """An agent's configuration; it holds no run state. `instructions` is the system prompt (a string or
    `(ctx, agent) -> str`), `tools` the `FunctionTool`s (and hosted tools) it may call, `handoffs` the agents
    (or `Handoff`s) it may give the conversation to, `model` a model name or `Model`, and `output_type` the final
    output's type (None: text) or an `AgentOutputSchemaBase`. `tool_use_behavior` decides whether tool results
    end the run; `reset_tool_choice` un-forces `tool_choice` after a tool call. `capabilities` add tools,
    instructions and request parameters for each run (fresh copies per run; see the capabilities shell).
    `mcp_servers` are MCP servers whose tools are offered beside `tools` each turn (the MCP shell), `mcp_config`
    their options."""

    name: str
    handoff_description: Optional[str] = None
    tools: list = field(default_factory=list)
    mcp_servers: list = field(default_factory=list)
    mcp_config: dict = field(default_factory=dict)
    instructions: Union[str, Callable, None] = None
    handoffs: list = field(default_factory=list)
    model: Union[str, Model, None] = None
    model_settings: ModelSettings = field(default_factory=ModelSettings)
    input_guardrails: list = field(default_factory=list)
    output_guardrails: list = field(default_factory=list)
    output_type: Any = None
    tool_use_behavior: Any = "run_llm_again"
    reset_tool_choice: bool = True
    capabilities: list = field(default_factory=list)
    # Derived when the agent is made (`_derive`), and not fields (so `dataclasses.asdict` stays finite): the handoff
    # that gives another agent the conversation with this one (what `handoffs=[agent]` means), `default_handoff`,
    # and its output type as the model sees it, `output_schema` (None: plain text).

    def __post_init__(self):
        if isinstance(self.model_settings, dict):  # upstream takes the settings as a dict too
            object.__setattr__(self, "model_settings", ModelSettings.from_dict(self.model_settings))
        for name, (types, what) in FIELD_TYPES.items():
            value = getattr(self, name)
            if not isinstance(value, types) and not (name == "instructions" and callable(value)):
                raise TypeError(f"Agent {name} must be {what}, got {type(value).__name__}")
        if clean_text(self.name) is not self.name:  # how a state names it: repaired, a loaded state could not find it
            raise UserError(f"Agent name {self.name!r} holds a lone surrogate, which no state can be written with")
        self._check_callables()
        for tool in self.tools:
            if not isinstance(tool, FunctionTool) and not provider_tool(tool):
                raise TypeError(f"Agent tools must be FunctionTool objects (decorate functions with "
                                f"@function_tool) or hosted tools, got {type(tool).__name__}")
        for item in self.handoffs:
            if not isinstance(item, (Agent, Handoff)):
                raise TypeError(f"Agent handoffs must be Agent or Handoff objects, got {type(item).__name__}")
        if self.input_guardrails or self.output_guardrails:  # (guardrails.py is loaded only by runs that use it)
            from .guardrails import check_guardrails
            check_guardrails("Agent", self, "input_guardrails", "output_guardrails")
        for server in self.mcp_servers:  # made by the MCP shell (miniagents/mcp/), whose plugin offers their tools
            if not callable(getattr(server, "list_tools", None)) or not callable(getattr(server, "call_tool", None)):
                raise TypeError(f"Agent mcp_servers must be MCP servers (the MCP shell's MCPServerStdio), "
                                f"got {type(server).__name__}")
        self._derive()

    def _derive(self) -> None:
        """The fields derived from the others: the handoff to this agent, and the output type as the model sees it."""
        object.__setattr__(self, "default_handoff", handoff(self))
        schema = None if self.output_type in (None, str) else output_schema(self.output_type)
        object.__setattr__(self, "output_schema", None if schema is None or schema.is_plain_text() else schema)

    def _check_callables(self) -> None:
        """The fields that take a callable: instructions `(ctx, agent)`, `tool_use_behavior`."""
        if callable(self.instructions) and len(inspect.signature(self.instructions).parameters) != 2:
            params = list(inspect.signature(self.instructions).parameters)
            raise TypeError("'instructions' callable must accept exactly 2 arguments (context, agent), "
                            f"but got {len(params)}: {params}")
        behavior = self.tool_use_behavior
        names = behavior.get("stop_at_tool_names") if isinstance(behavior, dict) else None
        if not (behavior in ("run_llm_again", "stop_on_first_tool") or callable(behavior)
                or isinstance(names, (list, tuple)) and all(isinstance(name, str) for name in names)):
            raise UserError(f"Invalid tool_use_behavior: {described(behavior, 200)} (use 'run_llm_again', "
                            '\'stop_on_first_tool\', {"stop_at_tool_names": [tool names]} or a function)')

    def clone(self, **kwargs: Any) -> "Agent[TContext]":
        """A shallow copy with some fields replaced (lists are shared unless you pass new ones)."""
        return dataclasses.replace(self, **kwargs)

    def system_prompt(self, ctx: RunContextWrapper) -> Optional[str]:
        """The instructions for this turn: the text, or what the instructions callable returns (the run's call)."""
        if not callable(self.instructions):
            return self.instructions
        instructions = caller.call(self.instructions, ctx, self)
        if instructions is not None and not isinstance(instructions, str):
            raise UserError(f"The instructions function of agent {self.name!r} must return a string or None, got "
                            f"{type(instructions).__name__}")
        return instructions

    def as_tool(self, tool_name: Optional[str], tool_description: Optional[str],
                custom_output_extractor: Optional[Callable] = None, is_enabled: Any = True,
                on_stream: Optional[Callable] = None, run_config: Any = None, max_turns: Optional[int] = None,
                plugins: Any = (), session: Any = None,
                failure_error_function: Optional[Callable] = default_tool_error_function,
                needs_approval: Any = False, parameters: Any = None, input_builder: Optional[Callable] = None,
                include_input_schema: bool = False) -> FunctionTool:
        """Wrap this agent as a tool: the nested run sees only the tool's input, the caller keeps control. The
        input is `{"input": text}`, or `parameters` (a dataclass or pydantic model) given to `input_builder` (or
        shown as JSON); the output is the nested run's final output (`custom_output_extractor` may choose
        another). `on_stream` gets each event of the nested run before that run goes on. `plugins` take part in
        the nested run (as `Runner.run_sync(..., plugins=...)`); the caller's own plugins do not: a nested run is
        configured by its tool, as its `run_config`, `max_turns` and `session` are (the registered ones see both)."""
        name = tool_name or tool_name_from(self.name)
        plugins = seams.checked(plugins)  # refused when the tool is made, not when the model first calls it
        if max_turns is not None and (type(max_turns) is not int or max_turns < 0):  # as a run's: each call would fail
            raise UserError(f"as_tool max_turns must be a whole number >= 0 or None, got {described(max_turns)}")
        if run_config is not None and not isinstance(run_config, RunConfig):
            raise UserError(f"as_tool run_config must be a RunConfig, got {type(run_config).__name__}")
        if session is not None:
            from .run import check_session

            check_session(session, "as_tool session")
        for option, value in (("custom_output_extractor", custom_output_extractor), ("on_stream", on_stream),
                              ("input_builder", input_builder)):
            if value is not None and not callable(value):
                raise UserError(f"as_tool {option} must be callable or None, got {type(value).__name__}")
        if tool_name is None and re.search(r"[^a-zA-Z0-9_\s]", self.name):
            warn("agent name %r was changed to tool name %r", self.name, name)
        if parameters is not None:
            if not (dataclasses.is_dataclass(parameters) or callable(getattr(parameters, "model_json_schema", None))):
                raise TypeError("Agent tool parameters must be a dataclass or Pydantic model type.")
            schema, _ = type_schema(parameters, strict=True)
        else:
            schema = {"type": "object", "title": "AgentAsToolInput",
                      "description": "Default input schema for agent-as-tool calls.",
                      "properties": {"input": {"type": "string", "title": "Input"}},
                      "required": ["input"], "additionalProperties": False}

        def tool_input(raw_args: str) -> str:
            """What the nested run is given: the call's arguments read as the tool's input."""
            data = parse_arguments(raw_args, name)
            if parameters is None:
                if not isinstance(data.get("input"), str):
                    raise ArgumentsError(f"tool '{name}': parameter 'input' must be a string, "
                                         f"got {data.get('input')!r}")
                return data["input"]
            value = validate_value(parameters, data)
            text = caller.call(input_builder, value) if input_builder else output_text(value)
            return f"{text}\n\nInput schema: {json.dumps(schema)}" if include_input_schema else text

        def run_agent(ctx: Any, raw_args: str) -> Any:
            from .run import DEFAULT_MAX_TURNS, Options, drive, start_run  # the recursion behind agents-as-tools

            if NESTING.get() >= MAX_NESTING and ctx.resume_state is None:  # told to the model, which called deeper
                raise ToolError(f"The agent '{self.name}' was not run: agent tools nest at most {MAX_NESTING} deep")
            text, paused = tool_input(raw_args), ctx.resume_state
            # The inner run shares usage and approval decisions with the caller's run; its context names this call,
            # so its result's `agent_tool_invocation` says which call made it.
            inner = ctx.for_call({"name": name, "call_id": ctx.tool_call_id, "arguments": raw_args}, self,
                                 ctx.run_config)
            inner.turn_input = []
            if paused is not None:
                paused.context_wrapper.usage, paused.context_wrapper.approvals = ctx.usage, ctx.approvals
            options = Options(context=inner, max_turns=DEFAULT_MAX_TURNS if max_turns is None else max_turns,
                              plugins=plugins, session=session, run_config=nested_config(run_config, ctx.run_config,
                                                                                         ctx.usage))
            depth = NESTING.set(NESTING.get() + 1)
            try:  # with on_stream the inner run streams: each event reaches it with the agent and the call
                nested = start_run(self, text if paused is None else paused, options, streamed=on_stream is not None,
                                   ledger=ctx.ledger)
                if paused is None:  # the inner run's approvals are its own, kept beside the caller's
                    nested.state.context_wrapper.approval_scope = nested.state.run_id
                with caller.abortable(nested.state.cancel):  # the caller's cancel stops the inner run too
                    result = drive(nested, on_stream and (lambda event: caller.call(on_stream, AgentToolStreamEvent(
                        event=event, agent=nested.state.current_agent, tool_call=ctx.tool_call))))
            except ModelBehaviorError as error:  # the inner model's mistake, not this call's arguments
                raise ToolError(f"The agent '{self.name}' could not finish: {error.message}") from error
            except UsageLimitExceeded as limit:  # the caller's limits, reached inside: the caller stops there too
                raise NestedInterruption(limit.state, [], limit) from None
            finally:
                NESTING.reset(depth)
            if result.interruptions or nested.state.cancel_mode == "immediate":  # paused, or stopped by a cancel: the
                raise NestedInterruption(result.to_state(), result.interruptions)  # call goes on when the run resumes
            if custom_output_extractor is not None:
                return caller.call(custom_output_extractor, result)
            return agent_tool_output(result)

        return FunctionTool(name=name, description=tool_description or "", params_json_schema=schema,
                            on_invoke_tool=run_agent, is_enabled=is_enabled, needs_approval=needs_approval,
                            failure_error_function=failure_error_function, _agent=self)


def provider_tool(tool: Any) -> bool:
    """Whether `tool` is one the model provider runs (a hosted tool: the upstream shell's `WebSearchTool`, ...):
    configuration the kernel offers like a function tool (`name`, `is_enabled`) and sends as its `spec()` (with
    the `includes` its request needs), never calls. A handoff is not one: it belongs in `handoffs`."""
    return callable(getattr(tool, "spec", None)) and isinstance(getattr(tool, "name", None), str) and \
        hasattr(tool, "is_enabled") and not isinstance(tool, Handoff)


def nested_config(given: Any, parent: Any, usage: Any) -> Any:
    """An agent tool's inner run's configuration: its own, or one that resolves model names with the caller's
    provider. The caller's usage limits count the inner run too (the usage is shared); the tool's own count what
    the run spends from `usage` on (where its inner run starts, or goes on after a pause: agent tools running at
    once beside it count too), within the caller's."""
    from .config import RunConfig

    provider, limits = getattr(parent, "model_provider", None), getattr(parent, "usage_limits", None)
    if given is None:
        return RunConfig(model_provider=provider, usage_limits=limits) if provider or limits else None
    own = given.usage_limits and given.usage_limits.after(usage)
    limits = limits.within(own) if limits and own else limits or own
    return dataclasses.replace(given, usage_limits=limits) if limits else given


def agent_tool_output(result: Any) -> Any:
    """final_output unless None or ""; else the latest non-empty message text or string tool output. When output
    guardrails checked the final output, it is the answer even when empty: what they did not check never leaks."""
    if result.final_output not in (None, "") or result.output_guardrail_results:
        return result.final_output
    from .items import MessageOutputItem, ToolCallOutputItem, message_text

    for item in reversed(result.new_items):
        if isinstance(item, MessageOutputItem) and message_text(item.raw_item):
            return message_text(item.raw_item)
        if isinstance(item, ToolCallOutputItem) and isinstance(item.output, str) and item.output:
            return item.output
    return ""
