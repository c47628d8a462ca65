"""`python -m miniagents.upstream PROGRAM`: an upstream program runs with no edit (miniagents/upstream/__main__.py,
alias.py, openai_types.py)."""
import importlib
import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile

import pytest

import miniagents
from miniagents.upstream import alias, openai_types
from support import ROOT

OPENAI_INSTALLED = importlib.util.find_spec("openai") is not None and not openai_types.installed()

# Written for upstream: every import is upstream's, nothing names miniagents.
PROGRAM = textwrap.dedent('''
    import asyncio
    import sys

    from openai.types.responses import ResponseTextDeltaEvent

    from agents import Agent, Runner, SQLiteSession, function_tool, handoff
    from agents.extensions.handoff_filters import remove_all_tools
    from agents.testing import ScriptedModel, assistant_message, function_call


    @function_tool
    def weather(city: str) -> str:
        return f"sunny in {city}"


    async def main():
        model = ScriptedModel([
            [function_call("weather", {"city": "Oslo"}, call_id="c1")],
            [function_call("transfer_to_writer", {}, call_id="c2")],
            [assistant_message("It is sunny in Oslo.")],
        ])
        writer = Agent(name="writer", model=model)
        agent = Agent(name="assistant", model=model, tools=[weather],
                      handoffs=[handoff(writer, input_filter=remove_all_tools)])
        session = SQLiteSession("demo", sys.argv[1])
        result = Runner.run_streamed(agent, "weather in Oslo?", session=session)
        deltas = [event.data.delta async for event in result.stream_events()
                  if event.type == "raw_response_event" and isinstance(event.data, ResponseTextDeltaEvent)]
        assert "".join(deltas) == "It is sunny in Oslo.", deltas
        assert result.last_agent.name == "writer"
        writer_input = model.calls[-1].input
        assert not [item for item in writer_input if item.get("type") == "function_call"], writer_input
        stored = await session.get_items()
        assert stored[0]["content"] == "weather in Oslo?" and len(stored) >= 5, stored
        print("ran", sys.argv[2])


    if __name__ == "__main__":
        asyncio.run(main())
''')


