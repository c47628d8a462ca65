"""The Workspace capability's tools (miniagents/capabilities/): listing, bounded reading and searching of one
folder, approved writing, and every way a path could leave the folder refused with a message the model reads.
Issue 14.
"""
from __future__ import annotations

import asyncio
import json
import os
import socket
import tempfile

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
    import shutil

    shutil.rmtree(base)


def refused(call, *args):
    with pytest.raises(ToolError) as caught:
        call(*args)
    return caught.value.message


# --- Escapes, each refused with a model-visible message ---------------------------------------------------


@pytest.mark.parametrize("path, reason", [
    ("..", "contains '..'"), ("../outside/secret.txt", "contains '..'"), ("docs/../../outside", "contains '..'"),
    ("/etc/passwd", "is absolute"), ("\\etc\\passwd", "is absolute"), ("docs/\x00guide.md", "NUL byte"),
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


@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="needs /dev/null")
def test_a_device_file_is_refused():
    assert "is not a regular file (a device, FIFO or socket)" in refused(Workspace("/dev").read_file, "null")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(list("ab./\\\x00:~") + ["..", "docs", "é"]), max_size=20).map("".join))
def test_any_path_either_resolves_inside_the_root_or_is_refused(path):
    root = os.path.realpath(os.path.join(TESTS, "golden"))
    workspace = Workspace(root)
    try:
        real, shown = workspace.resolve(path)
    except ToolError as refusal:
        assert refusal.message.startswith("Path refused") and root not in refusal.message
    else:
        assert real == root or real.startswith(root + os.sep)
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
    assert workspace.search("nothing-matches").endswith("(stopped after 1 files; search a narrower path)")


@posix_only
def test_search_does_not_follow_links_out_of_the_workspace(tree):
    root, outside = tree
    os.symlink(os.path.join(outside, "secret.txt"), os.path.join(root, "docs", "notes.txt"))
    os.symlink(outside, os.path.join(root, "mirror"))
    assert "hunter2" not in Workspace(root).search("password")


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


def test_calling_the_tools_directly_gives_the_text_the_model_would_see_as_upstream_does(tree):
    """on_invoke_tool is awaitable, like upstream's coroutine, and a refusal is the model-visible text."""
    tools = {t.name: t for t in Workspace(tree[0]).tools()}
    ctx = ToolContext(context=None, tool_name="read_file", tool_call_id="c1")
    text = asyncio.run(tools["read_file"].on_invoke_tool(ctx, json.dumps({"path": "docs/guide.md", "start_line": 2,
                                                                          "end_line": 2})))
    assert text == "     2\tReturns are free within 30 days."
    refused = tools["read_file"].on_invoke_tool(ctx, json.dumps({"path": "../x", "start_line": 1, "end_line": None}))
    assert "contains '..'" in refused.value


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
