"""`Agent`: a read-only dataclass of configuration, and `as_tool`, which wraps one as a function tool.

An agent holds no run state, so one instance serves any number of concurrent runs; everything a run
changes lives in its `RunState`. Field types are checked on construction so that a mistake shows up
where it was made, not three turns into a run.
"""
from __future__ import annotations

import dataclasses
import inspect
import json
import re
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Dict, Generic, List, Optional, TypedDict, Union

from . import caller
from .context import RunContextWrapper, TContext, ToolContext
from .errors import ModelBehaviorError, UsageLimitExceeded, UserError, warn
from .agent_output import output_schema
from .handoffs import Handoff, handoff
from .models.interface import Model, ModelSettings
from .schema import tool_name_from, type_schema
from .validate import ArgumentsError, parse_arguments, validate_value
from .tool import (EXITS, FunctionTool, FunctionToolResult, HostedTool, NestedInterruption, ToolError,
                   ToolsToFinalOutputResult, default_tool_error_function, failure_text, output_text)



class StopAtTools(TypedDict):
    stop_at_tool_names: List[str]


ToolsToFinalOutputFunction = Callable[[RunContextWrapper, List[FunctionToolResult]],
                                      Union[ToolsToFinalOutputResult, Awaitable[ToolsToFinalOutputResult]]]


class AgentToolStreamEvent(TypedDict):
    """What `as_tool(on_stream=...)` receives for each event of the nested run: the event, the nested agent, and
    the `function_call` item that started it."""

    event: Any
    agent: Any
    tool_call: Optional[dict]


class Prompt(TypedDict, total=False):
    """A prompt stored on the OpenAI platform (`id`, optional `version` and `variables`); Responses API only."""

    id: str
    version: str
    variables: Dict[str, Any]


@dataclass
class GenerateDynamicPromptData:
    """What a `DynamicPromptFunction` is given each turn: the run's context and the agent."""

    context: RunContextWrapper
    agent: Any


DynamicPromptFunction = Callable[[GenerateDynamicPromptData], Union[Prompt, Awaitable[Prompt]]]


def _require_type(name: str, value: Any, types: tuple, what: str) -> None:
    if not isinstance(value, types):
        raise TypeError(f"Agent {name} must be {what}, got {type(value).__name__}")


@dataclass(frozen=True)
class AgentBase(Generic[TContext]):
    """What every agent has (upstream's base of `Agent`): a name, a description for handoffs, its tools and MCP
    servers."""

    name: str
    handoff_description: Optional[str] = None
    tools: list = field(default_factory=list)
    mcp_servers: list = field(default_factory=list)
    mcp_config: dict = field(default_factory=dict)

    async def get_all_tools(self, run_context: RunContextWrapper) -> list:
        """The tools enabled for this run context (upstream's coroutine): function tools whose `is_enabled`
        says so, and every hosted tool."""
        return self.get_enabled_tools(run_context)

    def get_enabled_tools(self, ctx: RunContextWrapper) -> list:
        return [t for t in self.tools if _enabled(getattr(t, "is_enabled", True), ctx, self)]


