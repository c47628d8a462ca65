"""The Workspace capability's tools (miniagents/capabilities/): listing, bounded reading and searching of one
folder, approved writing, and every way a path could leave the folder refused with a message the model reads.
Issue 14.
"""
from __future__ import annotations

import asyncio
import errno
import inspect
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miniagents import Agent, RunState, Runner, ToolError, UserError, Workspace
from miniagents.context import ToolContext
from miniagents.testing import ScriptedModel, assistant_message, function_call
from support import TESTS, outputs_sent

posix_only = pytest.mark.skipif(os.name != "posix", reason="symbolic links, FIFOs and sockets as POSIX has them")


@pytest.fixture
def tree():
    """A short-named folder (UNIX socket paths are limited) holding a workspace and a secret outside it."""
    base = tempfile.mkdtemp(prefix="ws")
    root, outside = os.path.join(base, "root"), os.path.join(base, "outside")
    os.makedirs(os.path.join(root, "docs", "faq"))
    os.makedirs(outside)
    files = {"docs/guide.md": "# Guide\nReturns are free within 30 days.\nRefunds take 5 days.\n",
             "docs/faq/shipping.txt": "Shipping takes 2 days.\nWe ship to the EU.\n",
             "big.txt": "".join(f"line {n}\n" for n in range(1, 1001)),
             "empty.txt": ""}
    for name, text in files.items():
        with open(os.path.join(root, name), "w", encoding="utf-8") as f:
            f.write(text)
    with open(os.path.join(root, "logo.png"), "wb") as f:
        f.write(b"\x89PNG\r\n\x00\x00refund")
    with open(os.path.join(outside, "secret.txt"), "w") as f:
        f.write("refund password: hunter2\n")
    yield root, outside
    shutil.rmtree(base)


def refused(call, *args):
    with pytest.raises(ToolError) as caught:
        call(*args)
    return caught.value.message


# --- Escapes, each refused with a model-visible message ---------------------------------------------------


@pytest.mark.parametrize("path, reason", [
    ("..", "contains '..'"), ("../outside/secret.txt", "contains '..'"), ("docs/../../outside", "contains '..'"),
    ("/etc/passwd", "is absolute"), ("docs/\x00guide.md", "NUL byte"),
    ("a" * 256, "longer than 255 bytes"), ("é" * 128, "longer than 255 bytes"), ("d/" * 600, "longer than 1024")])
def test_paths_that_leave_the_root_or_cannot_be_names_are_refused(tree, path, reason):
    root, _ = tree
    workspace = Workspace(root)
    for tool in (workspace.list_files, workspace.read_file, workspace.search):
        args = ("x", path) if tool == workspace.search else (path,)
        message = refused(tool, *args)
        assert message.startswith("Path refused") and reason in message and root not in message


@posix_only
def test_a_symbolic_link_to_a_file_outside_is_refused_and_one_inside_is_followed(tree):
    root, outside = tree
    os.symlink(os.path.join(outside, "secret.txt"), os.path.join(root, "notes.txt"))
    os.symlink(os.path.join(root, "docs", "guide.md"), os.path.join(root, "guide-link.md"))
    workspace = Workspace(root)
    message = refused(workspace.read_file, "notes.txt")
    assert "leads outside the workspace" in message and outside not in message and "hunter2" not in message
    assert "Returns are free" in workspace.read_file("guide-link.md")


@posix_only
def test_a_link_to_a_sibling_folder_whose_name_starts_with_the_roots_is_outside(tree):
    root, _ = tree
    sibling = root + "-secrets"  # ".../root-secrets" starts with ".../root" but is not inside it
    os.makedirs(sibling)
    with open(os.path.join(sibling, "keys.txt"), "w") as f:
        f.write("api key: sk-live\n")
    os.symlink(os.path.join(sibling, "keys.txt"), os.path.join(root, "keys.txt"))
    os.symlink(sibling, os.path.join(root, "more"))
    workspace = Workspace(root)
    for path in ("keys.txt", "more/keys.txt"):
        assert "leads outside the workspace" in refused(workspace.read_file, path)
    assert "No matches" in workspace.search("sk-live")


@posix_only
def test_a_symbolic_link_in_an_intermediate_folder_cannot_lead_out(tree):
    root, outside = tree
    os.symlink(outside, os.path.join(root, "docs", "shared"))
    os.symlink(os.path.join(root, "docs", "shared"), os.path.join(root, "chain"))  # inside -> inside -> outside
    workspace = Workspace(root)
    for path in ("docs/shared/secret.txt", "chain/secret.txt", "docs/shared", "chain"):
        assert "leads outside the workspace" in refused(workspace.read_file, path)
    assert "leads outside the workspace" in refused(workspace.list_files, "docs/shared")
    assert "leads outside the workspace" in refused(workspace.search, "hunter2", "chain")


@posix_only
def test_a_workspace_whose_root_is_a_link_works_on_its_target(tree):
    root, _ = tree
    link = os.path.join(os.path.dirname(root), "root-link")
    os.symlink(root, link)
    assert "Refunds take 5 days." in Workspace(link).read_file("docs/guide.md")


