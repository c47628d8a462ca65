"""`python -m miniagents.tracing FILE` prints a trace file as a tree; importing `miniagents.tracing.__main__` (a
tool that walks a package's modules, a test collector, pydoc) runs nothing (issue 30); what is not a regular file
(a FIFO, a device, a folder), or is larger than the cap, is refused at once with a message and exit code 2."""
import importlib
import json
import os
import subprocess
import sys

import pytest

from miniagents.tracing import tree
from support import ROOT


def test_importing_the_tracing_command_module_runs_nothing(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["pytest"])
    sys.modules.pop("miniagents.tracing.__main__", None)
    module = importlib.import_module("miniagents.tracing.__main__")  # no SystemExit, nothing printed
    assert callable(module.main)
    assert capsys.readouterr() == ("", "")


def test_the_tracing_command_still_prints_a_tree(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps({"object": "trace", "event": "start", "id": "trace_1", "workflow_name": "Desk",
                                "started_at": "2024-01-01T00:00:00+00:00"}) + "\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "miniagents.tracing", str(path)], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "trace 'Desk'" in done.stdout


def trace_command(*args, timeout=30):
    return subprocess.run([sys.executable, "-m", "miniagents.tracing", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_the_tracing_command_refuses_a_fifo_at_once(tmp_path):
    """A FIFO no one writes would be waited on for ever (and one someone writes to, read for ever)."""
    os.mkfifo(tmp_path / "fifo")
    done = trace_command(str(tmp_path / "fifo"))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (f"miniagents.tracing: cannot open the trace file {str(tmp_path / 'fifo')!r} for reading: "
                           "it is not a regular file (a folder, a FIFO, a device or a socket)\n")


@pytest.mark.parametrize("path", [os.devnull, "/dev/zero", "."])
def test_the_tracing_command_refuses_a_device_or_a_folder(path):
    if not os.path.exists(path):
        pytest.skip(f"no {path} here")
    done = trace_command(path)
    assert done.returncode == 2 and "it is not a regular file" in done.stderr, done.stderr


def test_the_tracing_command_refuses_a_file_larger_than_its_cap_before_reading_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tree, "MAX_BYTES", 100)
    (tmp_path / "big.jsonl").write_text(json.dumps({"object": "trace", "id": "t1", "workflow_name": "x" * 100}),
                                        encoding="utf-8")
    assert tree.main([str(tmp_path / "big.jsonl")]) == 2
    assert capsys.readouterr() == ("", f"miniagents.tracing: the trace file {str(tmp_path / 'big.jsonl')!r} is larger "
                                       "than 0 MiB; it is not read\n")


def test_a_trace_the_terminals_encoding_cannot_show_is_printed_escaped_not_a_traceback(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps({"object": "trace", "id": "trace_1", "workflow_name": "Zo\u00eb \u4f60\u597d"},
                               ensure_ascii=False) + "\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "miniagents.tracing", str(path)], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, env={**os.environ, "PYTHONIOENCODING": "ascii"})
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "trace 'Zo\\xeb \\u4f60\\u597d' trace_1\n"


def test_a_reader_that_leaves_early_ends_the_tracing_command_without_a_traceback(tmp_path):
    """`python -m miniagents.tracing run.jsonl | head`: the pipe closes before the trees are all written."""
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps({"object": "trace", "id": f"trace_{n}", "workflow_name": "Desk"}) + "\n"
                            for n in range(20000)), encoding="utf-8")
    command = subprocess.Popen([sys.executable, "-m", "miniagents.tracing", str(path)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, cwd=ROOT)
    assert command.stdout.readline() == b"trace 'Desk' trace_0\n"
    command.stdout.close()
    assert command.wait(timeout=60) == 1
    assert command.stderr.read() == b""
    command.stderr.close()


def test_spans_nested_past_the_levels_drawn_are_drawn_at_the_deepest_indent_so_the_output_stays_bounded():
    """A file's chain of spans, each inside the last, drew its n-th line n levels deep: a chain of a million (a
    file of 256 MiB) printed terabytes of indent."""
    spans = [{"object": "trace.span", "id": f"s{n}", "trace_id": "trace_1", "parent_id": f"s{n - 1}" if n else None,
              "started_at": f"2024-01-01T00:00:{n % 60:02d}+00:00", "span_data": {"type": "custom", "name": f"c{n}"}}
             for n in range(3 * tree.MAX_INDENT)]
    traces, problems = tree.read(json.dumps(span) for span in spans)
    lines = tree.render(traces).splitlines()[1:]
    assert problems == [] and len(lines) == len(spans)
    indents = [len(line) - len(line.lstrip(" │├└─")) for line in lines]
    assert indents[:tree.MAX_INDENT + 1] == [3 * n + 3 for n in range(tree.MAX_INDENT + 1)]
    assert set(indents[tree.MAX_INDENT:]) == {3 * tree.MAX_INDENT + 3}
    assert [line.lstrip(" │├└─").split(" ")[0] for line in lines] == [f"c{n}" for n in range(len(spans))]


def test_a_trace_of_many_top_level_spans_is_drawn_reading_each_span_a_bounded_number_of_times():
    """Each span was checked against the set of the top-level spans' ids built again for it: a file of 20,000 spans
    whose parents it does not hold (4.5 MB) took a minute, one of a million days. Counted, not timed: the reads of
    the spans' fields grow with the number of spans, not with its square."""
    class Counted(dict):
        reads = 0

        def get(self, *args):
            Counted.reads += 1
            return super().get(*args)

    spans = {f"s{n}": Counted({"object": "trace.span", "id": f"s{n}", "trace_id": "trace_1", "parent_id": None,
                               "span_data": {"type": "custom", "name": "c"}}) for n in range(2000)}
    text = tree.render([("trace_1", {"trace": None, "spans": spans})])
    assert text.count("\n") == len(spans) and text.endswith("└─ c [unfinished]")
    assert Counted.reads < 50 * len(spans), Counted.reads
