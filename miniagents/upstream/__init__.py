"""Compatibility with upstream's programs (a shell): its import paths, and the explained error for what is left out.

Code written for the OpenAI Agents SDK imports from paths such as `agents.memory` or
`agents.extensions.handoff_prompt`. `UPSTREAM_PATHS` maps each such path (below `miniagents.`) to the
names it holds; the kernel's finder (`seams.ShellFinder`, last on `sys.meta_path`) asks `find_spec` here for
any `miniagents.<path>` that is no real module, and this shell builds those modules on demand. A name is looked
up in the `miniagents` package (or in the miniagents module its entry names) each time it is read, never copied,
so moving code between miniagents' own modules cannot leave a stale copy here. Where a path is also a real
miniagents module (`miniagents.run`, `miniagents.items`, ...), the real module wins.

`LEFT_OUT` lists the features miniagents does not provide (README: "What is left out"). Importing
one, or reading one of its names from the package, raises an error that says so instead of a bare
"cannot import name". Beside it: upstream's handoff filters and prompt (`handoff_helpers`), `run_demo_loop`
(`repl`) and `enable_verbose_stdout_logging` (`logger`).
"""
from __future__ import annotations

import importlib
import sys
import types
from importlib.machinery import ModuleSpec

# Upstream path -> the names it holds that miniagents provides. `name` is read from the package;
# `name=other` reads `other` from the package; `name=module:attr` reads `attr` from `miniagents.module`.
UPSTREAM_PATHS = {
    "decorators": "function_tool tool=function_tool input_guardrail output_guardrail tool_input_guardrail "
                  "tool_output_guardrail",
    "memory": "Session SessionABC SQLiteSession SessionSettings SessionInputCallback=config:SessionInputCallback",
    "memory.session": "Session SessionABC",
    "memory.session_settings": "SessionSettings",
    "memory.sqlite_session": "SQLiteSession",
    "exceptions": "AgentsException InputGuardrailTripwireTriggered MaxTurnsExceeded ModelBehaviorError "
                  "ModelRefusalError ModelTimeoutError OutputGuardrailTripwireTriggered RunErrorDetails "
                  "ToolInputGuardrailTripwireTriggered ToolOutputGuardrailTripwireTriggered ToolTimeoutError UserError",
    "run_context": "RunContextWrapper TContext AgentHookContext",
    "model_settings": "ModelSettings ToolChoice=config:ToolChoice MCPToolChoice=models.interface:MCPToolChoice",
    "usage": "Usage",
    "run_state": "RunState",
    "lifecycle": "RunHooks AgentHooks RunHooksBase=RunHooks AgentHooksBase=AgentHooks AgentHookContext",
    "guardrail": "GuardrailFunctionOutput InputGuardrail InputGuardrailResult OutputGuardrail OutputGuardrailResult "
                 "input_guardrail output_guardrail",
    "tool_guardrails": "ToolGuardrailFunctionOutput ToolInputGuardrail ToolInputGuardrailData ToolInputGuardrailResult "
                       "ToolOutputGuardrail ToolOutputGuardrailData ToolOutputGuardrailResult tool_input_guardrail "
                       "tool_output_guardrail",
    "tool_context": "ToolContext",
    "stream_events": "AgentUpdatedStreamEvent RawResponsesStreamEvent RunItemStreamEvent StreamEvent "
                     "TResponseStreamEvent",
    "run_config": "RunConfig ToolExecutionConfig CallModelData ModelInputData ToolErrorFormatterArgs DEFAULT_MAX_TURNS "
                  "CallModelInputFilter=config:CallModelInputFilter ToolErrorFormatter ToolNotFoundBehavior "
                  "ToolNameCollisionPolicy ReasoningItemIdPolicy OutputGuardrailBlockedMessageArgs "
                  "OutputGuardrailBlockedMessageFormatter",
    "run_error_handlers": "RunErrorData RunErrorHandler RunErrorHandlerInput RunErrorHandlerResult RunErrorHandlers",
    "function_schema": "function_schema=schema:function_schema FuncSchema=schema:FuncSchema "
                       "generate_func_documentation=upstream.function_docs:generate_func_documentation "
                       "FuncDocumentation=upstream.function_docs:FuncDocumentation",
    "strict_schema": "ensure_strict_json_schema=schema:ensure_strict_json_schema",
    "models.openai_chatcompletions": "OpenAIChatCompletionsModel",
    "models.openai_responses": "OpenAIResponsesModel",
    "models.openai_provider": "OpenAIProvider",
    "models.multi_provider": "MultiProvider=models.provider:MultiProvider "
                             "MultiProviderMap=models.provider:MultiProviderMap",
    "extensions": "",
    "extensions.handoff_filters": "remove_all_tools=upstream.handoff_helpers:remove_all_tools",
    "extensions.handoff_prompt": "RECOMMENDED_PROMPT_PREFIX=upstream.handoff_helpers:RECOMMENDED_PROMPT_PREFIX "
                                 "prompt_with_handoff_instructions=upstream.handoff_helpers:prompt_with_handoff_instructions",
    "version": "__version__",
    "prompts": "Prompt DynamicPromptFunction GenerateDynamicPromptData",
}