@posix_only
def test_a_fifo_and_a_socket_are_refused_without_being_opened(tree):
    root, _ = tree
    os.mkfifo(os.path.join(root, "pipe"))
    server = socket.socket(socket.AF_UNIX)
    server.bind(os.path.join(root, "sock"))
    try:
        workspace = Workspace(root)
        for name in ("pipe", "sock"):  # opening the FIFO for reading would block forever
            assert "is not a regular file" in refused(workspace.read_file, name)
        listing = workspace.list_files(".")
        assert "pipe  (special file; refused)" in listing and "sock  (special file; refused)" in listing
        assert workspace.search("anything") == "No matches for 'anything' in '.'."
    finally:
        server.close()


@posix_only
def test_links_are_followed_here_one_name_at_a_time_and_never_above_the_root(tree):
    root, outside = tree
    given = os.path.join(os.path.dirname(root), "root-link")
    os.symlink(root, given)
    links = {"docs/up.txt": "../big.txt", "docs/out.txt": "../../outside/secret.txt",
             "abs-out.txt": root + "/../outside/secret.txt", "via-given.md": given + "/docs/guide.md",
             "loop-a": "loop-b", "loop-b": "loop-a", "here": ".", "dangling.txt": "nowhere/x.txt"}
    for name, target in links.items():
        os.symlink(target, os.path.join(root, name))
    workspace = Workspace(given)
    assert workspace.read_file("docs/up.txt", 1, 1) == "     1\tline 1"
    assert "Returns are free" in workspace.read_file("via-given.md")  # the root as the host named it
    assert "Returns are free" in workspace.read_file("here/here/docs/guide.md")
    for path in ("docs/out.txt", "abs-out.txt"):
        message = refused(workspace.read_file, path)
        assert message == f"Path refused: '{path}' leads outside the workspace through a symbolic link."
    assert refused(workspace.read_file, "loop-a") == \
        "Path refused: 'loop-a' goes through more than 40 symbolic links (or keeps changing)."
    listing = workspace.list_files(".")
    assert "abs-out.txt  (link outside the workspace; refused)" in listing
    assert "loop-a  (link cannot be followed: Path refused: 'loop-a' goes through more than 40 symbolic links (or " \
        "keeps changing))" in listing
    assert "here/" in listing and "dangling.txt  (broken link)" in listing
    assert refused(workspace.read_file, "dangling.txt") == "Cannot read 'dangling.txt': No such file or directory."


def test_a_name_the_file_system_cannot_encode_is_refused(tree):
    message = refused(Workspace(tree[0]).read_file, "docs/\ud800.md")
    assert message == "Path refused: 'docs/\\ud800.md' is not a valid file name here."


def test_where_files_cannot_be_opened_relative_to_a_folder_no_workspace_is_made(tree, monkeypatch):
    from miniagents.capabilities import workspace

    monkeypatch.setattr(workspace, "_RELATIVE_CALLS", False)
    with pytest.raises(UserError, match=r"opens files relative to a folder without following links"):
        Workspace(tree[0])


@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="needs /dev/null")
def test_a_device_file_is_refused():
    assert "is not a regular file (a device, FIFO or socket)" in refused(Workspace("/dev").read_file, "null")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(list("ab./\\\x00:~") + ["..", "docs", "é", "\ud800"]), max_size=20).map("".join))
def test_any_path_either_is_answered_inside_the_root_or_refused_with_a_message(path):
    root = os.path.realpath(os.path.join(TESTS, "golden"))
    workspace = Workspace(root)
    for tool in (workspace.list_files, workspace.read_file):
        try:
            answer = tool(path)
        except ToolError as refusal:
            assert root not in refusal.message
        else:
            assert root not in answer
            if tool == workspace.list_files:
                shown = answer.split(":\n")[0]
                assert ".." not in shown.split("/") and not shown.startswith("/")


def test_the_root_must_be_an_existing_folder(tree):
    root, _ = tree
    with pytest.raises(UserError, match="is not a folder"):
        Workspace(os.path.join(root, "big.txt"))
    with pytest.raises(UserError, match="is not a folder"):
        Workspace(os.path.join(root, "missing"))


# --- Reading -------------------------------------------------------------------------------------------------


def test_read_file_shows_numbered_lines(tree):
    text = Workspace(tree[0]).read_file("docs/guide.md")
    assert text == "     1\t# Guide\n     2\tReturns are free within 30 days.\n     3\tRefunds take 5 days."


def test_a_large_file_is_read_in_bounded_slices_with_a_pointer_to_the_next(tree):
    workspace = Workspace(tree[0])
    first = workspace.read_file("big.txt")
    assert first.splitlines()[0] == "     1\tline 1" and first.splitlines()[199] == "   200\tline 200"
    assert first.splitlines()[-1] == "(lines 1-200 of 'big.txt'; more follow: call read_file with start_line=201)"
    middle = workspace.read_file("big.txt", 500, 502)
    assert middle == "   500\tline 500\n   501\tline 501\n   502\tline 502"
    capped = workspace.read_file("big.txt", 900, 5000)
    assert len(capped.splitlines()) == 101 and capped.splitlines()[-1] == "  1000\tline 1000"  # the end: no pointer
    capped = workspace.read_file("big.txt", 1, 5000)
    assert capped.splitlines()[-1].endswith("start_line=201)")
    assert workspace.read_file("big.txt", 1001) == "'big.txt' has 1000 lines; start_line 1001 is past its end."


