"""Upstream's shapes of the kernel's classes, where its programs use more than the kernel offers.

- `Agent` takes assignment (`agent.output_type = ...`: upstream's agents are mutable; the kernel's are frozen, so
  one agent serves concurrent runs safely): each new value is checked as the constructor checks it. It has
  upstream's `prompt` (a stored prompt: stored_prompts.py) and upstream's coroutines `get_all_tools`,
  `get_system_prompt` and `get_prompt`. `AgentBase` is `Agent`.
- `RunState.from_json` / `from_string` are coroutines, as upstream's; the state they give is the kernel's, the
  items a model gave in it readable by attribute (raw_items.py).
- `ToolContext.from_agent_context` makes a tool's context from a run's, as upstream's does.
- `ItemHelpers`, and upstream's names for the types the kernel keeps as plain dicts and callables.
- `Usage` keeps each request's own usage too (`request_usage_entries`); a run of an upstream program counts in one.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, Literal, Optional

from ..agent import Agent as KernelAgent
from ..context import (InputTokensDetails, OutputTokensDetails, RunContextWrapper, TContext,
                       ToolContext as KernelToolContext, Usage as KernelUsage)
from ..agent_output import AgentOutputSchemaBase
from ..errors import UserError
from ..handoffs import Handoff
from ..items import MessageOutputItem, function_call_output, message_refusal, to_input_list
from ..result import RunResult, StreamEvent  # noqa: F401 - upstream's agents.stream_events names it
from ..state import RunState as KernelRunState
from ..tool import tool_output
from ..turn import enabled
from . import refuse_left_out_keywords
from .hooks import AgentHooks, hook_plugins
from .raw_items import readable_state
from .stored_prompts import check_prompt, prompt_for

TResponseInputItem = Dict[str, Any]  # in miniagents each is a JSON-ready dict
TResponseOutputItem = Dict[str, Any]
TResponseStreamEvent = Dict[str, Any]
DynamicPromptFunction = Callable[..., Any]
ToolsToFinalOutputFunction = Callable[..., Any]
ToolErrorFunction = Callable[..., Any]
HandoffInputFilter = Callable[..., Any]
RunErrorHandler = Callable[..., Any]
RunErrorHandlers = Dict[str, RunErrorHandler]  # "max_turns" | "model_refusal" | "invalid_final_output" | ...
ToolErrorFormatter = Callable[..., Any]
OutputGuardrailBlockedMessageFormatter = Callable[..., Any]
ReasoningItemIdPolicy = Literal["preserve", "omit"]
ToolNameCollisionPolicy = Literal["warn", "error"]
ToolNotFoundBehavior = Literal["raise_error", "return_error_to_model"]
AgentHookContext = RunContextWrapper  # the context agent hooks receive
RunResultBase = RunResult


class RefusedOutputType(AgentOutputSchemaBase):
    """An output type the kernel refused when the agent was made: upstream reports it when a run sends it."""

    def __init__(self, error: UserError):
        self.error = error

    def is_plain_text(self) -> bool:
        return False

    def refuse(self, *args: Any) -> Any:
        raise self.error

    name = json_schema = is_strict_json_schema = validate_json = spec = refuse


@dataclasses.dataclass(frozen=True)
class PromptedAgent(KernelAgent[TContext]):
    """The kernel's `Agent` with upstream's `prompt`: a stored prompt (`Prompt`, or a function of
    `GenerateDynamicPromptData` called each turn) sent to a Responses API model (stored_prompts.py); and upstream's
    `hooks`: the agent's `AgentHooks`, called by the runs of the shell's `Runner` (hooks.py)."""

    prompt: Any = None
    hooks: Any = None

    def _check_callables(self) -> None:
        super()._check_callables()
        check_prompt(self.prompt)
        if self.hooks is not None and not isinstance(self.hooks, AgentHooks):
            raise TypeError(f"Agent hooks must be an AgentHooks instance or None, got {type(self.hooks).__name__}")

    def as_tool(self, tool_name: Optional[str], tool_description: Optional[str], *args: Any, hooks: Any = None,
                **options: Any) -> Any:
        """The kernel's `as_tool` with upstream's `hooks=` (the nested run's `RunHooks`): the nested run's hooks
        and its agents' own are a plugin of that run (the kernel's `plugins=`). Upstream's options of a left-out
        feature (`conversation_id`) are refused, named."""
        refuse_left_out_keywords("Agent.as_tool", options)
        if len(args) > 5:  # upstream's positional order: ..., max_turns, hooks, (previous_response_id, ...)
            raise UserError("as_tool takes hooks and the arguments after max_turns by keyword")
        return super().as_tool(tool_name, tool_description, *args, plugins=hook_plugins(hooks, self), **options)

    def prompt_for(self, ctx: RunContextWrapper) -> Optional[dict]:
        """The stored prompt to send this turn: `prompt` as given, or what its function returns."""
        return prompt_for(self, ctx)


class Agent(PromptedAgent[TContext]):
    """The kernel's `Agent`, taking assignment and answering upstream's coroutines (see the module), with a stored
    `prompt`. An output type strict mode cannot express is refused when a run uses it (the kernel refuses it when
    the agent is made)."""

    def __init_subclass__(cls, **options: Any) -> None:
        """A subclass overriding a coroutine upstream's run calls on its agent (as upstream's own `SandboxAgent`
        overrides `get_all_tools`) is refused: a miniagents run reads the agent's fields, so the override was never
        called, and the model silently got the fields' instructions, tools or prompt."""
        super().__init_subclass__(**options)
        for name in ("get_system_prompt", "get_all_tools", "get_prompt"):
            if getattr(cls, name) is not getattr(Agent, name):
                raise UserError(f"{cls.__name__} overrides Agent.{name}, which a miniagents run never calls: give "
                                "the agent instructions (a function of the context and agent), tools (with is_enabled) "
                                "or a prompt (a function) instead (docs/porting.md)")

    def _derive(self) -> None:
        try:
            super()._derive()
        except UserError as error:
            object.__setattr__(self, "output_schema", RefusedOutputType(error))

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in {f.name for f in dataclasses.fields(self) if f.init}:
            raise AttributeError(f"Agent has no field {name!r} to assign")
        checked = dataclasses.replace(self, **{name: value})  # the constructor's checks on the new value
        object.__setattr__(self, name, getattr(checked, name))
        self._derive()

    async def get_all_tools(self, run_context: RunContextWrapper) -> list:
        """The tools enabled for this run context: function tools whose `is_enabled` says so, and hosted tools."""
        return [tool for tool in self.tools if enabled(tool, run_context, self)]

    async def get_system_prompt(self, run_context: RunContextWrapper) -> Optional[str]:
        return self.system_prompt(run_context)

    async def get_prompt(self, run_context: RunContextWrapper) -> Optional[dict]:
        return self.prompt_for(run_context)

    def get_enabled_handoffs(self, run_context: RunContextWrapper) -> list:
        handoffs = [h if isinstance(h, Handoff) else h.default_handoff for h in self.handoffs]
        return [h for h in handoffs if enabled(h, run_context, self)]


