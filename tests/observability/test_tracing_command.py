"""`python -m miniagents.tracing FILE` prints a trace file as a tree; importing `miniagents.tracing.__main__` (a
tool that walks a package's modules, a test collector, pydoc) runs nothing (issue 30)."""
import importlib
import json
import subprocess
import sys

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
