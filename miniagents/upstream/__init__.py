"""Upstream's programs on miniagents (a shell): upstream's names, module paths and rules, on top of the kernel.

Code written for the OpenAI Agents SDK imports this package as `agents` (`import miniagents.upstream as agents`,
or unchanged under `python -m miniagents.upstream app.py`, which makes `agents` this package). Importing it turns
upstream's rules on for every run of the process (`UpstreamPlugin`, on the kernel's seams); `import miniagents`
alone never loads it.

- A name (`agents.Runner`, `agents.ItemHelpers`): this shell's own when upstream's differs from the kernel's
  (`NAMES`: a runner whose default can be replaced, agents that take assignment, upstream's hosted tools and
  structured tool outputs, ...), else the kernel's, else the explained error for a feature miniagents leaves out.
- A module path (`agents.memory`, `agents.extensions.handoff_filters`, `agents.run`): a module of this package
  made on demand (`UpstreamPath`), whose names are those `PATHS` lists for it, then the kernel module of the same
  path if there is one (`miniagents.run`), then the explained error (`LEFT_OUT`).
- A keyword argument of a left-out feature (`RunConfig(nest_handoff_history=False)`): the explained error as a
  TypeError, `NotProvidedTypeError` (`LEFT_OUT_KEYWORDS`), raised by the shell's callable that takes it upstream.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from importlib.machinery import ModuleSpec

from .. import seams
from ..errors import MissingFeatureError

KERNEL = __name__.rpartition(".")[0]  # the kernel package: miniagents, or the name of a vendored copy

# This shell's names where upstream's differ from the kernel's: name -> "module:attr" (a module of this shell).
NAMES = {
    **dict.fromkeys(("Runner", "AgentRunner", "RunConfig", "ToolExecutionConfig", "set_default_agent_runner",
                     "get_default_agent_runner", "UpstreamPlugin"), "runner"),
    **dict.fromkeys(("Agent", "AgentBase", "RunState", "ToolContext", "ItemHelpers", "AgentHookContext",
                     "TResponseInputItem", "TResponseOutputItem", "TResponseStreamEvent", "RunResultBase",
                     "DynamicPromptFunction", "ToolsToFinalOutputFunction", "ToolErrorFunction", "StreamEvent"),
                    "classes"),
    **dict.fromkeys(("MultiProviderMap", "Usage", "RequestUsage"), "classes"),
    **dict.fromkeys(("RunErrorData", "RunErrorHandlerInput", "RunErrorHandlerResult"), "error_handlers"),
    **dict.fromkeys(("CallModelData", "ModelInputData", "ToolErrorFormatterArgs", "OutputGuardrailBlockedMessageArgs"),
                    "run_callbacks"),
    **dict.fromkeys(("RunHooks", "AgentHooks", "HookPlugin"), "hooks"),
    "set_default_openai_client": "default_models",
    **dict.fromkeys(("OpenAIProvider", "MultiProvider", "set_default_openai_key", "set_default_openai_api",
                     "OpenAIChatCompletionsModel", "OpenAIResponsesModel"), "providers"),
    **dict.fromkeys(("Prompt", "GenerateDynamicPromptData", "PromptPlugin"), "stored_prompts"),
    **dict.fromkeys(("function_tool", "tool", "invoke_function_tool", "ToolOutputText", "ToolOutputImage",
                     "ToolOutputFileContent", "ToolOutputTextDict", "ToolOutputImageDict",
                     "ToolOutputFileContentDict"), "tool_outputs"),
    **dict.fromkeys(("Tool", "WebSearchTool", "WebSearchToolImageSettings", "FileSearchTool", "CodeInterpreterTool",
                     "ImageGenerationTool", "ImageGenerationToolConfig", "HostedMCPTool", "HostedTool"),
                    "hosted_tools"),
    "enable_verbose_stdout_logging": "logger", "run_demo_loop": "repl",
    **dict.fromkeys(("HandoffInputFilter", "RunErrorHandler", "RunErrorHandlers", "ReasoningItemIdPolicy",
                     "ToolNameCollisionPolicy", "ToolNotFoundBehavior", "ToolErrorFormatter",
                     "OutputGuardrailBlockedMessageFormatter"), "classes"),
    "AgentToolInvocation": ".result", "MCPToolChoice": "hosted_tools",
    **dict.fromkeys(("FunctionToolCustomDataContext", "FunctionToolCustomDataExtractor", "CustomDataPlugin"),
                    "custom_data"),
    **dict.fromkeys(("turn_span", "task_span", "set_tracing_export_api_key", "SpanData", "AgentSpanData",
                     "CustomSpanData", "FunctionSpanData", "GenerationSpanData", "GuardrailSpanData", "HandoffSpanData",
                     "TaskSpanData", "TurnSpanData"), ".tracing"),
}

# Upstream module path -> the names it holds (each read as `agents.<name>`, or `name=other` for another name).
PATHS = {
    "decorators": "function_tool tool input_guardrail output_guardrail tool_input_guardrail tool_output_guardrail",
    "memory": "Session SessionABC SQLiteSession SessionSettings", "memory.session": "Session SessionABC",
    "memory.session_settings": "SessionSettings", "memory.sqlite_session": "SQLiteSession",
    "exceptions": "AgentsException InputGuardrailTripwireTriggered MaxTurnsExceeded ModelBehaviorError "
                  "ModelRefusalError ModelTimeoutError OutputGuardrailTripwireTriggered RunErrorDetails "
                  "ToolInputGuardrailTripwireTriggered ToolOutputGuardrailTripwireTriggered ToolTimeoutError UserError",
    "run_context": "RunContextWrapper TContext AgentHookContext", "usage": "Usage RequestUsage",
    "run_state": "RunState",
    "model_settings": "ModelSettings MCPToolChoice", "tool_context": "ToolContext",
    "lifecycle": "RunHooks AgentHooks RunHooksBase=RunHooks AgentHooksBase=AgentHooks AgentHookContext",
    "guardrail": "GuardrailFunctionOutput InputGuardrail InputGuardrailResult OutputGuardrail OutputGuardrailResult "
                 "input_guardrail output_guardrail",
    "tool_guardrails": "ToolGuardrailFunctionOutput ToolInputGuardrail ToolInputGuardrailData ToolInputGuardrailResult "
                       "ToolOutputGuardrail ToolOutputGuardrailData ToolOutputGuardrailResult tool_input_guardrail "
                       "tool_output_guardrail",
    "stream_events": "AgentUpdatedStreamEvent RawResponsesStreamEvent RunItemStreamEvent TResponseStreamEvent "
                     "StreamEvent",
    "run": "Runner AgentRunner RunConfig RunState DEFAULT_MAX_TURNS set_default_agent_runner get_default_agent_runner "
           "CallModelData ModelInputData ToolErrorFormatterArgs ToolExecutionConfig ReasoningItemIdPolicy "
           "ToolErrorFormatter ToolNameCollisionPolicy ToolNotFoundBehavior",
    "run_config": "RunConfig ToolExecutionConfig CallModelData ModelInputData ToolErrorFormatterArgs DEFAULT_MAX_TURNS "
                  "OutputGuardrailBlockedMessageArgs",
    "run_error_handlers": "RunErrorData RunErrorHandlerInput RunErrorHandlerResult",
    "items": "ItemHelpers TResponseInputItem TResponseOutputItem TResponseStreamEvent ModelResponse",
    "tool": "FunctionTool function_tool Tool WebSearchTool FileSearchTool CodeInterpreterTool ImageGenerationTool "
            "HostedMCPTool ToolOutputText ToolOutputImage ToolOutputFileContent invoke_function_tool ToolErrorFunction",
    "agent": "Agent AgentBase ToolsToFinalOutputFunction ToolsToFinalOutputResult", "result": "RunResultBase",
    "function_schema": "function_schema=function_docs:function_schema generate_func_documentation=function_docs:"
                       "generate_func_documentation FuncDocumentation=function_docs:FuncDocumentation",
    "strict_schema": "ensure_strict_json_schema=function_docs:ensure_strict_json_schema",
    "models.openai_chatcompletions": "OpenAIChatCompletionsModel", "models.openai_responses": "OpenAIResponsesModel",
    "models.openai_provider": "OpenAIProvider", "models.multi_provider": "MultiProvider MultiProviderMap",
    "models": "get_default_model=default_models:get_default_model get_default_model_settings=default_models:"
              "get_default_model_settings gpt_5_reasoning_settings_required=default_models:"
              "gpt_5_reasoning_settings_required is_gpt_5_default=default_models:is_gpt_5_default",
    "extensions": "",
    "extensions.handoff_filters": "remove_all_tools=handoff_helpers:remove_all_tools",
    "extensions.handoff_prompt": "RECOMMENDED_PROMPT_PREFIX=handoff_helpers:RECOMMENDED_PROMPT_PREFIX "
                                 "prompt_with_handoff_instructions=handoff_helpers:prompt_with_handoff_instructions",
    "version": "__version__", "prompts": "Prompt DynamicPromptFunction GenerateDynamicPromptData",
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
    "hosted MCP approvals": ("MCPApprovalRequestItem MCPApprovalResponseItem MCPListToolsItem "
                             "MCPToolApprovalFunction MCPToolApprovalFunctionResult MCPToolApprovalRequest "
                             "MCPToolCancellationError", ""),
    "MCP over HTTP": ("MCPServerStreamableHttp MCPServerSse", ""),
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
    "server-managed conversations for agent tools": ("", ""),  # only keywords: LEFT_OUT_KEYWORDS
}
# The shell's callable -> {an upstream keyword it does not take: the left-out feature (of LEFT_OUT) it belongs to}.
LEFT_OUT_KEYWORDS = {
    "RunConfig": {"nest_handoff_history": "nested handoff history", "handoff_history_mapper": "nested handoff history",
                  "sandbox": "sandbox agents"},
    "function_tool": dict.fromkeys(("allowed_callers", "output_type", "output_json_schema"),
                                   "tool search and programmatic tool calling"),
    "Agent.as_tool": dict.fromkeys(("previous_response_id", "conversation_id"),
                                   "server-managed conversations for agent tools"),
}
_FEATURE_OF_NAME = {name: feature for feature, (names, _) in LEFT_OUT.items() for name in names.split()}
_FEATURE_OF_PATH = {path: feature for feature, (_, paths) in LEFT_OUT.items() for path in paths.split()}


class NotProvided(Exception):
    """Base of the three errors below, for code that wants to catch any."""


class NotProvidedImportError(NotProvided, ImportError):
    """`import agents.realtime` / `from agents import ComputerTool`: a feature miniagents leaves out."""


class NotProvidedAttributeError(NotProvided, AttributeError):
    """`agents.ComputerTool`: the same, as an AttributeError so that `hasattr()` answers False."""


class NotProvidedTypeError(NotProvided, TypeError):
    """`RunConfig(nest_handoff_history=False)`: an upstream keyword of a left-out feature, as a TypeError (what an
    unknown keyword is) so that code catching that still does."""


def refuse_left_out_keywords(callable_name: str, keywords: dict) -> None:
    """The explained error for a keyword upstream's `callable_name` takes for a feature miniagents leaves out
    (`LEFT_OUT_KEYWORDS`), called before the shell's callable reads its arguments; any other keyword is left to the
    callable, so one upstream never had stays Python's own TypeError."""
    left_out = LEFT_OUT_KEYWORDS[callable_name]
    for keyword in keywords:
        if keyword in left_out:
            raise NotProvidedTypeError(_explain(f"{callable_name}({keyword}=...)", left_out[keyword]))


