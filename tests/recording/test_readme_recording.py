"""The README's "Recording a run and replaying it offline" runs as written (against the test server, in place of the
local server it names), prints what its comments say, and the recording it shows is the file it writes."""
import contextlib
import io
import pathlib
import re

from openai_server import chat_completion
from support import ROOT

README = (pathlib.Path(ROOT) / "README.md").read_text(encoding="utf-8")
SECTION = README.split("## Recording a run and replaying it offline", 1)[1].split("\n## ", 1)[0]


def test_the_readme_snippet_records_replays_and_shows_its_recording(server, tmp_path, monkeypatch):
    [code] = re.findall(r"```python\n(.*?)```", SECTION, flags=re.S)
    [shown] = re.findall(r"```\n(\{.*?)```", SECTION, flags=re.S)
    assert "http://localhost:11434/v1" in code
    server.reply(chat_completion("Hello there!"))
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code.replace("http://localhost:11434/v1", server.url), "README.md", "exec"), {"__name__": "readme"})
    expected = [m.strip() for m in re.findall(r"print\(.*\)\s+#\s*(.*)", code)]
    assert out.getvalue().splitlines() == expected and len(expected) == 3
    assert len(server.requests) == 1  # the replays asked no server
    assert (tmp_path / "hello.jsonl").read_text(encoding="utf-8") == shown