_TRACING_NAMES = (  # what tracing.py provides is not here: only exporters and spans of left-out features
    "set_trace_provider mcp_tools_span response_span speech_group_span speech_span transcription_span "
    "MCPListToolsSpanData ResponseSpanData SpeechGroupSpanData SpeechSpanData TranscriptionSpanData")
_SHELL_NAMES = (
    "ShellTool ShellActionRequest ShellCallData ShellCallOutcome ShellCommandOutput ShellCommandRequest ShellExecutor "
    "ShellResult ShellToolContainerAutoEnvironment ShellToolContainerNetworkPolicy "
    "ShellToolContainerNetworkPolicyAllowlist ShellToolContainerNetworkPolicyDisabled "
    "ShellToolContainerNetworkPolicyDomainSecret ShellToolContainerReferenceEnvironment ShellToolContainerSkill "
    "ShellToolEnvironment ShellToolHostedEnvironment ShellToolInlineSkill ShellToolInlineSkillSource "
    "ShellToolLocalEnvironment ShellToolLocalSkill ShellToolSkillReference LocalShellCommandRequest "
    "LocalShellExecutor LocalShellTool")

# Feature -> (upstream names, upstream module paths) that miniagents leaves out.
LEFT_OUT = {
    "computer use": ("ComputerTool Computer AsyncComputer Button Environment ComputerProvider "
                     "ComputerToolCustomDataContext ComputerToolCustomDataExtractor resolve_computer "
                     "dispose_resolved_computers", "computer"),
    "shell and local shell tools": (_SHELL_NAMES, ""),
    "apply-patch": ("ApplyPatchTool ApplyPatchEditor ApplyPatchOperation ApplyPatchResult "
                    "ApplyPatchToolCustomDataContext ApplyPatchToolCustomDataExtractor apply_diff", "editor"),
    "MCP servers": ("MCPApprovalRequestItem MCPApprovalResponseItem MCPListToolsItem MCPToolApprovalFunction "
                    "MCPToolApprovalFunctionResult MCPToolApprovalRequest MCPToolCancellationError", "mcp"),
    "realtime agents": ("", "realtime"),
    "voice pipelines": ("", "voice"),
    "sandbox agents": ("", "sandbox extensions.sandbox"),
    "tracing exporters and the spans of left-out features": (_TRACING_NAMES, ""),
    "tool search and programmatic tool calling": (
        "ToolSearchTool ToolSearchCallItem ToolSearchOutputItem tool_namespace ProgrammaticToolCallingTool ToolCaller",
        ""),
    "custom (free-form text) tools": ("CustomTool CustomToolCustomDataContext CustomToolCustomDataExtractor", ""),
    "tool origin metadata": ("ToolOrigin ToolOriginType", ""),
    "nested handoff history": ("nest_handoff_history default_handoff_history_mapper get_conversation_history_wrappers "
                               "set_conversation_history_wrappers reset_conversation_history_wrappers", ""),
    "OpenAI server-side sessions, compaction and transports": (
        "OpenAIConversationsSession OpenAIResponsesCompactionArgs OpenAIResponsesCompactionAwareSession "
        "OpenAIResponsesCompactionSession is_openai_responses_compaction_aware_session CompactionItem "
        "OpenAIResponsesWSModel OpenAIResponsesWebSocketOptions ResponsesWebSocketSession responses_websocket_session "
        "set_default_openai_responses_transport OpenAIAgentRegistrationConfig set_default_openai_agent_registration "
        "set_default_openai_harness", ""),
}
_FEATURE_OF_NAME = {name: feature for feature, (names, _) in LEFT_OUT.items() for name in names.split()}
_FEATURE_OF_PATH = {path: feature for feature, (_, paths) in LEFT_OUT.items() for path in paths.split()}