def test_a_very_long_line_is_cut_and_reading_continues_after_it(tree):
    root, _ = tree
    with open(os.path.join(root, "wide.txt"), "w") as f:
        f.write("a" * 50_000 + "\nnext line\n")
    text = Workspace(root).read_file("wide.txt")
    first, second = text.splitlines()
    assert first == "     1\t" + "a" * 2000 + " [line cut]" and second == "     2\tnext line"


@pytest.mark.parametrize("path, message", [
    ("logo.png", "'logo.png' is a binary file; only text files can be read."),
    ("docs", "'docs' is a folder; use list_files to see what it holds."),
    ("missing.txt", "Cannot read 'missing.txt': No such file or directory."),
    ("empty.txt", None)])
def test_what_cannot_be_read_is_explained(tree, path, message):
    workspace = Workspace(tree[0])
    if message is None:
        assert workspace.read_file(path) == "'empty.txt' is empty."
    else:
        assert refused(workspace.read_file, path) == message


def test_line_numbers_must_make_sense(tree):
    workspace = Workspace(tree[0])
    assert "start_line must be 1 or more" in refused(workspace.read_file, "big.txt", 0)
    assert "at least start_line" in refused(workspace.read_file, "big.txt", 5, 4)


def test_list_files_shows_folders_and_sizes_and_is_bounded(tree):
    workspace = Workspace(tree[0])
    assert workspace.list_files(".") == (".:\nbig.txt  (8893 bytes)\ndocs/\nempty.txt  (0 bytes)\n"
                                         "logo.png  (14 bytes)")
    assert workspace.list_files("docs/") == "docs:\nfaq/\nguide.md  (62 bytes)"
    workspace.max_entries = 2
    assert workspace.list_files().splitlines()[-1] == "... and 2 more entries"
    assert refused(workspace.list_files, "big.txt") == "'big.txt' is not a folder."
    assert refused(workspace.list_files, "nope") == "'nope' does not exist."


# --- Searching -----------------------------------------------------------------------------------------------


def test_search_finds_plain_text_ignoring_case_and_skips_binary_files(tree):
    workspace = Workspace(tree[0])
    assert workspace.search("REFUND") == "docs/guide.md:3: Refunds take 5 days."
    assert workspace.search("ship", "docs/faq") == ("docs/faq/shipping.txt:1: Shipping takes 2 days.\n"
                                                    "docs/faq/shipping.txt:2: We ship to the EU.")
    assert workspace.search("days", "docs/guide.md").count("\n") == 1


def test_search_takes_a_regular_expression_and_a_bad_one_is_a_message(tree):
    workspace = Workspace(tree[0])
    assert workspace.search(r"\d+ days", regex=True).splitlines() == [  # a folder's files before its folders
        "docs/guide.md:2: Returns are free within 30 days.", "docs/guide.md:3: Refunds take 5 days.",
        "docs/faq/shipping.txt:1: Shipping takes 2 days."]
    assert refused(workspace.search, "(unclosed", ".", True).startswith(
        "Invalid regular expression '(unclosed': missing ), unterminated subpattern")
    for too_much in ("(" * 500 + ")" * 500, "a{99999999999}"):  # re.compile raises RecursionError, OverflowError
        assert refused(workspace.search, too_much, ".", True).startswith(f"Invalid regular expression {too_much!r}: ")
    assert refused(workspace.search, "") == "The search pattern is empty."



def test_search_visits_folders_in_name_order_whatever_order_they_were_made_in(tree):
    root = tree[0]
    for name in ("m", "c", "x", "a", "q", "f"):  # the file system may list them in any order
        os.makedirs(os.path.join(root, "notes", name))
        with open(os.path.join(root, "notes", name, "note.txt"), "w") as f:
            f.write("refund\n")
    found = Workspace(root).search("refund", "notes").splitlines()
    assert found == [f"notes/{name}/note.txt:1: refund" for name in "acfmqx"]

def test_search_results_are_bounded(tree):
    workspace = Workspace(tree[0])
    found = workspace.search("line", "big.txt").splitlines()
    assert len(found) == 51 and found[-1] == "(stopped at 50 matches; narrow the pattern or the path)"
    workspace.max_search_files = 1
    assert workspace.search("nothing-matches").endswith("(stopped after looking at 1 entries; search a narrower path)")


@posix_only
def test_search_does_not_follow_links_out_of_the_workspace(tree):
    root, outside = tree
    os.symlink(os.path.join(outside, "secret.txt"), os.path.join(root, "docs", "notes.txt"))
    os.symlink(outside, os.path.join(root, "mirror"))
    os.symlink("guide.md", os.path.join(root, "docs", "guide-link.md"))
    os.symlink("docs", os.path.join(root, "docs-link"))
    assert Workspace(root).search("password") == "No matches for 'password' in '.'."
    assert Workspace(root).search("refunds take").splitlines() == [  # a link to a file inside is searched,
        "docs/guide-link.md:3: Refunds take 5 days.", "docs/guide.md:3: Refunds take 5 days."]  # not one to a folder


