"""miniagents: the agent loop of the OpenAI Agents SDK, standard library only.

The kernel's names are here. The rest load on first use (module `__getattr__`, one table, `_LAZY`): the HTTP
adapters, sessions, guardrails and the kernel's less used classes, and the names of the shells (the optional
folders: tracing/, retry/, capabilities/, recording/, dbapi/, mcp/), so importing the package pulls in no urllib,
ssl, sqlite3, asyncio or concurrent.futures and no shell. Code written for the upstream SDK imports
`miniagents.upstream` instead (it may be aliased `agents`), which has upstream's names and rules too.
"""
import sys

if sys.version_info < (3, 9):  # typing.Annotated and friends; said here, before a tool fails deep inside typing
    raise ImportError(f"miniagents needs Python 3.9 or newer; this is Python {sys.version.split()[0]} "
                      f"({sys.executable})")

from .agent import Agent, StopAtTools
from .agent_output import AgentOutputSchema
from .config import RunConfig, UsageLimits
from .context import RunContextWrapper, ToolContext, Usage
from .errors import (AgentsException, AlreadyResumedError, InputGuardrailTripwireTriggered, MaxTurnsExceeded,
                     MissingFeatureError, ModelBehaviorError, ModelHTTPError, ModelRefusalError, ModelTimeoutError,
                     OutputGuardrailTripwireTriggered, RunErrorDetails, ToolInputGuardrailTripwireTriggered,
                     ToolOutputGuardrailTripwireTriggered, ToolTimeoutError, UnfinishedTurnError, UsageLimitExceeded,
                     UserError)
from .handoffs import Handoff, HandoffInputData, handoff
from .items import (HandoffCallItem, HandoffOutputItem, MessageOutputItem, ReasoningItem, RunItem, ToolApprovalItem,
                    ToolCallItem, ToolCallOutputItem)
from .models.interface import Model, ModelProvider, ModelResponse, ModelSettings
from .result import AgentUpdatedStreamEvent, RawResponsesStreamEvent, RunItemStreamEvent, RunResult, RunResultStreaming
from .run import DEFAULT_MAX_TURNS, Runner
from .state import RunState
from .tool import (FunctionTool, FunctionToolResult, ToolError, ToolsToFinalOutputResult, default_tool_error_function,
                   function_tool)
from . import seams  # noqa: E402

__version__ = "0.2.0"

# name -> the module it is read from on first use (a shell's names: its folder first)
_LAZY = {
    **dict.fromkeys(("GuardrailFunctionOutput", "InputGuardrail", "InputGuardrailResult", "OutputGuardrail",
                     "OutputGuardrailResult", "ToolGuardrailFunctionOutput", "ToolInputGuardrail",
                     "ToolInputGuardrailData", "ToolOutputGuardrail", "ToolOutputGuardrailData", "input_guardrail",
                     "output_guardrail", "tool_input_guardrail", "tool_output_guardrail", "ToolInputGuardrailResult",
                     "ToolOutputGuardrailResult"), "guardrails"),
    **dict.fromkeys(("Session", "SessionABC", "SessionSettings"), "session"),
    "SQLiteSession": "sqlite_session", "SessionStoreError": "sql_session", "InputItem": "items",
    "ModelTracing": "models.interface",
    "OpenAIChatCompletionsModel": "models.chat_completions", "OpenAIResponsesModel": "models.responses",
    "AgentToolStreamEvent": "agent", "TContext": "context", "AgentOutputSchemaBase": "agent_output",
    # the shells'
    **dict.fromkeys(("trace", "custom_span", "agent_span", "function_span", "generation_span", "handoff_span",
                     "guardrail_span", "get_current_trace", "get_current_span", "add_trace_processor",
                     "set_trace_processors", "set_tracing_disabled", "flush_traces", "gen_trace_id", "gen_span_id",
                     "TracingProcessor", "Trace", "Span", "SpanError"), "tracing"),
    **dict.fromkeys(("ModelRetrySettings", "ModelRetryBackoffSettings", "RetryDecision", "RetryPolicy",
                     "RetryPolicyContext", "retry_policies", "ModelRetryAdvice", "ModelRetryAdviceRequest",
                     "ModelRetryNormalizedError"), "retry"),
    "Capability": "capabilities", "Workspace": "capabilities", "DBAPISession": "dbapi",
    **dict.fromkeys(("Recorder", "Replay", "RecordingError", "ReplayMismatch", "ReplayExhausted", "ReplayIncomplete"),
                    "recording"),
    **dict.fromkeys(("MCPServerStdio", "create_static_tool_filter"), "mcp"),
}


def __getattr__(name: str):
    """A name of `_LAZY`, loaded now. A name this copy or this Python lacks (a shell left out, `_sqlite3` or a
    module a shell imports missing) is an AttributeError that says so (so `hasattr` answers False; `from miniagents
    import ...` raises the `MissingFeatureError` itself, through `seams.ShellFinder`)."""
    if name == "__all__":  # `from miniagents import *`: every name this copy can give
        names = [n for n, value in globals().items() if not n.startswith("_") and not isinstance(value, type(sys))]
        value = globals()["__all__"] = sorted(names + [n for n in _LAZY if _loads(n)])
        return value
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r} (a name of the OpenAI Agents SDK may be "
                             f"in its upstream shell, {__name__}.upstream)")
    import importlib

    try:
        if module.split(".")[0] in seams.SHELLS:
            seams.load_shell(module.split(".")[0], name)
        value = globals()[name] = getattr(importlib.import_module(f".{module}", __name__), name)
    except MissingFeatureError as missing:
        raise AttributeError(str(missing)) from missing
    return value


def _loads(name: str) -> bool:
    try:
        __getattr__(name)
        return True
    except AttributeError:
        return False


seams.install_finder()  # `miniagents.<name>` of a shell this copy lacks says so