class NotProvided(Exception):
    """Base of the two errors below, for code that wants to catch either."""


class NotProvidedImportError(NotProvided, ImportError):
    """`import miniagents.realtime` / `from miniagents import ComputerTool`: a feature miniagents leaves out."""


class NotProvidedAttributeError(NotProvided, AttributeError):
    """`miniagents.ComputerTool`: the same, as an AttributeError so that `hasattr()` answers False."""


def _explain(dotted: str, feature: str) -> str:
    name = dotted.rpartition(".")[2]
    what = name if name in _FEATURE_OF_NAME else "miniagents." + dotted
    return (f"{what} is part of {feature}, which miniagents does not provide: the README section "
            "'What is left out' lists what is left out and why")


def _left_out(dotted: str):
    """The feature a dotted name below `miniagents` belongs to, or None."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        feature = _FEATURE_OF_PATH.get(".".join(parts[:end]))
        if feature:
            return feature
    return _FEATURE_OF_NAME.get(parts[-1])


def _entries(path: str) -> dict:
    """{name: target} for one upstream path."""
    entries = {}
    for entry in UPSTREAM_PATHS[path].split():
        name, _, target = entry.partition("=")
        entries[name] = target or name
    return entries


def _read(target: str):
    module, _, attr = target.rpartition(":")
    source = importlib.import_module("miniagents." + module) if module else sys.modules["miniagents"]
    return getattr(source, attr)


class UpstreamPathModule(types.ModuleType):
    """A module at an upstream path: each name is read from miniagents when it is accessed."""

    def __getattr__(self, name: str):
        path = self.__name__[len("miniagents."):]
        target = _entries(path).get(name)
        if target is not None:
            return _read(target)
        feature = _left_out(f"{path}.{name}") if not name.startswith("__") else None
        if feature:
            raise NotProvidedAttributeError(_explain(f"{path}.{name}", feature))
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.__all__))


class _UpstreamPathFinder:
    """Finds `miniagents.<upstream path>` when no real module is there (it is the last finder)."""

    @staticmethod
    def find_spec(fullname: str, path=None, target=None):
        if not fullname.startswith("miniagents."):
            return None
        upstream = fullname[len("miniagents."):]
        feature = _left_out(upstream)
        if feature:
            raise NotProvidedImportError(_explain(upstream, feature), name=fullname)
        if upstream not in UPSTREAM_PATHS:
            return None
        return ModuleSpec(fullname, _UpstreamPathFinder, is_package=True)

    @staticmethod
    def create_module(spec):
        return UpstreamPathModule(spec.name)

    @staticmethod
    def exec_module(module):
        path = module.__name__[len("miniagents."):]
        module.__doc__ = f"Upstream's `agents.{path}`: names read from miniagents when accessed (miniagents.upstream)."
        module.__all__ = sorted(_entries(path))


find_spec = _UpstreamPathFinder.find_spec  # what the kernel's finder asks of this shell


def top_level(name: str):
    """What `miniagents.<name>` is when the package itself does not have it (its module `__getattr__` asks)."""
    if name in UPSTREAM_PATHS:
        return importlib.import_module("miniagents." + name)
    feature = _left_out(name)
    if feature:
        raise NotProvidedAttributeError(_explain(name, feature))
    raise AttributeError(f"module 'miniagents' has no attribute {name!r}")