@dataclass(frozen=True)
class Agent(AgentBase[TContext]):
    """An agent's configuration; it holds no run state. `instructions` is the system prompt (a string or
    `(ctx, agent) -> str`), `tools` the `FunctionTool`s (and hosted tools) it may call, `handoffs` the agents
    (or `Handoff`s) it may give the conversation to, `model` a model name or `Model`, and `output_type` the final
    output's type (None: text) or an `AgentOutputSchemaBase`. `prompt` is a stored prompt (`Prompt`, or a
    `DynamicPromptFunction` called each turn) sent to a Responses API model. `tool_use_behavior` decides
    whether tool results end the run; `reset_tool_choice` un-forces `tool_choice` after a tool call.
    `capabilities` add tools, instructions and request parameters for each run (fresh copies per run; see
    miniagents.capabilities). `mcp_servers` are MCP servers whose tools are offered beside `tools` each turn
    (miniagents.mcp), `mcp_config` their options."""

    instructions: Union[str, Callable, None] = None
    prompt: Any = None
    handoffs: list = field(default_factory=list)
    model: Union[str, Model, None] = None
    model_settings: ModelSettings = field(default_factory=ModelSettings)
    input_guardrails: list = field(default_factory=list)
    output_guardrails: list = field(default_factory=list)
    output_type: Any = None
    hooks: Any = None
    tool_use_behavior: Any = "run_llm_again"
    reset_tool_choice: bool = True
    capabilities: list = field(default_factory=list)
    # Derived once, when the agent is made: the handoff that gives another agent the conversation with this one (the
    # one `handoffs=[agent]` means), and its output type as the model sees it.
    default_handoff: Any = field(init=False, repr=False, compare=False)
    output_schema: Any = field(init=False, repr=False, compare=False)  # None: plain text

    def __post_init__(self):
        if isinstance(self.model_settings, dict):  # upstream takes the settings as a dict too
            object.__setattr__(self, "model_settings", ModelSettings.from_dict(self.model_settings))
        _require_type("name", self.name, (str,), "a string")
        _require_type("handoff_description", self.handoff_description, (str, type(None)), "a string or None")
        for name in ("tools", "handoffs", "input_guardrails", "output_guardrails", "mcp_servers", "capabilities"):
            _require_type(name, getattr(self, name), (list,), "a list")
        _require_type("model_settings", self.model_settings, (ModelSettings,), "a ModelSettings instance or a dict")
        _require_type("mcp_config", self.mcp_config, (dict,), "a dict")
        for server in self.mcp_servers:  # made by the MCP shell (miniagents/mcp/), whose plugin offers their tools
            if not callable(getattr(server, "list_tools", None)) or not callable(getattr(server, "call_tool", None)):
                raise TypeError(f"Agent mcp_servers must be MCP servers (miniagents.mcp.MCPServerStdio), "
                                f"got {type(server).__name__}")
        if self.prompt is not None and not (callable(self.prompt) or isinstance(self.prompt, dict)
                                            and isinstance(self.prompt.get("id"), str)):
            raise TypeError(f"Agent prompt must be a Prompt dict with an 'id', a function returning one, or None, "
                            f"got {type(self.prompt).__name__}")
        _require_type("reset_tool_choice", self.reset_tool_choice, (bool,), "a bool")
        if self.model is not None and not isinstance(self.model, (str, Model)):
            raise TypeError(f"Agent model must be a string, a Model or None, got {type(self.model).__name__}")
        if self.instructions is not None and not isinstance(self.instructions, str):
            if not callable(self.instructions):
                raise TypeError(f"Agent instructions must be a string, a callable or None, "
                                f"got {type(self.instructions).__name__}")
            params = list(inspect.signature(self.instructions).parameters)
            if len(params) != 2:
                raise TypeError("'instructions' callable must accept exactly 2 arguments (context, agent), "
                                f"but got {len(params)}: {params}")
        behavior = self.tool_use_behavior
        if not (behavior in ("run_llm_again", "stop_on_first_tool") or callable(behavior)
                or (isinstance(behavior, dict) and "stop_at_tool_names" in behavior)):
            raise UserError(f"Invalid tool_use_behavior: {behavior!r}")
        for tool in self.tools:
            if not isinstance(tool, (FunctionTool, HostedTool)):
                raise TypeError(f"Agent tools must be FunctionTool objects (decorate functions with "
                                f"@function_tool) or hosted tools, got {type(tool).__name__}")
        for item in self.handoffs:
            if not isinstance(item, (Agent, Handoff)):
                raise TypeError(f"Agent handoffs must be Agent or Handoff objects, got {type(item).__name__}")
        object.__setattr__(self, "default_handoff", handoff(self))
        schema = None if self.output_type in (None, str) else output_schema(self.output_type)
        object.__setattr__(self, "output_schema", None if schema is None or schema.is_plain_text() else schema)

    def clone(self, **kwargs: Any) -> "Agent[TContext]":
        """A shallow copy with some fields replaced (lists are shared unless you pass new ones)."""
        return dataclasses.replace(self, **kwargs)

    # --- What a turn needs, evaluated every turn -------------------------------------------

    def system_prompt(self, ctx: RunContextWrapper) -> Optional[str]:
        """The instructions for this turn: the text, or what the instructions callable returns (the run's call)."""
        return caller.call(self.instructions, ctx, self) if callable(self.instructions) else self.instructions

    def get_system_prompt(self, ctx: RunContextWrapper) -> caller.Ready:
        """`system_prompt`, as a `Ready`: upstream's is a coroutine."""
        return caller.Ready(self.system_prompt(ctx))

    def get_prompt(self, ctx: RunContextWrapper) -> Optional[dict]:
        """The stored prompt to send this turn: `prompt` as given, or what its function returns."""
        if callable(self.prompt):
            prompt = caller.call(self.prompt, GenerateDynamicPromptData(context=ctx, agent=self))
            if not (isinstance(prompt, dict) and isinstance(prompt.get("id"), str)):
                raise UserError(f"Agent {self.name!r}: the prompt function must return a Prompt dict with an 'id', "
                                f"got {type(prompt).__name__}")
            return prompt
        return self.prompt

    def get_enabled_handoffs(self, ctx: RunContextWrapper) -> list:
        handoffs = [h if isinstance(h, Handoff) else h.default_handoff for h in self.handoffs]
        return [h for h in handoffs if _enabled(h.is_enabled, ctx, self)]

    # --- Agents as tools ---------------------------------------------------------------------

    def as_tool(self, tool_name: Optional[str], tool_description: Optional[str],
                custom_output_extractor: Optional[Callable] = None, is_enabled: Any = True,
                on_stream: Optional[Callable] = None, run_config: Any = None, max_turns: Optional[int] = None,
                hooks: Any = None, previous_response_id: Optional[str] = None,
                conversation_id: Optional[str] = None, session: Any = None,
                failure_error_function: Optional[Callable] = default_tool_error_function,
                needs_approval: Any = False, parameters: Any = None, input_builder: Optional[Callable] = None,
                include_input_schema: bool = False, on_stream_max_pending_events: Optional[int] = 1024) -> FunctionTool:
        """Wrap this agent as a tool: the nested run sees only the tool's input, the caller keeps control.

        `on_stream` gets each event of the nested run before that run goes on, so no events ever wait for it:
        `on_stream_max_pending_events` (upstream's bound on such a backlog) is checked and has nothing to bound."""
        if on_stream_max_pending_events is not None and not (
                isinstance(on_stream_max_pending_events, int) and on_stream_max_pending_events > 0):
            raise UserError("on_stream_max_pending_events must be a positive integer or None")
        name = tool_name
        if name is None:
            name = tool_name_from(self.name)
            if re.search(r"[^a-zA-Z0-9_\s]", self.name):
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
        agent = self

        def run_agent(ctx: Any, raw_args: str) -> Any:
            from .config import RunConfig
            from .run import DEFAULT_MAX_TURNS, Options, drive, start_run  # the recursion behind agents-as-tools

            data = parse_arguments(raw_args, name)
            if parameters is not None:
                value = validate_value(parameters, data)
                text = caller.call(input_builder, value) if input_builder else output_text(value)
                if include_input_schema:
                    text = f"{text}\n\nInput schema: {json.dumps(schema)}"
            else:
                text = data.get("input")
                if not isinstance(text, str):
                    raise ArgumentsError(f"tool '{name}': parameter 'input' must be a string, got {text!r}")
            # The inner run shares usage and approval decisions with the caller's run; its context is a ToolContext
            # naming this call, so its result's `agent_tool_invocation` says which call made it.
            nested_ctx = ToolContext.from_agent_context(ctx, getattr(ctx, "tool_call_id", ""),
                                                        getattr(ctx, "tool_call", None), agent, tool_name=name,
                                                        tool_arguments=raw_args)
            nested_ctx.turn_input = []
            paused = getattr(ctx, "resume_state", None)
            if paused is not None:
                paused.context_wrapper.usage, paused.context_wrapper.approvals = ctx.usage, ctx.approvals
            config = RunConfig(**run_config) if isinstance(run_config, dict) else run_config
            parent = getattr(ctx, "run_config", None)
            provider, limits = getattr(parent, "model_provider", None), getattr(parent, "usage_limits", None)
            if config is None and (provider is not None or limits is not None):  # model names resolve as the caller's
                config = RunConfig(model_provider=provider, usage_limits=limits)
            elif limits is not None and config.usage_limits is None:  # the caller's limits count the inner run too
                config = dataclasses.replace(config, usage_limits=limits)
            options = Options(context=nested_ctx, max_turns=max_turns or DEFAULT_MAX_TURNS, run_config=config,
                              hooks=hooks, previous_response_id=previous_response_id,
                              conversation_id=conversation_id, session=session)
            try:  # with on_stream the inner run streams: each event reaches it with the agent and the call
                nested = start_run(agent, paused if paused is not None else text, options,
                                   streamed=on_stream is not None, ledger=getattr(ctx, "ledger", None))
                if paused is None:  # the inner run's approvals are its own, kept beside the caller's
                    nested.state.context_wrapper.approval_scope = nested.state.run_id
                on_event = None if on_stream is None else lambda event: caller.call(on_stream, AgentToolStreamEvent(
                    event=event, agent=nested.state.current_agent, tool_call=getattr(ctx, "tool_call", None)))
                result = drive(nested, on_event)
            except ModelBehaviorError as inner:  # the inner model's mistake, not this call's arguments
                raise ToolError(f"The agent '{agent.name}' could not finish: {inner.message}") from inner
            except UsageLimitExceeded as limit:  # the caller's limits, reached inside: the caller stops there too
                raise NestedInterruption(limit.state, [], limit) from None
            if getattr(result, "interruptions", None):
                raise NestedInterruption(result.to_state(), result.interruptions)
            if custom_output_extractor is not None:
                return caller.call(custom_output_extractor, result)
            return agent_tool_output(result)

        def on_invoke_tool(ctx: Any, raw_args: str) -> Any:
            """Upstream's shape, as a function tool's: something to await, a failure as the text the model sees."""
            try:
                return caller.Ready(run_agent(ctx, raw_args))
            except (NestedInterruption, caller.Cancelled, *EXITS):  # paused inside, stopped by a cancel, or an exit
                raise
            except BaseException as error:
                return caller.Ready(failure_text(tool, ctx, raw_args, error))

        tool = FunctionTool(name=name, description=tool_description or "", params_json_schema=schema,
                            on_invoke_tool=on_invoke_tool, is_enabled=is_enabled, needs_approval=needs_approval,
                            failure_error_function=failure_error_function, _agent=self)
        return tool


def agent_tool_output(result: Any) -> Any:
    """final_output unless None or ""; else the latest non-empty message text or string tool output. When output
    guardrails checked the final output, it is the answer even when empty: what they did not check never leaks."""
    if result.final_output not in (None, "") or getattr(result, "output_guardrail_results", None):
        return result.final_output
    from .items import MessageOutputItem, ToolCallOutputItem, message_text

    for item in reversed(getattr(result, "new_items", ())):
        if isinstance(item, MessageOutputItem) and message_text(item.raw_item):
            return message_text(item.raw_item)
        if isinstance(item, ToolCallOutputItem) and isinstance(item.output, str) and item.output:
            return item.output
    return ""


def _enabled(flag: Any, ctx: RunContextWrapper, agent: Agent) -> bool:
    return bool(caller.call(flag, ctx, agent)) if callable(flag) else bool(flag)
