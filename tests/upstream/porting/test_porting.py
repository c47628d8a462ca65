"""Upstream-style programs (programs/*.py) run against miniagents with only their import lines changed.

Every program passes against the upstream SDK (openai-agents 0.24.0; run `porting.py --python
<venv>/bin/python --package agents`). Those that fail on miniagents today are strict xfails whose
reason says what is missing: when one starts to pass, the mark must go.
"""
import pytest

from porting import PROGRAMS, ROOT, ported, run

NOT_YET: dict = {}  # program name -> why it cannot pass yet (a strict xfail); none today


def test_every_xfail_names_a_program():
    assert set(NOT_YET) <= set(PROGRAMS)


def test_the_programs_import_this_checkout_not_an_installed_copy():
    # The programs run with PYTHONPATH=ROOT; a wrong ROOT passes only where miniagents happens to be installed.
    assert (ROOT / "miniagents" / "__init__.py").is_file()


def test_only_import_lines_change():
    source = "import agents\nfrom agents import Agent\nfrom agents.memory import X\nagents_x = 'from agents'\n"
    assert ported(source, "miniagents") == ("import miniagents.upstream as agents\nfrom miniagents.upstream import "
                                            "Agent\nfrom miniagents.upstream.memory import X\nagents_x = 'from agents'\n")


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=NOT_YET[name])) if name in NOT_YET else name
    for name in PROGRAMS])
def test_upstream_style_program_runs_on_miniagents(name):
    done = run(name)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("ok")


# Upstream paths that are also real miniagents modules (the real module wins over compat's table): the
# names ported code imports from them. Those missing today are strict xfails, for the module's owner.
REAL_MODULE_NAMES = {
    "run": "AgentRunner CallModelData DEFAULT_MAX_TURNS ModelInputData ReasoningItemIdPolicy RunConfig RunState "
           "Runner ToolErrorFormatter ToolErrorFormatterArgs ToolExecutionConfig ToolNameCollisionPolicy "
           "ToolNotFoundBehavior get_default_agent_runner set_default_agent_runner",
    "items": "HandoffCallItem HandoffOutputItem ItemHelpers MessageOutputItem ModelResponse ReasoningItem RunItem "
             "TResponseInputItem TResponseOutputItem TResponseStreamEvent ToolApprovalItem ToolCallItem "
             "ToolCallOutputItem",
    "tool": "CodeInterpreterTool FileSearchTool FunctionTool FunctionToolResult HostedMCPTool ImageGenerationTool Tool "
            "ToolErrorFunction ToolOutputFileContent ToolOutputImage ToolOutputText WebSearchTool "
            "default_tool_error_function function_tool",
    "agent": "Agent AgentBase AgentToolStreamEvent StopAtTools ToolsToFinalOutputFunction ToolsToFinalOutputResult",
    "handoffs": "Handoff HandoffInputData HandoffInputFilter handoff",
    "models.interface": "Model ModelProvider ModelTracing",
    # agents.testing is the upstream shell's module (miniagents.testing is the kernel's own offline model)
    "upstream.testing": "InvalidModelStep ModelCall ModelScriptError ModelStep ModelStepSpec ScriptedModel UnconsumedModelSteps "
               "UnexpectedModelCall assistant_message function_call",
    "result": "AgentToolInvocation RunResult RunResultBase RunResultStreaming",
}
MISSING_FROM_REAL_MODULES = set()


@pytest.mark.parametrize("dotted", [
    pytest.param(f"{path}.{name}", marks=pytest.mark.xfail(strict=True, reason="not in the real module yet"))
    if f"{path}.{name}" in MISSING_FROM_REAL_MODULES else f"{path}.{name}"
    for path, names in REAL_MODULE_NAMES.items() for name in names.split()])
def test_a_real_module_at_an_upstream_path_holds_the_names_ported_code_imports(dotted):
    path, _, name = dotted.rpartition(".")
    namespace = {}
    exec(f"from miniagents.upstream.{path} import {name}", namespace)
    assert namespace[name] is not None


def test_the_run_config_policy_aliases_hold_upstreams_values():
    """Ported code may check a setting against a policy's values (`typing.get_args`): they are upstream's."""
    from typing import get_args

    from miniagents.upstream.run import ReasoningItemIdPolicy, ToolNameCollisionPolicy, ToolNotFoundBehavior

    assert get_args(ReasoningItemIdPolicy) == ("preserve", "omit")
    assert get_args(ToolNotFoundBehavior) == ("raise_error", "return_error_to_model")
    assert get_args(ToolNameCollisionPolicy) == ("warn", "error")
