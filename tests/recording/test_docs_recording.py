"""docs/recording.md runs as written (against the test server, in place of the local server it names), prints what
its comments say, and the recording it shows is the file it writes."""
import contextlib
import io
import re

from doc_pages import printed_comments, python_blocks, read
from openai_server import chat_completion

PAGE = read("docs/recording.md")


def test_the_recording_snippet_records_replays_and_shows_its_recording(server, tmp_path, monkeypatch):
    [code] = python_blocks(PAGE)
    [shown] = re.findall(r"```\n(\{.*?)```", PAGE, flags=re.S)
    assert "http://localhost:11434/v1" in code
    server.reply(chat_completion("Hello there!"))
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code.replace("http://localhost:11434/v1", server.url), "docs/recording.md", "exec"),
             {"__name__": "docs"})
    expected = printed_comments(code)
    assert out.getvalue().splitlines() == expected and len(expected) == 3
    assert len(server.requests) == 1  # the replays asked no server
    assert (tmp_path / "hello.jsonl").read_text(encoding="utf-8") == shown