AgentBase = Agent


class RunState(KernelRunState[TContext]):
    """Upstream's `RunState`: its loaders are coroutines (the state they give is the kernel's, the items a model
    gave readable by attribute as in a run of the shell)."""

    @staticmethod
    async def from_json(initial_agent: Any, data: Any, **options: Any) -> KernelRunState:
        return readable_state(KernelRunState.from_json(initial_agent, data, **options))

    @staticmethod
    async def from_string(initial_agent: Any, text: str, **options: Any) -> KernelRunState:
        return readable_state(KernelRunState.from_string(initial_agent, text, **options))


class ToolContext(KernelToolContext[TContext]):
    """Upstream's `ToolContext`, with `from_agent_context`."""

    @classmethod
    def from_agent_context(cls, context: RunContextWrapper, tool_call_id: str, tool_call: Any = None,
                           agent: Any = None, *, tool_name: Optional[str] = None, tool_arguments: Optional[str] = None,
                           run_config: Any = None, **_upstream_only: Any) -> KernelToolContext:
        """A tool's context made from the run's: the same context object, usage and approval decisions, the call's
        name and arguments (from `tool_call` unless given), and the agent and run config of `context` when it is a
        ToolContext itself and none are given."""
        if tool_call is None and (tool_name is None or tool_arguments is None):
            raise ValueError("tool_name and tool_arguments must be passed to ToolContext without a tool_call")
        read = (lambda key: tool_call.get(key)) if isinstance(tool_call, dict) else \
            (lambda key: getattr(tool_call, key, None))
        item = {"name": tool_name if tool_name is not None else read("name"), "call_id": tool_call_id,
                "arguments": tool_arguments if tool_arguments is not None else read("arguments")}
        agent = agent if agent is not None else getattr(context, "agent", None)
        run_config = run_config if run_config is not None else getattr(context, "run_config", None)
        made = context.for_call(item, agent, run_config)
        made.tool_call = tool_call if tool_call is not None else item
        return made