def test_search_goes_a_bounded_number_of_folders_down_and_says_so(tree):
    workspace = Workspace(tree[0])
    workspace.max_search_depth = 1
    assert workspace.search("ship") == ("No matches for 'ship' in '.'.\n"
                                        "(folders more than 1 levels down were not searched)")
    assert workspace.search("ship", "docs").startswith("docs/faq/shipping.txt:1: Shipping")


def test_searching_a_path_that_does_not_exist_says_so(tree):
    assert refused(Workspace(tree[0]).search, "x", "nope") == "'nope' does not exist."


# --- Writing -------------------------------------------------------------------------------------------------


def test_a_read_only_workspace_has_no_write_tool_and_refuses_writes(tree):
    workspace = Workspace(tree[0])
    assert [t.name for t in workspace.tools()] == ["list_files", "read_file", "search"]
    assert refused(workspace.write_file, "new.txt", "x") == "This workspace is read-only."


def test_a_writable_workspace_writes_inside_and_needs_approval_by_default(tree):
    root, outside = tree
    workspace = Workspace(root, writable=True)
    write = workspace.tools()[-1]
    assert write.name == "write_file" and write.needs_approval is True
    assert Workspace(root, writable=True, write_needs_approval=False).tools()[-1].needs_approval is False
    assert workspace.write_file("notes/today.md", "Call the customer.") == "Wrote 18 bytes to 'notes/today.md'."
    with open(os.path.join(root, "notes", "today.md")) as f:
        assert f.read() == "Call the customer."
    assert "contains '..'" in refused(workspace.write_file, "../outside/secret.txt", "x")
    assert "is a folder" in refused(workspace.write_file, "docs", "x")
    workspace.max_file_bytes = 4
    assert "larger than 4 bytes" in refused(workspace.write_file, "big.md", "12345")
    with open(os.path.join(outside, "secret.txt")) as f:
        assert "hunter2" in f.read()


@posix_only
def test_write_file_refuses_links_out_and_special_files(tree):
    root, outside = tree
    os.symlink(os.path.join(outside, "secret.txt"), os.path.join(root, "link.txt"))
    os.symlink(outside, os.path.join(root, "out"))
    os.mkfifo(os.path.join(root, "pipe"))
    workspace = Workspace(root, writable=True)
    assert "leads outside" in refused(workspace.write_file, "link.txt", "x")
    assert "leads outside" in refused(workspace.write_file, "out/new.txt", "x")
    assert "not a regular file" in refused(workspace.write_file, "pipe", "x")
    assert not os.path.exists(os.path.join(outside, "new.txt"))


# --- As tools: schemas, direct calls and a real run ---------------------------------------------------------


def test_the_tools_have_schemas_like_any_function_tool(tree):
    tools = {t.name: t for t in Workspace(tree[0], writable=True).tools()}
    assert set(tools["read_file"].params_json_schema["required"]) == {"path", "start_line", "end_line"}
    assert tools["search"].params_json_schema["properties"]["regex"]["type"] == "boolean"
    assert tools["list_files"].description == "List the files and folders in a folder of the workspace."
    assert tools["read_file"].params_json_schema["properties"]["start_line"]["description"] == \
        "The first line to show (1 is the first line of the file)."
    assert all(t.strict_json_schema for t in tools.values())


def test_invoking_the_tools_directly_gives_the_text_the_model_would_see(tree):
    """A call run as a run runs it (`invoke_tool`): the text, or the refusal the model reads."""
    from miniagents.tool import invoke_tool

    tools = {t.name: t for t in Workspace(tree[0]).tools()}
    ctx = ToolContext(context=None, tool_name="read_file", tool_call_id="c1")
    _, text = invoke_tool(tools["read_file"], ctx, json.dumps({"path": "docs/guide.md", "start_line": 2,
                                                               "end_line": 2}))
    assert text == "     2\tReturns are free within 30 days."
    _, refused = invoke_tool(tools["read_file"], ctx, json.dumps({"path": "../x", "start_line": 1, "end_line": None}))
    assert "contains '..'" in refused


def test_an_agent_answers_from_the_workspace_and_an_escape_attempt_reaches_the_model_as_a_message(tree):
    root, _ = tree
    model = ScriptedModel([
        [function_call("search", {"pattern": "refund", "path": ".", "regex": False}, call_id="c1"),
         function_call("read_file", {"path": "../outside/secret.txt", "start_line": 1, "end_line": None},
                       call_id="c2")],
        [function_call("read_file", {"path": "docs/guide.md", "start_line": 3, "end_line": 3}, call_id="c3")],
        [assistant_message("Refunds take 5 days.")]])
    agent = Agent(name="Help desk", instructions="Answer from the files.", tools=Workspace(root).tools(), model=model)
    result = Runner.run_sync(agent, "How long do refunds take?")
    assert result.final_output == "Refunds take 5 days."
    assert [t["name"] for t in model.calls[0].tools] == ["list_files", "read_file", "search"]
    first, second = outputs_sent(model.calls[1]), outputs_sent(model.calls[2])
    assert first["c1"] == "docs/guide.md:3: Refunds take 5 days."
    assert first["c2"] == ("Path refused: '../outside/secret.txt' contains '..'; paths must stay inside the "
                           "workspace.")
    assert second["c3"] == "     3\tRefunds take 5 days."


