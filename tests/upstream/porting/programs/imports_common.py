"""The import lines upstream code and tests use most."""
from agents import Agent, RunConfig, Runner, TContext, TResponseInputItem
from agents.exceptions import AgentsException, MaxTurnsExceeded, ModelBehaviorError, UserError
from agents.guardrail import GuardrailFunctionOutput, InputGuardrail
from agents.lifecycle import AgentHooks, RunHooks
from agents.memory import Session, SessionABC, SQLiteSession
from agents.memory.session_settings import SessionSettings
from agents.model_settings import ModelSettings
from agents.models.interface import Model, ModelProvider
from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
from agents.models.openai_provider import OpenAIProvider
from agents.models.openai_responses import OpenAIResponsesModel
from agents.run import RunConfig as RunConfigFromRun
from agents.run_config import ToolExecutionConfig
from agents.run_context import RunContextWrapper
from agents.run_state import RunState
from agents.stream_events import RawResponsesStreamEvent, RunItemStreamEvent, StreamEvent
from agents.tool import FunctionTool, function_tool
from agents.tool_context import ToolContext
from agents.tool_guardrails import ToolInputGuardrail, tool_input_guardrail
from agents.usage import Usage

assert RunConfigFromRun is RunConfig
assert issubclass(MaxTurnsExceeded, AgentsException) and issubclass(UserError, AgentsException)
assert issubclass(ToolContext, RunContextWrapper)
history: list[TResponseInputItem] = [{"role": "user", "content": "hi"}]
assert history[0]["role"] == "user"
print("ok")