def _run(*args, cwd, extra_path=""):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PYTHONPATH"))}
    env["PYTHONPATH"] = os.pathsep.join(part for part in (extra_path, str(ROOT)) if part)
    return subprocess.run([sys.executable, "-m", "miniagents.upstream", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def installed_upstream(tmp_path):
    """A directory holding an `agents` package that fails when imported: an upstream install to ignore."""
    site = tmp_path / "site"
    (site / "agents" / "extensions").mkdir(parents=True)
    (site / "agents" / "__init__.py").write_text("raise SystemExit('the installed upstream agents was imported')\n")
    (site / "agents" / "extensions" / "__init__.py").write_text("")
    return site


@pytest.mark.skipif(OPENAI_INSTALLED, reason="with openai installed its own classes are used (docs/porting.md)")
def test_an_upstream_program_runs_unchanged_never_on_an_installed_upstream(tmp_path, installed_upstream):
    program = tmp_path / "app.py"
    program.write_text(PROGRAM)
    done = _run(str(program), str(tmp_path / "s.db"), "with-args", cwd=tmp_path, extra_path=str(installed_upstream))
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "ran with-args"


@pytest.mark.skipif(OPENAI_INSTALLED, reason="with openai installed its own classes are used (docs/porting.md)")
def test_a_program_runs_as_a_module_with_m(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "app.py").write_text(PROGRAM)
    done = _run("-m", "pkg.app", str(tmp_path / "s.db"), "as-module", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "ran as-module"


def test_the_program_is_main_and_sees_its_own_folder_and_arguments(tmp_path):
    (tmp_path / "helper.py").write_text("VALUE = 'helper'\n")
    (tmp_path / "app.py").write_text(
        "import sys, helper, agents\nassert __name__ == '__main__'\n"
        "print(helper.VALUE, sys.argv[1:], agents.__name__)\n")
    done = _run(str(tmp_path / "app.py"), "a", "b", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "helper ['a', 'b'] miniagents.upstream"


def test_under_the_runner_agents_take_assignment_checked_as_the_constructor_checks(tmp_path):
    (tmp_path / "app.py").write_text(textwrap.dedent('''
        from agents import Agent, AgentOutputSchema, Runner, ModelSettings
        from agents.testing import ScriptedModel, assistant_message

        agent = Agent(name="a", model=ScriptedModel([[assistant_message('{"n": 3}')]]))
        agent.output_type = AgentOutputSchema(dict, strict_json_schema=False)  # upstream's non_strict_output_type
        agent.model_settings = {"temperature": 0.5}  # converted as the constructor converts it
        assert isinstance(agent.model_settings, ModelSettings) and agent.model_settings.temperature == 0.5
        try:
            agent.tools = "not a list"
        except TypeError as refused:
            print("refused:", refused)
        try:
            agent.not_a_field = 1
        except AttributeError:
            print("no such field")
        print(agent.tools, Runner.run_sync(agent, "n?").final_output)
    '''))
    done = _run(str(tmp_path / "app.py"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["refused: Agent tools must be a list, got str", "no such field", "[] {'n': 3}"]


def test_outside_the_runner_agents_stay_frozen():
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        miniagents.Agent(name="a").instructions = "x"


@pytest.mark.parametrize("args, status", [((), 2), (("-m",), 2), (("--help",), 0), (("missing.py",), 2)])
def test_usage_and_a_missing_program_are_said_plainly(tmp_path, args, status):
    done = _run(*args, cwd=tmp_path)
    assert done.returncode == status
    assert ("usage: python -m miniagents.upstream" in done.stdout + done.stderr) or "no such program" in done.stderr


# What a program reads of itself, and a sibling import: each must be what `python PROGRAM` gives.
PROBE = textwrap.dedent("""
    import sys
    import helper
    print(sys.argv, __file__, sys.path[0], __name__, getattr(__spec__, "name", None), helper.__file__, sep="\\n")
    print(type(__builtins__).__name__)  # the builtins module in Python's __main__ (a dict where exec alone made it)
    def typed(x: int): pass
    print(typed.__annotations__)  # evaluated, as Python does: the runner's own __future__ import is not the program's
""")


def _python(*args, cwd):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PYTHONPATH"))}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


@pytest.fixture
def programs(tmp_path):
    """Programs as Python takes them, each importing a sibling `helper`: a script; a relative symlink to it in
    a folder whose sibling is a symlink too; an absolute symlink with no sibling beside it (its helper is found
    through the real folder only); a folder and a zip holding `__main__.py`; a symlink to that folder."""
    real = tmp_path / "real"
    real.mkdir()
    (real / "app.py").write_text(PROBE)
    (real / "helper.py").write_text("")
    (tmp_path / "links").mkdir()
    os.symlink(os.path.join("..", "real", "app.py"), tmp_path / "links" / "app.py")
    os.symlink(os.path.join("..", "real", "helper.py"), tmp_path / "links" / "helper.py")
    (tmp_path / "alone").mkdir()
    os.symlink(real / "app.py", tmp_path / "alone" / "app.py")
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "__main__.py").write_text(PROBE)
    (tmp_path / "folder" / "helper.py").write_text("")
    os.symlink("folder", tmp_path / "folder-link")
    with zipfile.ZipFile(tmp_path / "app.zip", "w") as archive:
        archive.writestr("__main__.py", PROBE)
        archive.writestr("helper.py", "")
    return tmp_path


@pytest.mark.skipif(os.name != "posix", reason="symlinks")
@pytest.mark.parametrize("program", ["real/app.py", "links/app.py", "alone/app.py", "folder", "folder-link",
                                     "app.zip", "{tmp}/alone/app.py", "{tmp}/folder-link"])
def test_the_program_reads_of_itself_what_python_program_gives(programs, program):
    program = program.format(tmp=programs)
    expected = _python(program, "a b", "c", cwd=programs)
    assert expected.returncode == 0, expected.stderr
    done = _run(program, "a b", "c", cwd=programs)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == expected.stdout


def test_a_compiled_program_runs_as_python_runs_it(tmp_path):
    """`python app.pyc` runs its bytecode; the runner compiled it as source (a SyntaxError about null bytes)."""
    import py_compile

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text(PROBE.replace("__file__", "__file__, type(__loader__).__name__"))
    py_compile.compile(str(tmp_path / "src" / "app.py"), cfile=str(tmp_path / "app.pyc"), doraise=True)
    (tmp_path / "helper.py").write_text("")
    expected = _python("app.pyc", "a", cwd=tmp_path)
    assert expected.returncode == 0, expected.stderr
    done = _run("app.pyc", "a", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == expected.stdout


def test_a_module_run_with_m_reads_of_itself_what_python_m_gives(tmp_path):
    (tmp_path / "app.py").write_text("import sys\nprint(sys.argv[1:], __name__, type(__builtins__).__name__)\n")
    expected = _python("-m", "app", "a", cwd=tmp_path)
    assert expected.returncode == 0, expected.stderr
    done = _run("-m", "app", "a", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == expected.stdout == "['a'] __main__ module\n"


# What a program given as text reads of itself (`__file__` and `__cached__` are there only for stdin's), and what
# `agents` is: miniagents under the runner, nothing under Python.
TEXT_PROBE = textwrap.dedent("""
    import sys, helper
    print(sys.argv, repr(sys.path[0]), __name__, __spec__, __loader__.__name__, type(__builtins__).__name__)
    print(globals().get('__file__', 'no file'), globals().get('__cached__', 'none cached'), helper.VALUE)
    print(repr(sys.stdin.read()))
    def typed(x: int): pass
    print(typed.__annotations__)
    try:
        import agents
    except ImportError:
        agents = None
    print(getattr(agents, '__name__', None))
""")


def _given_text(program, *args, cwd, input, runner=True):
    """Run `program` (`-c CODE` or `-`) under the runner, or under Python itself, with `input` on stdin."""
    command = [sys.executable, *(("-m", "miniagents.upstream") if runner else ()), *program, *args]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PYTHONPATH"))}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(command, cwd=cwd, env=env, input=input, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("program, stdin", [(("-c", TEXT_PROBE), ""), (("-",), TEXT_PROBE),
                                            (("-c", TEXT_PROBE), "stdin is the program's to read")])
@pytest.mark.parametrize("args", [(), ("a b", "-c", "-", "--", "-m", "x.py")])
def test_a_program_given_with_c_or_on_stdin_reads_of_itself_what_python_gives(tmp_path, program, stdin, args):
    """`-c CODE` and `-` were refused as "no such program": they run as under Python, with its sys.argv (`-c`, or
    `-`, then the arguments), `''` first on sys.path (the working folder, so a sibling imports), no `__spec__`,
    and `__file__` only for stdin's `<stdin>`."""
    (tmp_path / "helper.py").write_text("VALUE = 'sibling'\n")
    for name in ("-", "-c"):  # Python never runs a file by these names
        (tmp_path / name).write_text("raise SystemExit('a file was run')\n")
    expected = _given_text(program, *args, cwd=tmp_path, input=stdin, runner=False)
    done = _given_text(program, *args, cwd=tmp_path, input=stdin)
    assert expected.returncode == 0, expected.stderr
    assert done.returncode == 0, done.stderr[-3000:]
    assert expected.stdout.endswith("\nNone\n")
    assert done.stdout == expected.stdout[:-len("None\n")] + "miniagents.upstream\n"


def test_a_program_given_as_text_that_fails_is_said_under_its_name_as_under_python(tmp_path):
    for program, stdin, name in ((("-c", "x = 1\nraise ValueError('told')"), "", "<string>"),
                                 (("-",), "x = 1\nraise ValueError('told')", "<stdin>"),
                                 (("-c", "x = (1"), "", "<string>"), (("-",), "x = (1", "<stdin>")):
        expected = _given_text(program, cwd=tmp_path, input=stdin, runner=False)
        done = _given_text(program, cwd=tmp_path, input=stdin)
        assert done.returncode == expected.returncode == 1, done.stderr
        assert done.stderr.splitlines()[-1] == expected.stderr.splitlines()[-1]
        assert f'File "{name}", line' in done.stderr


def test_an_empty_or_missing_program_text_is_taken_as_python_takes_it(tmp_path):
    """`-c` with no code is usage (2); `-c ''` and an empty stdin run nothing; with stdin closed `-` runs nothing
    too, where the runner failed on a bare AttributeError (sys.stdin is None)."""
    assert _given_text(("-c",), cwd=tmp_path, input="").returncode == 2
    assert "usage:" in _given_text(("-c",), cwd=tmp_path, input="").stderr
    for program in (("-c", ""), ("-",)):
        done = _given_text(program, cwd=tmp_path, input="")
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PYTHONPATH"))}
    env["PYTHONPATH"] = str(ROOT)
    closed = subprocess.run([sys.executable, "-m", "miniagents.upstream", "-"], cwd=tmp_path, env=env, stdin=None,
                            capture_output=True, text=True, timeout=60, preexec_fn=lambda: os.close(0))
    assert (closed.returncode, closed.stderr) == (0, "")


def test_under_dash_I_a_program_given_as_text_gets_no_working_folder_on_sys_path_as_under_python(tmp_path):
    code = "import sys\nprint(sys.argv, '' in sys.path)"
    runner = (f"import sys; sys.path.append({str(ROOT)!r}); from miniagents.upstream.__main__ import main; "
              "sys.exit(main(sys.argv[1:]))")
    done = subprocess.run([sys.executable, "-I", "-c", runner, "-c", code, "a"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    expected = subprocess.run([sys.executable, "-I", "-c", code, "a"], cwd=tmp_path, capture_output=True, text=True,
                              timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected.stdout == "['-c', 'a'] False\n"


def test_a_folder_without_main_is_said_as_python_says_it(tmp_path):
    (tmp_path / "empty").mkdir()
    done = _run("empty", cwd=tmp_path)
    assert done.returncode == _python("empty", cwd=tmp_path).returncode == 1
    assert f"can't find '__main__' module in {str(tmp_path / 'empty')!r}" in done.stderr


@pytest.mark.parametrize("module", ["nosuch", "pkg.nosuch", "nosuch.app", "pkg.plain.app", "pkg", ".app"])
def test_a_module_not_found_with_m_is_said_in_one_line_as_python_says_it(tmp_path, module):
    """`-m` given a module that is not there (or a package without `__main__`): runpy's ImportError came out as a
    traceback through runpy's insides, where Python says one line and exits with 1."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "plain.py").write_text("")
    done = _run("-m", module, cwd=tmp_path)
    assert done.returncode == _python("-m", module, cwd=tmp_path).returncode == 1
    assert done.stderr.startswith("miniagents.upstream: No module named ") and "Traceback" not in done.stderr


@pytest.mark.parametrize("module", ["agents", "agents.memory", "miniagents.upstream.memory"])
def test_an_agents_module_run_with_m_is_said_to_have_no_code_to_run(tmp_path, module):
    """`agents` is this shell under the runner, whose modules runpy cannot load again as `__main__`: a bare
    AttributeError ('_Existing' object has no attribute 'get_code') came out of runpy."""
    done = _run("-m", module, cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip() == f"miniagents.upstream: {module} is a module of miniagents.upstream here, with no " \
                                  "code to run as a program"


def test_a_parent_package_failing_on_its_own_import_with_m_keeps_its_traceback(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("import nosuch_dependency\n")
    (tmp_path / "pkg" / "app.py").write_text("")
    done = _run("-m", "pkg.app", cwd=tmp_path)
    assert done.returncode == 1 and "ModuleNotFoundError: No module named 'nosuch_dependency'" in done.stderr


def test_the_programs_exit_status_is_the_runners(tmp_path):
    (tmp_path / "app.py").write_text("import sys\nsys.exit(3)\n")
    (tmp_path / "fails.py").write_text("raise ValueError('told')\n")
    assert _run("app.py", cwd=tmp_path).returncode == 3
    failed = _run("fails.py", cwd=tmp_path)
    assert failed.returncode == 1 and "ValueError: told" in failed.stderr


def test_under_dash_I_the_programs_folder_is_not_put_on_sys_path_as_under_python(tmp_path):
    (tmp_path / "app.py").write_text("import os, sys\nprint(sys.path[0], os.path.dirname(__file__) in sys.path)\n")
    runner = (f"import sys; sys.path.append({str(ROOT)!r}); from miniagents.upstream.__main__ import main; "
              "sys.exit(main(sys.argv[1:]))")
    done = subprocess.run([sys.executable, "-I", "-c", runner, "app.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    expected = subprocess.run([sys.executable, "-I", "app.py"], cwd=tmp_path, capture_output=True, text=True,
                              timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected.stdout and expected.stdout.endswith(" False\n")


@pytest.fixture
def aliased():
    alias.install()
    yield
    alias.uninstall()


def test_agents_paths_are_the_miniagents_modules_themselves(aliased):
    import agents
    import agents.extensions.handoff_filters
    import agents.run

    assert agents is miniagents.upstream
    assert agents.run is importlib.import_module("miniagents.upstream.run")
    assert agents.extensions.handoff_filters.remove_all_tools is miniagents.upstream.handoff_helpers.remove_all_tools
    assert miniagents.upstream.__spec__.name == "miniagents.upstream"  # the alias leaves the real module's spec alone
    namespace = {}
    exec("from agents.memory import SQLiteSession", namespace)
    assert namespace["SQLiteSession"] is miniagents.SQLiteSession


def test_a_left_out_path_keeps_its_explained_error_and_an_unknown_one_names_both(aliased):
    with pytest.raises(ImportError, match="What is left out"):
        importlib.import_module("agents.realtime")
    with pytest.raises(ModuleNotFoundError, match="'agents.no_such_module': miniagents has no 'no_such_module'"):
        importlib.import_module("agents.no_such_module")


def test_in_a_copy_without_a_shell_its_names_and_paths_raise_the_kernels_typed_error(tmp_path):
    """A copy that left out tracing/, retry/ and mcp/: what upstream's program imports of them is the kernel's
    MissingFeatureError (it was a bare "cannot import name", or "miniagents has no 'tracing'"), and `hasattr` still
    answers False, for a name the shell serves itself (turn_span) too."""
    shutil.copytree(os.path.join(ROOT, "miniagents"), tmp_path / "miniagents",
                    ignore=shutil.ignore_patterns("__pycache__", "tracing", "retry", "mcp"))
    (tmp_path / "app.py").write_text(textwrap.dedent('''
        import agents
        from agents import MissingFeatureError
        print([hasattr(agents, name) for name in ("trace", "turn_span", "ModelRetrySettings", "Agent")])
        for statement in ("from agents import trace", "from agents import turn_span", "from agents.tracing import trace",
                          "from agents import ModelRetrySettings", "import agents.mcp"):
            try:
                exec(statement)
            except MissingFeatureError as error:
                print(statement, "->", error.name)
    '''))
    done = subprocess.run([sys.executable, "-S", "-m", "miniagents.upstream", "app.py"], cwd=tmp_path,
                          env={"PATH": os.environ.get("PATH", "")}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[False, False, False, True]",
                                        "from agents import trace -> miniagents.tracing",
                                        "from agents import turn_span -> miniagents.tracing",
                                        "from agents.tracing import trace -> miniagents.tracing",
                                        "from agents import ModelRetrySettings -> miniagents.retry",
                                        "import agents.mcp -> miniagents.mcp"]


def test_a_copy_named_under_agents_refuses_to_alias_agents_with_a_typed_error(tmp_path):
    """`agents` mapped onto a copy inside `agents` recursed forever (RecursionError) and deleted the copy's own
    modules; the vendor command refuses the name, and a copy made by hand says why it cannot run."""
    shutil.copytree(os.path.join(ROOT, "miniagents"), tmp_path / "agents" / "_vendor" / "miniagents",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for parent in ("agents", "agents/_vendor"):
        (tmp_path / parent / "__init__.py").write_text("")
    (tmp_path / "app.py").write_text("from agents import Agent\n")
    done = subprocess.run([sys.executable, "-S", "-m", "agents._vendor.miniagents.upstream", "app.py"], cwd=tmp_path,
                          env={"PATH": os.environ.get("PATH", "")}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "agents._vendor.miniagents.errors.UserError: agents._vendor.miniagents.upstream: a copy of miniagents named "
        "under `agents` cannot make `agents` its upstream shell (the name would be mapped onto itself): vendor it "
        "under another name")


def test_a_shell_module_that_cannot_import_its_own_dependency_keeps_that_error(aliased, monkeypatch):
    """Only a path the shell does not have is "miniagents has no ...": a module it has that fails on a missing
    dependency raises that dependency's own error, which names what to install."""
    real = importlib.import_module

    def importing(name, package=None):
        if name.endswith(".needs_a_wheel"):
            raise ModuleNotFoundError("No module named 'some_wheel'", name="some_wheel")
        return real(name, package)

    monkeypatch.setattr(alias.importlib, "import_module", importing)
    with pytest.raises(ModuleNotFoundError, match="^No module named 'some_wheel'$") as caught:
        real("agents.needs_a_wheel")
    assert caught.value.name == "some_wheel"


def test_agents_models_adds_upstreams_default_model_helpers(aliased, monkeypatch):
    from agents.models import get_default_model, get_default_model_settings, is_gpt_5_default

    import agents.models

    monkeypatch.setenv("OPENAI_DEFAULT_MODEL", "GPT-5.2")
    assert get_default_model() == "gpt-5.2" and is_gpt_5_default() is True
    monkeypatch.setenv("OPENAI_DEFAULT_MODEL", "gpt-5-chat-latest")
    assert is_gpt_5_default() is False
    monkeypatch.setenv("OPENAI_DEFAULT_MODEL", "gpt-4.1")
    assert is_gpt_5_default() is False
    assert get_default_model_settings() == miniagents.ModelSettings()
    assert "is_gpt_5_default" in dir(agents.models) and "is_gpt_5_default" in agents.models.__all__
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        agents.models.nope  # noqa: B018


def test_uninstall_forgets_the_alias(aliased):
    import agents  # noqa: F401

    alias.uninstall()
    assert "agents" not in sys.modules and alias.AgentsAlias not in sys.meta_path
    alias.install()


@pytest.mark.parametrize("name, kind", [  # openai's class names for the events a reasoning model's stream sends
    ("ResponseReasoningTextDeltaEvent", "response.reasoning_text.delta"),
    ("ResponseReasoningTextDoneEvent", "response.reasoning_text.done"),
    ("ResponseReasoningSummaryTextDoneEvent", "response.reasoning_summary_text.done"),
    ("ResponseRefusalDoneEvent", "response.refusal.done")])
def test_the_reasoning_and_refusal_events_have_the_stand_ins_openai_names_them_by(name, kind):
    assert isinstance({"type": kind}, openai_types.stand_in(name))


def test_stand_in_classes_match_miniagents_dict_events_by_type():
    delta = openai_types.stand_in("ResponseTextDeltaEvent")
    assert isinstance({"type": "response.output_text.delta", "delta": "x"}, delta)
    assert not isinstance({"type": "response.output_text.done"}, delta)
    assert not isinstance("response.output_text.delta", delta)
    message = openai_types.stand_in("ResponseOutputMessage")(id="m", role="assistant", content=[])
    assert message == {"id": "m", "role": "assistant", "content": [], "type": "message"}
    assert message.role == "assistant" and message.model_dump() == dict(message)
    assert isinstance(message, openai_types.stand_in("ResponseOutputMessageParam"))
    reasoning = openai_types.stand_in("Reasoning")(effort="low")  # no type: matches only its own instances
    assert reasoning == {"effort": "low"} and not isinstance({"effort": "low"}, openai_types.stand_in("Reasoning"))


def test_the_stand_ins_are_not_installed_where_openai_imports(tmp_path, monkeypatch):
    (tmp_path / "openai").mkdir()
    (tmp_path / "openai" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "openai", raising=False)
    openai_types.install()
    assert not openai_types.installed()


def test_the_stand_in_openai_holds_only_types_and_says_so_where_feature_detection_looks(tmp_path):
    script = textwrap.dedent("""
        from miniagents.upstream import openai_types
        openai_types.install()
        import importlib, openai
        from openai.types.shared import Reasoning
        print(Reasoning(effort='low'), openai.types is importlib.import_module("openai.types"))
        print(hasattr(openai, "AsyncOpenAI"), hasattr(openai, "OpenAI"), hasattr(openai, "__version__"))
        for statement in ("from openai import AsyncOpenAI", "import openai.lib.azure", "from openai.lib import azure",
                          "import openai.resources", "openai.AsyncOpenAI"):
            try:
                exec(statement)
            except ImportError as refused:
                print(type(refused).__name__, refused.name, refused)
            except AttributeError as refused:
                print(type(refused).__name__, refused)
    """)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=60)
    if OPENAI_INSTALLED:
        pytest.skip("openai is installed here")
    assert done.returncode == 0, done.stderr
    reason = "(only miniagents' stand-in for openai.types is here: install the openai package for its client)"
    assert done.stdout.splitlines() == [
        "{'effort': 'low'} True",
        "False False False",
        f"ModuleNotFoundError openai cannot import 'openai.AsyncOpenAI' {reason}",
        f"ModuleNotFoundError openai cannot import 'openai.lib' {reason}",
        f"ModuleNotFoundError openai cannot import 'openai.lib' {reason}",
        f"ModuleNotFoundError openai cannot import 'openai.resources' {reason}",
        f"AttributeError module 'openai' has no attribute 'AsyncOpenAI' {reason}",
    ]


def test_stand_ins_build_from_a_dict_as_pydantic_models_do():
    usage = openai_types.stand_in("InputTokensDetails").model_validate({"cached_tokens": 2})
    assert usage == {"cached_tokens": 2} and usage.cached_tokens == 2
    call = openai_types.stand_in("ResponseFunctionToolCall").model_construct(name="f", call_id="c", arguments="{}")
    assert call["type"] == "function_call" and isinstance(call, openai_types.stand_in("ResponseFunctionToolCall"))


def test_a_custom_model_that_returns_no_model_response_is_a_user_error_with_reasoning_ids_omitted():
    from miniagents import Agent, Model, UserError
    from miniagents.upstream.runner import RunConfig, Runner

    class ReturnsNone(Model):
        def get_response(self, *args, **kwargs):
            return None

    with pytest.raises(UserError, match="must return a ModelResponse, not NoneType"):
        Runner.run_sync(Agent(name="A", model=ReturnsNone()), "hi",
                        run_config=RunConfig(reasoning_item_id_policy="omit"))


def test_the_awaited_model_a_plugin_sees_can_be_copied():
    """With the shell loaded a plugin's `model_call` sees an upstream async model wrapped as the kernel calls a
    model: copy.copy of it was a bare RecursionError (its `__getattr__` asked for `wrapped` before the copy had
    one)."""
    import copy

    from miniagents.upstream.runner import AwaitedModel

    model = object()
    copied = copy.copy(AwaitedModel(model))
    assert isinstance(copied, AwaitedModel) and copied.wrapped is model


def test_a_deep_copy_of_the_awaited_model_is_still_the_awaited_model():
    """copy.deepcopy asks the object for `__deepcopy__`: the `AwaitedModel` passed the question on to its model, and
    the copy was the bare async model, which the kernel cannot call."""
    import copy

    from miniagents.testing import ScriptedModel
    from miniagents.upstream.runner import AwaitedModel

    model = ScriptedModel([])  # a model shared by its copies (its __deepcopy__ returns itself)
    copied = copy.deepcopy(AwaitedModel(model))
    assert isinstance(copied, AwaitedModel) and copied.wrapped is model
