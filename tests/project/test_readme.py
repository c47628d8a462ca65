"""The README is part of the contract: its hello world runs and every public name it shows exists. The usage-limits
snippet of docs/limits.md, which the README used to hold, runs here too."""
import contextlib
import io
import pathlib
import re

import doc_pages
import miniagents
from support import ROOT

README = (pathlib.Path(ROOT) / "README.md").read_text(encoding="utf-8")


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README, flags=re.S)


def test_hello_world_runs_and_prints_what_its_comments_say():
    code = python_blocks()[0]
    assert len(code.strip().splitlines()) <= 20
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    expected = [m.strip() for m in re.findall(r"print\(.*\)\s+#\s*(.*)", code)]
    assert out.getvalue().splitlines() == expected


def test_every_public_name_in_the_readme_table_exists():
    table = README.split("## What exists", 1)[1].split("\n## ", 1)[0]
    names = set()
    for cell in re.findall(r"`([^`]+)`", table):
        for name in re.findall(r"^([A-Za-z_][A-Za-z0-9_]*)", cell):
            names.add(name)
    names -= {"miniagents", "needs_approval", "limit_turns", "run_in_parallel", "item"}
    import miniagents.testing
    import miniagents.upstream  # the row of upstream's SDK names some of its names

    exported = [getattr(miniagents, n) for n in miniagents.__all__]
    missing = [name for name in sorted(names)
               if not any(hasattr(module, name) for module in (miniagents, miniagents.testing, miniagents.upstream))
               and not any(hasattr(obj, name) for obj in exported if isinstance(obj, type))]
    assert not missing, f"README names that miniagents does not export: {missing}"


def test_readme_names_the_two_commands():
    assert "python demo.py" in README and "./run.sh test" in README


def test_the_local_server_snippet_talks_chat_completions_to_the_base_url(monkeypatch):
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    from openai_server import OpenAITestServer, chat_completion

    code = python_blocks()[1]
    assert "OPENAI_BASE_URL" in code
    server = OpenAITestServer()
    try:
        server.reply(chat_completion("Hello there!"))
        monkeypatch.setenv("OPENAI_BASE_URL", "restored-after-the-test")  # the snippet sets both
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        monkeypatch.setenv("OPENAI_API_KEY", "x")
        monkeypatch.delenv("OPENAI_API_KEY")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code.replace("http://localhost:11434/v1", server.url), "README.md", "exec"), {})
        assert out.getvalue().strip() == "Hello there!"
        request = server.requests[0]
        assert request["path"].endswith("/chat/completions")
        assert request["body"]["model"] == "llama3.2"
        assert request["body"]["messages"][0] == {"role": "system", "content": "Answer in one sentence."}
    finally:
        server.close()


def test_the_usage_limits_snippet_stops_resumes_and_prints_what_its_comments_say():
    [code] = doc_pages.python_blocks(doc_pages.read("docs/limits.md"))
    assert "UsageLimits(" in code
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/limits.md", "exec"), {"__name__": "docs"})
    expected = doc_pages.printed_comments(code)
    assert out.getvalue().splitlines() == expected and len(expected) == 2


def test_the_readme_stays_one_page_for_learners_and_vendorers():
    """At most 250 lines: a topic that needs more gets a page in docs/, linked from the README."""
    lines = README.splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move a topic to docs/"
    headings = [line for line in lines if line.startswith("## ")]
    assert headings == ["## Two commands", "## Hello world", "## Talking to a real model", "## The loop in one page",
                        "## What exists", "## Copying miniagents into a project"]