def test_a_write_pauses_the_run_for_approval_and_happens_once_approved(tree):
    root, _ = tree
    model = ScriptedModel([
        [function_call("write_file", {"path": "answers/refunds.md", "content": "5 days"}, call_id="w1")],
        [assistant_message("Saved.")]])
    agent = Agent(name="Writer", tools=Workspace(root, writable=True).tools(), model=model)
    paused = Runner.run_sync(agent, "Save the refund answer.")
    assert [i.raw_item["name"] for i in paused.interruptions] == ["write_file"]
    assert not os.path.exists(os.path.join(root, "answers"))
    state = RunState.from_string(agent, paused.to_state().to_string())
    state.approve(state.get_interruptions()[0])
    result = Runner.run_sync(agent, state)
    assert result.final_output == "Saved."
    assert outputs_sent(model.calls[1])["w1"] == "Wrote 6 bytes to 'answers/refunds.md'."
    with open(os.path.join(root, "answers", "refunds.md")) as f:
        assert f.read() == "5 days"


# --- A regular expression that backtracks catastrophically (issue 20) --------------------------------------


def test_a_catastrophic_regex_returns_within_the_bound_while_other_threads_keep_running(tree):
    """`(a+)+$` on 30 a's and a b takes minutes in Python's `re`, holding the interpreter lock all along."""
    root, _ = tree
    with open(os.path.join(root, "docs", "aaa.txt"), "w") as f:
        f.write("a" * 30 + "b\n")
    ticks, done = [], threading.Event()

    def heartbeat():
        while not done.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.005)

    beating = threading.Thread(target=heartbeat)
    beating.start()
    try:
        time.sleep(0.05)
        start = time.monotonic()
        message = refused(Workspace(root).search, "(a+)+$", ".", True)
        elapsed = time.monotonic() - start
    finally:
        done.set()
        beating.join()
    assert message == ("Search stopped: the regular expression '(a+)+$' did not finish within 2 seconds (a "
                       "pattern with nested repeats such as '(a+)+' can take exponential time); simplify it or "
                       "search a narrower path.")
    # the bound: 2 s of processor time matching, and this process waits on the matcher at most 2 + START_SECONDS s in
    # all (a loaded machine gives the matcher less of a processor); and room for starting and stopping a process
    from miniagents.capabilities.workspace import START_SECONDS
    assert elapsed < 2 + START_SECONDS + 6
    during = [t for t in ticks if start <= t <= start + elapsed]
    gaps = [b - a for a, b in zip([start] + during, during + [start + elapsed])]
    assert len(during) >= 10 and max(gaps) < 1.5  # the other thread was never stalled for long


def test_a_regex_search_has_its_time_bound_and_pattern_length_cap_as_attributes(tree):
    root, _ = tree
    with open(os.path.join(root, "aaa.txt"), "w") as f:
        f.write("a" * 40 + "b\n")
    workspace = Workspace(root)
    workspace.regex_seconds = 0.5
    assert "did not finish within 0.5 seconds" in refused(workspace.search, "(a|aa)+$", ".", True)
    assert refused(workspace.search, "a" * 1001, ".", True) == \
        "The regular expression is longer than 1000 characters; use a shorter one."
    assert workspace.search("a" * 1000) == f"No matches for {'a' * 1000!r} in '.'."  # plain text: the same cap


def test_a_regex_search_finds_matches_in_many_files_and_stops_at_the_match_bound(tree):
    root, _ = tree
    for n in range(30):
        with open(os.path.join(root, "docs", f"n{n:02}.txt"), "w") as f:
            f.write("nothing\n" * 50 + f"order {n}\n" + "\x85\u2028 odd line endings: a\rb\n")
    workspace = Workspace(root)
    found = workspace.search(r"order \d+$", "docs", regex=True).splitlines()
    assert found == [f"docs/n{n:02}.txt:51: order {n}" for n in range(30)]
    assert workspace.search("odd line endings", regex=True).split("\n")[0] == \
        "docs/n00.txt:52: \\x85\\u2028 odd line endings: a"  # one line, whatever splits lines (issue 30)
    found = workspace.search(r"\d", regex=True).splitlines()
    assert len(found) == 51 and found[-1] == "(stopped at 50 matches; narrow the pattern or the path)"


def test_a_regex_search_whose_process_fails_is_a_message(tree, monkeypatch):
    from miniagents.capabilities import workspace as workspace_module
    said = 'import json, sys; print(json.dumps(["miniagents matcher"] + list(sys.version_info[:2]))); sys.exit(1)'
    monkeypatch.setattr(workspace_module, "_MATCHER", said)
    assert refused(Workspace(tree[0]).search, "days", ".", True) == (
        "Search failed: the process matching the regular expression stopped (exit status 1); try a simpler "
        "pattern or a plain-text search.")


