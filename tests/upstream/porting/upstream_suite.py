"""Runs upstream's own tests (the areas miniagents covers) on miniagents, and counts those that pass on both.

    python tests/upstream/porting/upstream_suite.py UPSTREAM_ROOT --python UPSTREAM_VENV/bin/python --mode upstream \\
        --junit upstream.xml                          # upstream's figure: its tests on its own SDK
    python tests/upstream/porting/upstream_suite.py UPSTREAM_ROOT --python PYTHON --mode alias \\
        --junit alias.xml --passing upstream.xml      # on miniagents
    ... --mode stubbed ...                            # on miniagents, missing upstream names stubbed

UPSTREAM_ROOT is a checkout or sdist of openai-agents (the folder holding `tests/`); its tests are copied to a
temporary folder and run there, never into this repository, each file in a pytest of its own (so a file that
hangs or crashes costs only its own tests, and one file's leftovers cannot fail another's). PYTHON needs pytest, pytest-asyncio, pytest-mock,
inline-snapshot, pydantic, httpx, httpx2, jsonschema, griffe and mcp (upstream's tests use them) and pytest-timeout
(a test that hangs fails after 60 s), and neither openai-agents nor openai.

- `alias`: upstream's conftest.py (which patches upstream internals) is replaced by one that does what
  `python -m miniagents.upstream` does — `agents` is miniagents, `openai.types` the stand-ins where openai is
  absent — and what upstream's does with public names: it registers upstream's test span processor, resets the
  default agent runner and makes the real model adapters fail a test that calls them. The process ends once its
  report is written, without waiting for threads a timed-out test left behind.
- `stubbed`: the same, and a name or module miniagents does not have imports as a stub (an object that accepts
  any call, attribute or subscript; what a call returns unpacks into as many stubs as asked and is 0 as an int),
  so that a test file importing one internal still runs its other tests.
"""
import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from concurrent.futures import ThreadPoolExecutor

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
# Upstream's test files outside miniagents' areas: left-out features, upstream's repository tooling and
# example programs of other features, and its adapters' tests (they drive the openai client: tests/models/).
OUTSIDE = """
apply_diff apply_diff_helpers apply_patch_tool computer_action computer_tool_lifecycle custom_tool
local_shell_tool shell_call_serialization shell_examples shell_tool programmatic_tool_calling mcp_tool_metadata
tool_origin tool_custom_data scripted_sandbox server_conversation_tracker oaiconv_resume_response_id
code_change_verification_policy code_change_verification_runner change_detection check_optional_truthiness
release_automation release_please release_provenance released_api_contract repository_workflow_interfaces
run_examples_script run_serial_tests update_rclone_pin asyncio_stability_command test_environment
daytona_usaspending_example usaspending_setup_db financial_research_budget decisions_examples live_example
hosted_mcp_connectors_example dapr_session_example redis_session_example human_in_the_loop_server_example
example_workflows visualization responses_websocket_session
""".split()
AREAS = ["tests/test_*.py", "tests/memory/test_session*.py", "tests/model_settings", "tests/tracing",
         "tests/utils"]