def _left_out(dotted: str):
    """The left-out feature a dotted name below this package belongs to, or None."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in _FEATURE_OF_PATH:
            return _FEATURE_OF_PATH[".".join(parts[:end])]
    return _FEATURE_OF_NAME.get(parts[-1])


def _explain(dotted: str, feature: str) -> str:
    return (f"{dotted} is part of {feature}, which miniagents does not provide (docs/porting.md, 'What is left "
            "out', lists what is left out and why)")


def _read(target: str):
    """A name of this shell (`module:attr`, a module of this package), of the kernel (`.module:attr`) or, without
    a module, of `agents`."""
    module, _, attr = target.rpartition(":")
    if not module:
        return _name(attr)
    return getattr(importlib.import_module(module if module.startswith(".") else f".{module}",
                                           KERNEL if module.startswith(".") else __name__), attr)


def _name(name: str):
    """`agents.<name>`: this shell's, the kernel's, or the explained error: an AttributeError (`hasattr` answers
    False), whose cause is the kernel's `MissingFeatureError` for a name this copy or this Python lacks (`from agents
    import trace` raises that error itself: `UpstreamPathFinder`)."""
    if name in NAMES:
        try:
            return _read(f"{NAMES[name]}:{name}")
        except MissingFeatureError as missing:
            raise AttributeError(str(missing)) from missing
    kernel = sys.modules[KERNEL]
    if name in dir(kernel) or name in getattr(kernel, "_LAZY", ()):
        return getattr(kernel, name)
    if name.startswith("__") or _left_out(name) is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    raise NotProvidedAttributeError(_explain(name, _left_out(name)))


def __getattr__(name: str):
    return _name(name)


def __dir__() -> list:
    return sorted(set(globals()) | set(NAMES) | set(sys.modules[KERNEL].__all__))


class UpstreamPath(types.ModuleType):
    """`agents.<path>`: the names `PATHS` lists for it, then those of the kernel module at that path (if any)."""

    def __getattr__(self, name: str):
        path = self.__name__[len(__name__) + 1:]
        for entry in PATHS.get(path, "").split():
            listed, _, target = entry.partition("=")
            if listed == name:
                return _read(target or name)
        kernel = self.__dict__.get("_kernel")
        if kernel is not None and hasattr(kernel, name) and not name.startswith("__"):
            return getattr(kernel, name)
        if _left_out(f"{path}.{name}") and not name.startswith("__"):
            raise NotProvidedAttributeError(_explain(f"{path}.{name}", _left_out(f"{path}.{name}")))
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")

    def __dir__(self) -> list:
        return sorted(set(super().__dir__()) | set(self.__all__))


class UpstreamPathFinder:
    """Finds `miniagents.upstream.<path>` for an upstream module path this package has no file for."""

    @staticmethod
    def find_spec(fullname: str, path=None, target=None):
        if not fullname.startswith(__name__ + "."):
            return None
        upstream = fullname[len(__name__) + 1:]
        if _left_out(upstream):
            raise NotProvidedImportError(_explain(upstream, _left_out(upstream)), name=fullname)
        if upstream in NAMES:  # `from agents import turn_span`, which `_name` could not give: why, typed
            _read(f"{NAMES[upstream]}:{upstream}")
        if upstream not in PATHS and not _kernel_has(f"{KERNEL}.{upstream}"):
            return None
        return ModuleSpec(fullname, UpstreamPathFinder, is_package=True)

    @staticmethod
    def create_module(spec):
        return UpstreamPath(spec.name)

    @staticmethod
    def exec_module(module):
        upstream = module.__name__[len(__name__) + 1:]
        try:
            module._kernel = importlib.import_module(f"{KERNEL}.{upstream}")
        except ImportError:
            module._kernel = None
        module.__doc__ = f"Upstream's `agents.{upstream}` (miniagents.upstream)."
        module.__path__ = []
        listed = [entry.partition("=")[0] for entry in PATHS.get(upstream, "").split()]
        module.__all__ = sorted(set(listed) | set(getattr(module._kernel, "__all__", ())))


def _kernel_has(module: str) -> bool:
    """Whether the kernel (or one of its shells) has a module at this path; the kernel's `MissingFeatureError` for
    a shell (or a name of one) this copy or this Python lacks."""
    try:
        return importlib.util.find_spec(module) is not None
    except MissingFeatureError:
        raise
    except ImportError:  # a parent that is no package
        return False


if UpstreamPathFinder not in sys.meta_path:
    sys.meta_path.append(UpstreamPathFinder)
from . import custom_data, runner, stored_prompts  # noqa: E402 - upstream's rules, in every run from now on

seams.register(runner.PLUGIN)  # made by their modules: a reload of this package made new ones, registered beside
seams.register(stored_prompts.PLUGIN)  # the first (each of upstream's rules ran twice in every run)
seams.register(custom_data.PLUGIN)