def test_a_regex_search_where_no_python_can_be_started_is_a_message(tree, monkeypatch):
    from miniagents.capabilities import workspace as workspace_module
    for name in ("executable", "_base_executable", "exec_prefix", "base_exec_prefix"):
        monkeypatch.setattr(sys, name, "", raising=False)
    monkeypatch.setattr(workspace_module, "_last_python", None)
    assert refused(Workspace(tree[0]).search, "days", ".", True) == (
        "Regular-expression search could not run here: no Python interpreter was found to run it in (this "
        "program's own is not one, or cannot be started); search for plain text instead (regex=false).")
    assert "Refunds take 5 days." in Workspace(tree[0]).search("days")


# --- Races: a folder or file swapped for a link to the outside while a tool runs (issue 20) ------------------------


def swapped_after_the_look(monkeypatch, root, name, target):
    """Make the workspace's next look at `name` (a name in `root`) be followed at once by `name` becoming a
    link to `target`: the moment between looking at a name and opening it, where a race strikes."""
    from miniagents.capabilities import workspace

    look, done = workspace._look, []

    def look_then_swap(entry, folder):
        info = look(entry, folder)
        if entry == name and not done:
            done.append(True)
            os.rename(os.path.join(root, name), os.path.join(root, name + ".away"))
            os.symlink(target, os.path.join(root, name))
        return info

    monkeypatch.setattr(workspace, "_look", look_then_swap)


@posix_only
def test_a_folder_swapped_for_a_link_between_the_look_and_the_open_is_not_entered(tree, monkeypatch):
    root, outside = tree
    swapped_after_the_look(monkeypatch, os.path.join(root, "docs"), "faq", outside)
    assert refused(Workspace(root).read_file, "docs/faq/secret.txt") == \
        "Path refused: 'docs/faq/secret.txt' leads outside the workspace through a symbolic link."


@posix_only
@pytest.mark.parametrize("tool", ["list_files", "search"])
def test_a_folder_swapped_for_a_link_between_the_look_and_the_listing_is_not_listed(tree, monkeypatch, tool):
    """The folder a tool lists or searches is opened as a folder is passed through: never through a link."""
    root, outside = tree
    swapped_after_the_look(monkeypatch, os.path.join(root, "docs"), "faq", outside)
    workspace = Workspace(root)
    call = workspace.list_files if tool == "list_files" else lambda path: workspace.search("refund", path)
    doing = "list" if tool == "list_files" else "search"
    assert refused(call, "docs/faq") in {f"Cannot {doing} 'docs/faq': {os.strerror(number)}."
                                         for number in (errno.ENOTDIR, errno.ELOOP)}  # Linux; some BSDs


@posix_only
def test_a_file_swapped_for_a_link_between_the_look_and_the_open_is_not_read(tree, monkeypatch):
    root, outside = tree
    swapped_after_the_look(monkeypatch, os.path.join(root, "docs"), "guide.md", os.path.join(outside, "secret.txt"))
    assert refused(Workspace(root).read_file, "docs/guide.md") == \
        "'docs/guide.md' changed while it was being opened; try again."


@posix_only
def test_a_file_swapped_for_a_link_before_a_write_is_replaced_not_written_through(tree, monkeypatch):
    root, outside = tree
    secret = os.path.join(outside, "secret.txt")
    swapped_after_the_look(monkeypatch, os.path.join(root, "docs"), "guide.md", secret)
    assert Workspace(root, writable=True).write_file("docs/guide.md", "new\n") == "Wrote 4 bytes to 'docs/guide.md'."
    with open(secret) as f:
        assert f.read() == "refund password: hunter2\n"
    assert not os.path.islink(os.path.join(root, "docs", "guide.md"))


def exchange():
    """`swap(a, b)`: swap two names atomically, with renameat2(RENAME_EXCHANGE) (Linux 3.15, glibc 2.28)."""
    import ctypes

    renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]

    def swap(a: bytes, b: bytes) -> None:
        if renameat2(-100, a, -100, b, 2) != 0:  # AT_FDCWD, RENAME_EXCHANGE
            raise OSError(ctypes.get_errno(), "renameat2(RENAME_EXCHANGE) failed")

    return swap


SWAPPER = inspect.getsource(exchange) + """
import sys
swap, a, b = exchange(), sys.argv[1].encode(), sys.argv[2].encode()
swap(a, b)
swap(a, b)
print("swapping", flush=True)
while True:
    swap(a, b)
"""


