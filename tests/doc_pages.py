"""The project's Markdown pages as the tests read them: README.md, ARCHITECTURE.md and docs/*.md, their
sections, their ```python blocks and what those blocks' comments say they print.

The tests that run a page's snippets (tests/project/test_readme.py, tests/project/test_doc_snippets.py,
tests/recording/test_docs_recording.py, ...) read them from here, so a snippet that moves to another page moves
in one place."""
import pathlib
import re

from support import ROOT

ROOT_PATH = pathlib.Path(ROOT)
DOCS = ROOT_PATH / "docs"


def pages() -> list:
    """Every page, as a path relative to the repository root: README.md, ARCHITECTURE.md, docs/*.md."""
    return ["README.md", "ARCHITECTURE.md"] + sorted(f"docs/{p.name}" for p in DOCS.glob("*.md"))


def read(name: str) -> str:
    """A page's text; `name` is relative to the repository root ("README.md", "docs/limits.md")."""
    return (ROOT_PATH / name).read_text(encoding="utf-8")


def section(text: str, heading: str) -> str:
    """The text under `heading` (a whole heading line, such as "## What exists"), up to the next heading of the
    same level or higher (a `#` line inside a fenced block is no heading); ValueError when there is no such
    heading."""
    level = len(heading) - len(heading.lstrip("#"))
    lines = text.splitlines(keepends=True)
    try:
        start = [line.rstrip() for line in lines].index(heading)
    except ValueError:
        raise ValueError(f"no heading {heading!r}") from None
    fenced, body = False, []
    for line in lines[start + 1:]:
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(rf"#{{1,{level}}} ", line):
            break
        body.append(line)
    return "".join(body)


def python_blocks(text: str) -> list:
    """The code of every ```python block, in order."""
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def printed_comments(code: str) -> list:
    """What a snippet's `print(...)  # comment` lines say they print, in order."""
    return [m.strip() for m in re.findall(r"print\(.*\)\s+#\s*(.*)", code)]
