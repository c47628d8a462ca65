"""miniagents: the agent loop of the OpenAI Agents SDK, standard library only.

`import miniagents as agents` gives upstream's core names. The HTTP adapters, sessions and guardrails
are loaded on first use (module `__getattr__`), so importing the package pulls in no urllib, ssl,
sqlite3, asyncio or concurrent.futures, and costs less.
"""
import sys

if sys.version_info < (3, 9):  # typing.Annotated and friends; said here, before a tool fails deep inside typing
    raise ImportError(f"miniagents needs Python 3.9 or newer; this is Python {sys.version.split()[0]} "
                      f"({sys.executable})")

from .agent import Agent, StopAtTools
from .agent_output import AgentOutputSchema
from .context import RunContextWrapper, ToolContext, Usage
from .errors import (AgentsException, InputGuardrailTripwireTriggered, MaxTurnsExceeded, ModelBehaviorError,
                     ModelHTTPError, ModelRefusalError, ModelTimeoutError, OutputGuardrailTripwireTriggered,
                     RunErrorDetails, ToolInputGuardrailTripwireTriggered, ToolOutputGuardrailTripwireTriggered,
                     ToolTimeoutError, UserError)
from .handoffs import Handoff, HandoffInputData, handoff
from .hooks import AgentHooks, RunHooks
from .items import (HandoffCallItem, HandoffOutputItem, ItemHelpers, MessageOutputItem, ReasoningItem, RunItem,
                    ToolApprovalItem, ToolCallItem, ToolCallOutputItem)
from .models.interface import Model, ModelProvider, ModelResponse, ModelSettings
from .result import (AgentUpdatedStreamEvent, RawResponsesStreamEvent, RunItemStreamEvent, RunResult,
                     RunResultStreaming)
from .config import (CallModelData, ModelInputData, RunConfig, RunErrorHandlerInput, RunErrorHandlerResult,
                     ToolErrorFormatterArgs, ToolExecutionConfig)
from .run import DEFAULT_MAX_TURNS, Runner
from .state import RunState
from .tool import (FunctionTool, FunctionToolResult, ToolError, ToolsToFinalOutputResult, default_tool_error_function,
                   function_tool)

__version__ = "0.1.0"

_GUARDRAILS = ("GuardrailFunctionOutput", "InputGuardrail", "InputGuardrailResult", "OutputGuardrail",
               "OutputGuardrailResult", "ToolGuardrailFunctionOutput", "ToolInputGuardrail", "ToolInputGuardrailData",
               "ToolOutputGuardrail", "ToolOutputGuardrailData", "input_guardrail", "output_guardrail",
               "tool_input_guardrail", "tool_output_guardrail")
_TRACING = ("trace", "custom_span", "agent_span", "function_span", "generation_span", "handoff_span",
            "guardrail_span", "turn_span", "task_span", "get_current_trace", "get_current_span",
            "add_trace_processor", "set_trace_processors", "set_tracing_disabled", "set_tracing_export_api_key",
            "flush_traces", "gen_trace_id", "gen_span_id", "TracingProcessor", "Trace", "Span", "SpanError",
            "SpanData", "AgentSpanData", "CustomSpanData", "FunctionSpanData", "GenerationSpanData",
            "GuardrailSpanData", "HandoffSpanData", "TaskSpanData", "TurnSpanData")
_LAZY = {
    **dict.fromkeys(_GUARDRAILS, "guardrails"),
    "Session": "session", "SessionABC": "session", "SQLiteSession": "sqlite_session", "SessionSettings": "session",
    "DBAPISession": "dbapi_session", "SessionStoreError": "sql_session",
    "OpenAIProvider": "models.provider", "set_default_openai_key": "models.provider",
    "set_default_openai_api": "models.provider",
    "OpenAIChatCompletionsModel": "models.chat_completions", "OpenAIResponsesModel": "models.responses",
    **dict.fromkeys(_TRACING, "tracing"),
    "Capability": "capabilities", "Workspace": "capabilities",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    return _upstream_name(name)


_EAGER = ["Agent", "AgentHooks", "AgentOutputSchema", "AgentUpdatedStreamEvent", "AgentsException", "CallModelData",
          "DEFAULT_MAX_TURNS", "FunctionTool", "FunctionToolResult", "Handoff", "HandoffCallItem", "HandoffInputData",
          "HandoffOutputItem", "InputGuardrailTripwireTriggered", "ItemHelpers", "MaxTurnsExceeded",
          "MessageOutputItem", "Model", "ModelBehaviorError", "ModelHTTPError", "ModelInputData", "ModelProvider",
          "ModelRefusalError", "ModelResponse", "ModelSettings", "ModelTimeoutError", "OutputGuardrailTripwireTriggered",
          "RawResponsesStreamEvent", "ReasoningItem", "RunConfig", "RunContextWrapper", "RunErrorDetails",
          "RunErrorHandlerInput", "RunErrorHandlerResult", "RunHooks", "RunItem", "RunItemStreamEvent", "RunResult",
          "RunResultStreaming", "RunState", "Runner", "StopAtTools", "ToolApprovalItem", "ToolCallItem",
          "ToolCallOutputItem", "ToolContext", "ToolError", "ToolErrorFormatterArgs", "ToolExecutionConfig",
          "ToolInputGuardrailTripwireTriggered", "ToolOutputGuardrailTripwireTriggered", "ToolTimeoutError",
          "ToolsToFinalOutputResult", "Usage", "UserError", "default_tool_error_function", "function_tool", "handoff"]

# Upstream's import paths (`miniagents.memory`, `miniagents.exceptions`, ...), its type aliases, and the
# explained error for features miniagents leaves out: miniagents/compat.py.
from .compat import TOP_LEVEL as _UPSTREAM_NAMES, install as _install_upstream_paths  # noqa: E402
from .compat import top_level as _upstream_name  # noqa: E402

_install_upstream_paths()
__all__ = sorted(_EAGER + list(_LAZY) + list(_UPSTREAM_NAMES))  # what is imported above, loaded on use, upstream's