CONFTEST = '''"""Replaces upstream's conftest.py for a run on miniagents (tests/upstream/porting/upstream_suite.py)."""
import asyncio
import builtins
import os
import sys
import types

import pytest

from miniagents.upstream import alias, assignable_agents, openai_types

alias.install()
openai_types.install()
assignable_agents.install()
os.environ.setdefault("OPENAI_API_KEY", "test_key")


async def _leave_stuck_workers(self, *args, **kwargs):
    """A test whose tool waits on its own loop's asyncio object never ends (miniagents runs tools on a loop of
    their own); once pytest-timeout fails it, the loop must close without joining that worker, or every later
    test of the file is lost too."""
    if self._default_executor is not None:
        self._default_executor.shutdown(wait=False)


asyncio.BaseEventLoop.shutdown_default_executor = _leave_stuck_workers

if os.environ.get("UPSTREAM_SUITE_MODE") == "stubbed":
    class _StubType(type):
        def __getattr__(cls, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return stub(name)

        def __getitem__(cls, item):
            return cls

        def __or__(cls, other):
            return cls

        __ror__ = __or__

    def _unpack(self):
        """A stub unpacks into as many stubs as the assignment asks for (`major, minor = VERSION.split(".")` at a
        module's top would otherwise stop the whole file at collection); any other iteration is refused."""
        import dis

        frame = sys._getframe(1)
        op = next((i for i in dis.get_instructions(frame.f_code) if i.offset == frame.f_lasti), None)
        if op is None or op.opname != "UNPACK_SEQUENCE":
            raise TypeError(f"{type(self).__name__} (a stub) is not iterable")
        return iter([stub("item")() for _ in range(op.arg)])

    def stub(name):
        return _StubType(name, (), {"__init__": lambda self, *a, **k: None,
                                    "__call__": lambda self, *a, **k: None,
                                    "__iter__": _unpack, "__int__": lambda self: 0})

    class _StubModule(types.ModuleType):
        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return stub(name)

    class _StubLoader:
        @staticmethod
        def create_module(spec):
            return _StubModule(spec.name)

        @staticmethod
        def exec_module(module):
            module.__path__ = []

    class _StubbingAlias:
        @staticmethod
        def find_spec(fullname, path=None, target=None):
            try:
                return alias.AgentsAlias.find_spec(fullname, path, target)
            except ImportError:
                from importlib.machinery import ModuleSpec

                return ModuleSpec(fullname, _StubLoader, is_package=True)

    sys.meta_path.insert(0, _StubbingAlias)
    _import = builtins.__import__

    def _stubbing_import(name, globals=None, locals=None, fromlist=(), level=0):
        stubbed = name.split(".")[0] in ("agents", "openai")  # openai: its client, where only types stand in
        if not (fromlist and level == 0 and stubbed):
            return _import(name, globals, locals, fromlist, level)
        try:
            module = _import(name, globals, locals, fromlist, level)
        except ImportError:  # a name of a left-out feature raises while the names are looked up
            import importlib

            module = importlib.import_module(name)
        for wanted in fromlist:
            if wanted != "*" and not hasattr(module, wanted):
                sys.modules.setdefault(f"{module.__name__}.{wanted}", stub(wanted))
        return module

    builtins.__import__ = _stubbing_import

try:
    from .testing_processor import SPAN_PROCESSOR_TESTING
except Exception:  # upstream's test processor needs what this run stubs or lacks
    SPAN_PROCESSOR_TESTING = None
else:
    import agents

    agents.set_trace_processors([SPAN_PROCESSOR_TESTING])


@pytest.fixture(autouse=True)
def clear_span_processor():
    if SPAN_PROCESSOR_TESTING is not None:
        SPAN_PROCESSOR_TESTING.force_flush()
        SPAN_PROCESSOR_TESTING.shutdown()
        SPAN_PROCESSOR_TESTING.clear()


@pytest.fixture(autouse=True)
def clear_default_runner():  # upstream's conftest does this, with its public function
    from agents.run import set_default_agent_runner

    set_default_agent_runner(None)


@pytest.fixture(autouse=True)
def disable_real_model_clients(monkeypatch, request):
    """Upstream's conftest: a test reaching a real model adapter fails at once (here: instead of trying the
    network), unless it is marked `allow_call_model_methods`."""
    if request.node.get_closest_marker("allow_call_model_methods"):
        return
    from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
    from agents.models.openai_responses import OpenAIResponsesModel

    def failing_version(*args, **kwargs):
        pytest.fail("Real models should not be used in tests!")

    for adapter in (OpenAIResponsesModel, OpenAIChatCompletionsModel):
        monkeypatch.setattr(adapter, "get_response", failing_version)
        monkeypatch.setattr(adapter, "stream_response", failing_version)


_EXIT_STATUS = []


def pytest_sessionfinish(session, exitstatus):
    _EXIT_STATUS.append(int(exitstatus))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """The report is written: end the process without joining the worker threads a test that pytest-timeout
    failed may leave waiting forever (an `await Runner.run` runs in the event loop's executor, whose threads the
    interpreter joins at exit), or the file would wait out the harness's per-file limit."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(_EXIT_STATUS[0] if _EXIT_STATUS else 0)
'''