class ItemHelpers:
    """Upstream's helpers for reading items. As upstream's, they read a message and answer "" or None for anything
    else (an item that is no message, a part that is no object), and a text part's text that is no string (None,
    as a gateway's message may hold) as "": never a bare error from a hand-made or malformed item."""

    @classmethod
    def extract_last_content(cls, message: dict) -> str:
        if isinstance(_content(message), str):
            return _content(message)
        last = (_parts(message) or [{}])[-1]
        return _text(last) if last.get("type") == "output_text" else \
            last.get("refusal", "") if last.get("type") == "refusal" else ""

    @classmethod
    def extract_last_text(cls, message: dict) -> Optional[str]:
        parts = _parts(message)
        if parts and parts[-1].get("type") == "output_text":
            return parts[-1].get("text", "")
        return None

    @classmethod
    def extract_refusal(cls, message: dict) -> Optional[str]:
        return message_refusal({"content": _parts(message)})

    @classmethod
    def extract_text(cls, message: dict) -> Optional[str]:
        texts = [_text(p) for p in _parts(message) if p.get("type") == "output_text"]
        return "".join(texts) if texts else None

    @classmethod
    def input_to_new_input_list(cls, input: Any) -> list:
        if not isinstance(input, str) and not (isinstance(input, list) and all(isinstance(i, dict) for i in input)):
            raise UserError("ItemHelpers.input_to_new_input_list takes a string or a list of input items (dicts), "
                            f"got {type(input).__name__}")
        return to_input_list(input)

    @classmethod
    def text_message_outputs(cls, items: list) -> str:
        return "".join(cls.text_message_output(i) for i in items if isinstance(i, MessageOutputItem))

    @classmethod
    def text_message_output(cls, item: MessageOutputItem) -> str:
        content = _content(item.raw_item)
        return content if isinstance(content, str) else cls.extract_text(item.raw_item) or ""

    @classmethod
    def tool_call_output_item(cls, tool_call: dict, output: Any) -> dict:
        """The output item a run accepts as input: `output` as the model reads a tool's value (`tool.tool_output`:
        text as it is, data as JSON, `ToolOutput*` objects and content-part dicts as content parts); upstream's
        `str()` made data a Python repr, and a value kept as it came was refused as input."""
        if not isinstance(tool_call, dict) or not isinstance(tool_call.get("call_id"), str):
            raise UserError("ItemHelpers.tool_call_output_item takes the function_call item it answers (with its "
                            f"call_id), got {type(tool_call).__name__}")
        return function_call_output(tool_call["call_id"], tool_output(output, tool_call.get("name", "")))


def _content(message: Any) -> Any:
    return message.get("content") if isinstance(message, dict) else None


def _parts(message: Any) -> list:
    """A message's content parts that are objects (dicts); none for anything else."""
    content = _content(message)
    return [part for part in content if isinstance(part, dict)] if isinstance(content, list) else []


def _text(part: dict) -> str:
    """A text part's text; "" for one that is no string (None from a gateway, as upstream reads it)."""
    return part["text"] if isinstance(part.get("text"), str) else ""


class MultiProviderMap:
    """Model-name prefixes (`"local"` in `"local/llama3"`) → the `ModelProvider` that resolves them."""

    def __init__(self):
        self._mapping: dict = {}

    def has_prefix(self, prefix: str) -> bool:
        return prefix in self._mapping

    def get_mapping(self) -> dict:
        return dict(self._mapping)

    def set_mapping(self, mapping: dict) -> None:
        self._mapping = dict(mapping)

    def get_provider(self, prefix: str) -> Any:
        return self._mapping.get(prefix)

    def add_provider(self, prefix: str, provider: Any) -> None:
        self._mapping[prefix] = provider

    def remove_provider(self, prefix: str) -> None:
        del self._mapping[prefix]


@dataclasses.dataclass
class RequestUsage:
    """One request's usage, as `Usage.request_usage_entries` keeps it (upstream's class and fields)."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    input_tokens_details: InputTokensDetails = dataclasses.field(default_factory=InputTokensDetails)
    output_tokens_details: OutputTokensDetails = dataclasses.field(default_factory=OutputTokensDetails)


@dataclasses.dataclass
class Usage(KernelUsage):
    """The kernel's counts, and each request's own usage: a model call's is one entry (a copy), a usage summed
    from several requests (a nested run's) passes its entries on."""

    request_usage_entries: list = dataclasses.field(default_factory=list)

    def add(self, other: KernelUsage, requests: Optional[int] = None) -> None:
        super().add(other, requests)
        entries = getattr(other, "request_usage_entries", None)
        if requests is not None or other.requests == 1 and not entries:
            entries = [RequestUsage(other.input_tokens, other.output_tokens, other.total_tokens,
                                    InputTokensDetails(other.input_tokens_details.cached_tokens),
                                    OutputTokensDetails(other.output_tokens_details.reasoning_tokens))]
        self.request_usage_entries += entries or []

    @classmethod
    def of(cls, usage: KernelUsage) -> "Usage":
        """`usage` itself when it keeps entries, else the same counts in one that does (from now on)."""
        if isinstance(usage, cls):
            return usage
        return cls(**{f.name: getattr(usage, f.name) for f in dataclasses.fields(KernelUsage)})
