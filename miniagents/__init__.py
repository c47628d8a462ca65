"""miniagents: the agent loop of the OpenAI Agents SDK, standard library only.

`import miniagents as agents` gives upstream's core names. The rest load on first use (module `__getattr__`,
one table, `_LAZY`): the HTTP adapters, sessions, guardrails and the kernel's less used classes, and the names
of the shells (the optional folders: tracing/, retry/, capabilities/, upstream/, ...), so importing the package
pulls in no urllib, ssl, sqlite3, asyncio or concurrent.futures and no shell. In a copy of miniagents that left a
shell out, its names raise an ImportError that says so (and `hasattr` answers False).
"""
import sys

if sys.version_info < (3, 9):  # typing.Annotated and friends; said here, before a tool fails deep inside typing
    raise ImportError(f"miniagents needs Python 3.9 or newer; this is Python {sys.version.split()[0]} "
                      f"({sys.executable})")

from .agent import Agent, StopAtTools
from .agent_output import AgentOutputSchema
from .context import RunContextWrapper, ToolContext, Usage
from .errors import (AgentsException, AlreadyResumedError, InputGuardrailTripwireTriggered, MaxTurnsExceeded,
                     ModelBehaviorError, ModelHTTPError, ModelRefusalError, ModelTimeoutError,
                     OutputGuardrailTripwireTriggered,
                     RunErrorDetails, ToolInputGuardrailTripwireTriggered, ToolOutputGuardrailTripwireTriggered,
                     ToolTimeoutError, UsageLimitExceeded, UserError)
from .handoffs import Handoff, HandoffInputData, handoff
from .hooks import AgentHooks, RunHooks
from .items import (HandoffCallItem, HandoffOutputItem, ItemHelpers, MessageOutputItem, ReasoningItem, RunItem,
                    ToolApprovalItem, ToolCallItem, ToolCallOutputItem)
from .models.interface import Model, ModelProvider, ModelResponse, ModelSettings
from .result import (AgentUpdatedStreamEvent, RawResponsesStreamEvent, RunItemStreamEvent, RunResult,
                     RunResultStreaming)
from .config import (CallModelData, ModelInputData, OutputGuardrailBlockedMessageArgs,
                     OutputGuardrailBlockedMessageFormatter, RunConfig, RunErrorHandlerInput, RunErrorHandlerResult,
                     ToolErrorFormatterArgs, ToolExecutionConfig, UsageLimits)
from .run import DEFAULT_MAX_TURNS, Runner
from .state import RunState
from .tool import (FunctionTool, FunctionToolCustomDataContext, FunctionToolCustomDataExtractor, FunctionToolResult,
                   ToolError, ToolsToFinalOutputResult, default_tool_error_function, function_tool)
from . import seams  # noqa: E402

__version__ = "0.1.0"

_GUARDRAILS = ("GuardrailFunctionOutput", "InputGuardrail", "InputGuardrailResult", "OutputGuardrail",
               "OutputGuardrailResult", "ToolGuardrailFunctionOutput", "ToolInputGuardrail", "ToolInputGuardrailData",
               "ToolOutputGuardrail", "ToolOutputGuardrailData", "input_guardrail", "output_guardrail",
               "tool_input_guardrail", "tool_output_guardrail", "ToolInputGuardrailResult", "ToolOutputGuardrailResult")
_TRACING = ("trace", "custom_span", "agent_span", "function_span", "generation_span", "handoff_span",
            "guardrail_span", "turn_span", "task_span", "get_current_trace", "get_current_span",
            "add_trace_processor", "set_trace_processors", "set_tracing_disabled", "set_tracing_export_api_key",
            "flush_traces", "gen_trace_id", "gen_span_id", "TracingProcessor", "Trace", "Span", "SpanError",
            "SpanData", "AgentSpanData", "CustomSpanData", "FunctionSpanData", "GenerationSpanData",
            "GuardrailSpanData", "HandoffSpanData", "TaskSpanData", "TurnSpanData")
_RETRY = ("ModelRetrySettings", "ModelRetryBackoffSettings", "RetryDecision", "RetryPolicy", "RetryPolicyContext",
          "retry_policies")
_TOOLS = ("ToolOutputText", "ToolOutputImage", "ToolOutputFileContent", "ToolOutputTextDict", "ToolOutputImageDict",
          "ToolOutputFileContentDict")
_HOSTED_TOOLS = ("Tool", "WebSearchTool", "WebSearchToolImageSettings", "FileSearchTool", "CodeInterpreterTool",
                 "ImageGenerationTool", "ImageGenerationToolConfig", "HostedMCPTool")