def selected(tests_root: pathlib.Path) -> list:
    files = []
    for pattern in AREAS:
        matches = sorted(tests_root.parent.glob(pattern)) if "*" in pattern else [tests_root.parent / pattern]
        files += [path for path in matches if path.stem.removeprefix("test_") not in OUTSIDE]
    return [str(path.relative_to(tests_root.parent)) for path in files]


def passed(junit: pathlib.Path) -> set:
    tree = ElementTree.parse(junit)
    return {f"{case.get('classname')}::{case.get('name')}" for case in tree.iter("testcase")
            if not any(child.tag in ("failure", "error", "skipped") for child in case)}


def run(upstream_root: pathlib.Path, python: str, mode: str, junit: pathlib.Path, timeout: float,
        files: list = (), jobs: int = 2) -> None:
    """Each test file in a pytest of its own (a file that hangs or crashes costs only its own tests), two at a
    time; their junit reports are merged into `junit`."""
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        shutil.copytree(upstream_root / "tests", work / "tests")
        for data in ("examples",):  # a few tests read upstream's example programs
            if (upstream_root / data).is_dir():
                shutil.copytree(upstream_root / data, work / data)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PYTHONPATH"))}
        env["UPSTREAM_SUITE_MODE"] = mode
        if mode != "upstream":
            (work / "tests" / "conftest.py").write_text(CONFTEST, encoding="utf-8")
            env["PYTHONPATH"] = str(ROOT)
        targets = list(files or selected(work / "tests"))

        def one(n_target):
            n, target = n_target
            report = work / f"junit-{n}.xml"
            command = [python, "-m", "pytest", "-q", "--tb=native", "-p", "no:cacheprovider", "-o", "timeout=60",
                       "-o", "asyncio_mode=auto", "-o", "asyncio_default_fixture_loop_scope=session",
                       f"--junitxml={report}", "-o", "junit_family=xunit1", target]
            try:
                subprocess.run(command, cwd=work, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                               timeout=timeout)
            except subprocess.TimeoutExpired:
                print(f"{target}: stopped after {timeout:g} s (only the tests its report holds count)")
            return report

        with ThreadPoolExecutor(jobs) as pool:
            reports = list(pool.map(one, enumerate(targets)))
        merged = ElementTree.Element("testsuite")
        for report in reports:
            if report.is_file():
                try:
                    merged.extend(ElementTree.parse(report).getroot().iter("testcase"))
                except ElementTree.ParseError:
                    print(f"{report.name}: unreadable junit report (its tests count as not passing)")
        ElementTree.ElementTree(merged).write(junit, encoding="utf-8")
        cases = list(merged.iter("testcase"))
        bad = sum(1 for case in cases if any(child.tag in ("failure", "error") for child in case))
        print(f"{mode}: {len(targets)} files, {len(cases)} tests, {bad} failed or errors")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("upstream_root", type=pathlib.Path)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--mode", default="alias", choices=["upstream", "alias", "stubbed"])
    parser.add_argument("--junit", type=pathlib.Path, required=True)
    parser.add_argument("--passing", type=pathlib.Path, help="the junit file of the upstream run")
    parser.add_argument("--timeout", type=float, default=1500,
                        help="seconds for one test file; a file stopped is lost whole, so allow 60 s per test that hangs")
    parser.add_argument("files", nargs="*", help="upstream test files (tests/test_x.py) instead of the areas")
    args = parser.parse_intermixed_args()
    run(args.upstream_root, args.python, args.mode, args.junit, args.timeout, args.files)
    here = passed(args.junit)
    if args.passing:
        there = passed(args.passing)
        print(f"{len(here & there)} of the {len(there)} tests that pass on upstream pass here ({args.mode})")
    else:
        print(f"{len(here)} tests passed ({args.mode})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
