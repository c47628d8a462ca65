"""The processes a program run by `python -m miniagents.upstream` starts import `agents` too (issue 30).

multiprocessing's spawn and forkserver start methods (the default on macOS and Windows, and on Linux from Python
3.14) start fresh interpreters that never run the runner: each gets the parent's sys.path, runs the program's main
module again and unpickles what it was sent. Each test runs one program through the runner, in a child process,
and reads what its children, executor workers and a child's child said:
- `agents`, `agents.<path>` and the `openai.types` stand-ins resolve there as in the program, never to an installed
  upstream `agents` (a decoy on PYTHONPATH that fails when imported);
- an object of the package sent to a child (pickled under the package's real module name) unpickles there, even
  when the program imports `agents` under its `__main__` guard only, and when the package was found only through
  the working folder `python -m` put first (replaced by the program's own folder, so not on the child's sys.path);
- as a script, a `-m` module and a folder holding `__main__.py`; spawn and forkserver;
- a copy vendored under another name works the same, and never imports a top-level `miniagents` (a decoy);
- the runner's temporary folder is gone when the program's process has exited (TMPDIR stays empty), also after
  `sys.exit(3)`; a plain run (`python app.py` importing the shell) writes nothing and changes no sys.path.
"""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from support import ROOT

pytestmark = pytest.mark.skipif(os.name != "posix", reason="forkserver and the decoys' layout are POSIX here")

# Written for upstream. Every process says which `agents` it has and what it was sent. Its top level imports FIRST,
# the name a child imports first (`openai.types`, `agents`, or none: then it is the package's own, where the child
# unpickles what it was sent). A child that cannot start makes a pool start new ones forever: each wait has a
# timeout, so a failure ends the program.
WORK = textwrap.dedent('''
    import concurrent.futures
    import multiprocessing
    import sys
    FIRST


    def report(settings):
        import agents.run
        from agents.extensions.handoff_filters import remove_all_tools
        from openai.types.responses import ResponseTextDeltaEvent

        assert callable(remove_all_tools) and isinstance(ResponseTextDeltaEvent, type)
        return f"{agents.__name__} {agents.run.__name__} {type(settings).__name__} {settings.temperature}"


    def child_of_child(queue):
        from agents import ModelSettings

        queue.put(report(ModelSettings(temperature=0.75)))


    def child(method, queue):
        context = multiprocessing.get_context(method)
        inner = context.Queue()
        process = context.Process(target=child_of_child, args=(inner,))
        process.start()
        queue.put(inner.get(timeout=60))
        process.join()


    def main():
        from agents import ModelSettings

        method, parts = sys.argv[1], sys.argv[2:]
        context = multiprocessing.get_context(method)
        with context.Pool(2) as pool:
            print("pool:", pool.map_async(report, [ModelSettings(temperature=0.25)]).get(timeout=60)[0])
        if "executor" in parts:
            with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as executor:
                print("executor:", executor.submit(report, ModelSettings(temperature=0.5)).result(timeout=60))
        if "grandchild" in parts:
            queue = context.Queue()
            process = context.Process(target=child, args=(method, queue))
            process.start()
            print("grandchild:", queue.get(timeout=60))
            process.join()
        sys.exit(3)


    if __name__ == "__main__":
        main()
''')


def expected(shell, parts):
    """What the program prints when it runs a pool and `parts` ("executor", "grandchild") with `shell` as agents."""
    said = {"pool": 0.25, "executor": 0.5, "grandchild": 0.75}
    return [f"{part}: {shell} {shell}.run ModelSettings {said[part]}" for part in said if part in ("pool", *parts)]


FIRST = {"openai": "from openai.types.responses import ResponseTextDeltaEvent", "agents": "import agents",
         "package": ""}


def layout(folder, kind, first):
    """The program (importing `first` first) as a script, a `-m` module or a folder holding `__main__.py`: the
    runner's arguments."""
    work = WORK.replace("FIRST", FIRST[first])
    if kind == "script":
        (folder / "app.py").write_text(work)
        return [str(folder / "app.py")]
    if kind == "module":
        (folder / "pkg").mkdir()
        (folder / "pkg" / "__init__.py").write_text("")
        (folder / "pkg" / "app.py").write_text(work)
        return ["-m", "pkg.app"]
    (folder / "app").mkdir()
    (folder / "app" / "work.py").write_text(work)  # a folder's __main__ is not run again in a child, as under python
    (folder / "app" / "__main__.py").write_text("import work\nwork.main()\n")
    return [str(folder / "app")]