# name -> the module it is read from on first use (a shell's names: its folder first)
_LAZY = {
    **dict.fromkeys(_GUARDRAILS, "guardrails"),
    "Session": "session", "SessionABC": "session", "SQLiteSession": "sqlite_session", "SessionSettings": "session",
    "DBAPISession": "dbapi", "SessionStoreError": "sql_session",
    "OpenAIProvider": "models.provider", "set_default_openai_key": "models.provider",
    "set_default_openai_api": "models.provider", "MultiProvider": "models.provider",
    "set_default_openai_client": "models.provider", "ModelTracing": "models.interface",
    "ModelRetryAdvice": "models.retry_advice", "ModelRetryAdviceRequest": "models.retry_advice",
    "ModelRetryNormalizedError": "models.retry_advice",
    "OpenAIChatCompletionsModel": "models.chat_completions", "OpenAIResponsesModel": "models.responses",
    **dict.fromkeys(("TResponseInputItem", "TResponseOutputItem", "TResponseStreamEvent", "InputItem"), "items"),
    **dict.fromkeys(_TOOLS, "tool"),
    **dict.fromkeys(_HOSTED_TOOLS, "hosted_tools"),
    **dict.fromkeys(("AgentBase", "AgentToolStreamEvent", "ToolsToFinalOutputFunction", "Prompt",
                     "DynamicPromptFunction", "GenerateDynamicPromptData"), "agent"),
    **dict.fromkeys(("RunErrorHandler", "RunErrorHandlers", "RunErrorData", "ToolErrorFormatter",
                     "ToolNotFoundBehavior", "ReasoningItemIdPolicy", "ToolNameCollisionPolicy"), "config"),
    "TContext": "context", "AgentHookContext": "context", "StreamEvent": "result", "AgentToolInvocation": "result",
    "HandoffInputFilter": "handoffs", "AgentOutputSchemaBase": "agent_output",
    **dict.fromkeys(_TRACING, "tracing"),
    **dict.fromkeys(_RETRY, "retry"),
    "Capability": "capabilities", "Workspace": "capabilities",
    "enable_verbose_stdout_logging": "upstream.logger", "run_demo_loop": "upstream.repl",
    **dict.fromkeys(("Recorder", "Replay", "RecordingError", "ReplayMismatch", "ReplayExhausted", "ReplayIncomplete"),
                    "recording"),
}
_SHELL_OF = {name: module.split(".")[0] for name, module in _LAZY.items() if module.split(".")[0] in seams.SHELLS}


def __getattr__(name: str):
    """A name of `_LAZY`, loaded now; else what the upstream shell says of it (its explained error for a feature
    miniagents leaves out), when this copy has that shell."""
    module = _LAZY.get(name)
    if module is None:
        if not seams.present("upstream"):
            raise AttributeError(f"module 'miniagents' has no attribute {name!r}")
        return seams.load_shell("upstream").top_level(name)
    if name in _SHELL_OF:
        try:
            seams.load_shell(_SHELL_OF[name], name)
        except seams.MissingShellError as missing:  # an AttributeError, so that hasattr() answers False
            raise AttributeError(str(missing)) from None
    import importlib

    value = globals()[name] = getattr(importlib.import_module(f".{module}", __name__), name)
    return value


_EAGER = ["Agent", "AgentHooks", "AgentOutputSchema", "AgentUpdatedStreamEvent", "AgentsException", "AlreadyResumedError",
          "CallModelData", "UsageLimitExceeded", "UsageLimits",
          "DEFAULT_MAX_TURNS", "FunctionTool", "FunctionToolCustomDataContext",
          "FunctionToolCustomDataExtractor", "FunctionToolResult", "Handoff", "HandoffCallItem", "HandoffInputData",
          "HandoffOutputItem", "InputGuardrailTripwireTriggered", "ItemHelpers", "MaxTurnsExceeded",
          "MessageOutputItem", "Model", "ModelBehaviorError", "ModelHTTPError", "ModelInputData", "ModelProvider",
          "ModelRefusalError", "ModelResponse", "ModelSettings", "ModelTimeoutError", "OutputGuardrailBlockedMessageArgs",
          "OutputGuardrailBlockedMessageFormatter", "OutputGuardrailTripwireTriggered",
          "RawResponsesStreamEvent", "ReasoningItem", "RunConfig", "RunContextWrapper", "RunErrorDetails",
          "RunErrorHandlerInput", "RunErrorHandlerResult", "RunHooks", "RunItem", "RunItemStreamEvent", "RunResult",
          "RunResultStreaming", "RunState", "Runner", "StopAtTools", "ToolApprovalItem", "ToolCallItem",
          "ToolCallOutputItem", "ToolContext", "ToolError", "ToolErrorFormatterArgs", "ToolExecutionConfig",
          "ToolInputGuardrailTripwireTriggered", "ToolOutputGuardrailTripwireTriggered", "ToolTimeoutError",
          "ToolsToFinalOutputResult", "Usage", "UserError", "default_tool_error_function", "function_tool", "handoff"]

seams.install_finder()  # `miniagents.<name>` of a shell this copy lacks, and upstream's module paths
__all__ = sorted(_EAGER + list(_LAZY))  # what is imported above, and what loads on first use
