"""Names upstream code imports from the top level and from agents.run / agents.items / agents.tool."""
import asyncio
import inspect

from agents import (AgentBase, AgentHookContext, AgentOutputSchemaBase, AgentToolStreamEvent, CodeInterpreterTool,
                    DynamicPromptFunction, FileSearchTool, GenerateDynamicPromptData, HostedMCPTool,
                    ImageGenerationTool, ModelRetrySettings, RetryDecision, RunContextWrapper, ToolOutputFileContent,
                    ToolOutputImageDict, ToolOutputTextDict, enable_verbose_stdout_logging, retry_policies,
                    run_demo_loop)
from agents import Agent
from agents.items import TResponseInputItem, TResponseOutputItem
from agents.result import RunResultBase
from agents.run import AgentRunner, get_default_agent_runner
from agents.tool import Tool, ToolErrorFunction

assert issubclass(Agent, AgentBase)
assert issubclass(AgentHookContext, RunContextWrapper)
assert inspect.iscoroutinefunction(run_demo_loop)
assert isinstance(get_default_agent_runner(), AgentRunner)
assert FileSearchTool(vector_store_ids=["vs_1"]).name == "file_search"
assert ToolOutputFileContent(file_id="file_1").file_id == "file_1"
assert RetryDecision(retry=True).retry is True
assert ModelRetrySettings(max_retries=2).max_retries == 2
assert callable(retry_policies.network_error())
tools = asyncio.run(Agent(name="A").get_all_tools(RunContextWrapper(context=None)))
assert tools == []
print("ok")