def decoys(folder, *names):
    """A folder of packages that fail when imported: an installed upstream `agents`, a top-level `miniagents`."""
    for name in names:
        (folder / name).mkdir(parents=True)
        (folder / name / "__init__.py").write_text(f"raise SystemExit('the decoy {name} was imported')\n")
    return folder


def run(args, cwd, tmp_path, pythonpath):
    """Run `python ARGS` in `cwd` with a fresh, empty TMPDIR; (CompletedProcess, what TMPDIR holds after)."""
    temp = tmp_path / "temp"
    temp.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PYTHON"))}
    env.update(PYTHONPATH=os.pathsep.join(map(str, pythonpath)), TMPDIR=str(temp))
    done = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=180)
    return done, os.listdir(temp)


# (start method, the program's layout, what a child imports first, what the program runs besides a pool): every
# part on spawn and forkserver, each layout and each first name once at least.
CASES = [("spawn", "script", "openai", ("executor", "grandchild")),
         ("forkserver", "script", "agents", ("executor", "grandchild")),
         ("spawn", "module", "package", ()), ("spawn", "folder", "agents", ())]


@pytest.mark.parametrize("method, kind, first, parts", CASES)
def test_children_import_agents_whatever_start_method_and_the_folder_goes(tmp_path, method, kind, first, parts):
    (tmp_path / "work").mkdir()
    program = layout(tmp_path / "work", kind, first)
    done, left = run(["-m", "miniagents.upstream", *program, method, *parts], tmp_path / "work", tmp_path,
                     [decoys(tmp_path / "site", "agents"), ROOT])
    assert done.returncode == 3, done.stderr[-3000:]
    assert done.stdout.splitlines() == expected("miniagents.upstream", parts)
    assert left == []


def test_a_vendored_copy_found_only_through_the_working_folder_serves_its_children(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(os.path.join(ROOT, "miniagents"), project / "myproj" / "_vendor" / "miniagents",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (project / "myproj" / "__init__.py").write_text("")
    (project / "myproj" / "_vendor" / "__init__.py").write_text("")
    (tmp_path / "elsewhere").mkdir()
    program = layout(tmp_path / "elsewhere", "script", "package")
    done, left = run(["-m", "myproj._vendor.miniagents.upstream", *program, "spawn", "grandchild"], project,
                     tmp_path, [decoys(tmp_path / "site", "agents", "miniagents")])
    assert done.returncode == 3, done.stderr[-3000:]
    assert done.stdout.splitlines() == expected("myproj._vendor.miniagents.upstream", ["grandchild"])
    assert left == []


def test_a_plain_run_that_imports_the_shell_writes_nothing_and_keeps_its_sys_path(tmp_path):
    (tmp_path / "app.py").write_text(textwrap.dedent('''
        import sys
        before = list(sys.path)
        import miniagents.upstream
        print(sys.path == before, "agents" in sys.modules)
    '''))
    done, left = run([str(tmp_path / "app.py")], tmp_path, tmp_path, [ROOT])
    assert done.returncode == 0, done.stderr
    assert done.stdout == "True False\n" and left == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
def test_a_forked_child_ending_normally_leaves_the_folder_to_the_program(tmp_path):
    """A child the program forks inherits the runner's exit handler: its `sys.exit` removed the children's folder,
    so every child started after it could not import `agents` (a spawn pool then started new ones forever)."""
    (tmp_path / "app.py").write_text(textwrap.dedent('''
        import os, sys
        pid = os.fork()
        if pid == 0:
            sys.exit(0)
        os.waitpid(pid, 0)
        print(os.path.isfile(os.path.join(sys.path[1], "agents.py")))
    '''))
    done, left = run(["-m", "miniagents.upstream", str(tmp_path / "app.py")], tmp_path, tmp_path, [ROOT])
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == "True\n" and left == []