@pytest.fixture(params=["sub", "sub/f.txt"])
def swapping(tree, request):
    """A name in the workspace (the folder `sub`, or the file `sub/f.txt` in it) swapped over and over with a
    symbolic link to the same name's counterpart outside (the outside folder, which holds, besides
    secret.txt, its own f.txt and only-outside.txt; or that f.txt), by another process (truly at the same
    time) and by another thread (which runs whenever the tool waits on the system, between its steps).
    Yields (workspace, outside); skips where the platform cannot swap two names atomically."""
    if not sys.platform.startswith("linux"):
        pytest.skip("needs renameat2(RENAME_EXCHANGE) (Linux)")
    root, outside = tree
    os.makedirs(os.path.join(root, "sub"))
    for folder, text in ((os.path.join(root, "sub"), "inside\n"), (outside, "outside\n")):
        with open(os.path.join(folder, "f.txt"), "w") as f:
            f.write(text)
    with open(os.path.join(outside, "only-outside.txt"), "w") as f:
        f.write("outside\n")
    inside, link = os.path.join(root, request.param), os.path.join(os.path.dirname(root), "link")
    os.symlink(os.path.join(outside, os.path.relpath(request.param, "sub")), link)
    process = subprocess.Popen([sys.executable, "-c", SWAPPER, inside, link], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    stop, swaps = threading.Event(), []

    def swapper():
        swap, count = exchange(), 0
        while not stop.is_set():
            swap(inside.encode(), link.encode())
            count += 1
        swaps.append(count)

    thread = threading.Thread(target=swapper)
    try:
        if process.stdout.readline() != "swapping\n":
            pytest.skip(f"needs renameat2(RENAME_EXCHANGE) here: {process.communicate()[1].strip()[-300:]}")
        thread.start()
        yield Workspace(root, writable=True), outside
        assert process.poll() is None  # it swapped all along
    finally:
        stop.set()
        if thread.is_alive():
            thread.join()
        process.kill()
        process.communicate()
    assert swaps[0] > 100


RACE_ATTEMPTS = 5000


def race(call, escaped) -> Counter:
    """Run `call` RACE_ATTEMPTS times; count its answers as 'escaped' (per `escaped(answer)`), 'inside',
    'refused' (a ToolError, which must not show the host's path) or a raw exception's type name."""
    seen = Counter()
    for _ in range(RACE_ATTEMPTS):
        try:
            answer = call()
        except ToolError as refusal:
            assert tempfile.gettempdir() not in refusal.message
            seen["refused"] += 1
        except Exception as error:  # noqa: BLE001  (counted, and the test fails on any)
            seen[type(error).__name__] += 1
        else:
            seen["escaped" if escaped(answer) else "inside"] += 1
    return seen


@posix_only
def test_read_file_never_reads_outside_while_a_name_is_swapped_for_a_link(swapping):
    workspace, _ = swapping
    seen = race(lambda: workspace.read_file("sub/f.txt"), lambda text: "outside" in text)
    assert seen["inside"] + seen["refused"] == RACE_ATTEMPTS, seen


@posix_only
@pytest.mark.parametrize("swapping", ["sub"], indirect=True)  # a write replaces a link met as the last name,
def test_write_file_never_writes_outside_while_a_name_is_swapped_for_a_link(swapping):  # ending that race
    workspace, outside = swapping
    before = sorted(os.listdir(outside))
    seen = race(lambda: workspace.write_file("sub/f.txt", "written\n"), lambda _: False)
    assert seen["inside"] + seen["refused"] == RACE_ATTEMPTS, seen
    assert sorted(os.listdir(outside)) == before  # not even a temporary file
    with open(os.path.join(outside, "f.txt")) as f:
        assert f.read() == "outside\n"


@posix_only
def test_list_files_and_search_never_see_outside_while_a_name_is_swapped_for_a_link(swapping):
    workspace, _ = swapping
    seen = race(lambda: workspace.list_files("sub"), lambda text: "only-outside" in text)
    assert seen["inside"] + seen["refused"] == RACE_ATTEMPTS, seen
    seen = race(lambda: workspace.search("outside", "sub"), lambda text: not text.startswith("No matches"))
    assert seen["inside"] + seen["refused"] == RACE_ATTEMPTS, seen


@posix_only
def test_write_file_never_writes_through_a_hard_link_and_replaces_the_file_whole(tree):
    root, outside = tree
    secret = os.path.join(outside, "secret.txt")
    os.link(secret, os.path.join(root, "hard.txt"))
    os.chmod(os.path.join(root, "docs", "guide.md"), 0o600)
    workspace = Workspace(root, writable=True)
    assert "hunter2" in workspace.read_file("hard.txt")  # a hard link is the file itself: reads see it
    assert workspace.write_file("hard.txt", "mine\n") == "Wrote 5 bytes to 'hard.txt'."
    assert workspace.write_file("docs/guide.md", "new guide\n") == "Wrote 10 bytes to 'docs/guide.md'."
    with open(secret) as f:
        assert f.read() == "refund password: hunter2\n"
    assert workspace.read_file("hard.txt") == "     1\tmine"
    assert os.stat(os.path.join(root, "docs", "guide.md")).st_mode & 0o777 == 0o600  # its mode is kept
    assert sorted(os.listdir(root)) == ["big.txt", "docs", "empty.txt", "hard.txt", "logo.png"]  # no leftovers


@posix_only
def test_write_file_through_a_link_inside_replaces_the_file_it_names_and_keeps_the_link(tree):
    root, _ = tree
    os.symlink("docs/guide.md", os.path.join(root, "alias.md"))
    workspace = Workspace(root, writable=True)
    assert workspace.write_file("alias.md", "via the link\n") == "Wrote 13 bytes to 'alias.md'."
    assert os.readlink(os.path.join(root, "alias.md")) == "docs/guide.md"
    with open(os.path.join(root, "docs", "guide.md")) as f:
        assert f.read() == "via the link\n"


# --- Resources: every descriptor and pipe a tool opens is closed, on every path (issue 35) -------------------

FD_FOLDER = next((f for f in ("/proc/self/fd", "/dev/fd") if os.path.isdir(f)), None)


def open_descriptors():
    return sorted(int(n) for n in os.listdir(FD_FOLDER))


@posix_only
@pytest.mark.skipif(FD_FOLDER is None, reason="counts this process's descriptors in /proc/self/fd or /dev/fd")
def test_every_tool_closes_each_descriptor_and_pipe_it_opened_whatever_its_answer(tree):
    """Each call, whether it answers, is refused or fails midway (a link that leads outside or loops, a search
    stopped by its bounds, a regex child that runs out of time), leaves this process with the descriptors it had:
    closed (a child process reaped) by the tool itself, not by the garbage collector (it is off while each call
    runs) nor by a finalizer (which would warn)."""
    import gc
    import warnings

    root, outside = tree
    os.symlink(os.path.join(outside, "secret.txt"), os.path.join(root, "out.txt"))
    os.symlink("docs/guide.md", os.path.join(root, "in.md"))
    os.symlink(os.path.join(root, "docs", "faq"), os.path.join(root, "docs", "abs-faq"))  # absolute, inside
    os.symlink("../../..", os.path.join(root, "docs", "faq", "up"))  # its '..' climbs above the root
    os.symlink("loop", os.path.join(root, "loop"))
    os.makedirs(os.path.join(root, "deep", "a", "b", "c"))
    for n in range(4):
        with open(os.path.join(root, "deep", "a", "b", "c", f"f{n}.txt"), "w") as f:
            f.write("needle\n" * 3)
    workspace = Workspace(root, writable=True)
    bounded = Workspace(root)
    bounded.max_matches, bounded.max_search_files, bounded.max_search_depth = 2, 3, 2
    slow = Workspace(root)
    slow.regex_seconds = 0.05
    with open(os.path.join(root, "backtracks.txt"), "w") as f:
        f.write("a" * 40 + "!\n")
    calls = [
        lambda: workspace.list_files("."), lambda: workspace.list_files("docs"), lambda: workspace.list_files("nope"),
        lambda: workspace.list_files("big.txt"), lambda: workspace.list_files("docs/abs-faq"),
        lambda: workspace.read_file("docs/guide.md"), lambda: workspace.read_file("big.txt", 990),
        lambda: workspace.read_file("logo.png"), lambda: workspace.read_file("docs"),
        lambda: workspace.read_file("nope"), lambda: workspace.read_file("in.md"),
        lambda: workspace.read_file("out.txt"), lambda: workspace.read_file("loop"),
        lambda: workspace.read_file("docs/faq/up/secret.txt"), lambda: workspace.read_file("docs/abs-faq/up"),
        lambda: workspace.read_file("docs/abs-faq/shipping.txt"),
        lambda: workspace.search("refund"), lambda: workspace.search("ship", "docs/abs-faq"),
        lambda: workspace.search("x", "nope"), lambda: workspace.search("needle", "deep/a/b/c/f0.txt"),
        lambda: bounded.search("needle"), lambda: bounded.search("needle", "deep"), lambda: bounded.search("e"),
        lambda: workspace.search("Re.und", regex=True), lambda: workspace.search("ship", "docs", regex=True),
        lambda: bounded.search("needle", regex=True), lambda: bounded.search("line", "big.txt", regex=True),
        lambda: workspace.search("[", regex=True),
        lambda: slow.search("(a+)+$", "backtracks.txt", regex=True),
        lambda: workspace.write_file("notes/new.md", "hello\n"), lambda: workspace.write_file("docs", "x"),
        lambda: workspace.write_file("out.txt", "x"), lambda: workspace.write_file("in.md", "through\n"),
    ]
    answers = []
    for n, call in enumerate(calls):
        before = open_descriptors()
        gc.disable()
        try:
            with warnings.catch_warnings(record=True) as warned:  # what a finalizer closes, it warns about
                warnings.simplefilter("always", ResourceWarning)
                try:
                    answers.append(call())
                except ToolError as refused:
                    answers.append(refused.message)
        finally:
            gc.enable()
        assert open_descriptors() == before, f"call {n} ({answers[-1][:80]!r}) left descriptors open"
        assert [str(w.message) for w in warned if issubclass(w.category, ResourceWarning)] == [], \
            f"call {n} ({answers[-1][:80]!r}) left a file, pipe or child process to its finalizer"
    assert any("did not finish within" in a for a in answers)  # the child that ran out of time was one of them
    assert any("leads outside the workspace" in a for a in answers) and any("symbolic links" in a for a in answers)
    assert any(a.startswith("(stopped") or "stopped after looking at 3 entries" in a for a in answers)
