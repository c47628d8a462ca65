"""What the MCP tests share: the test server's command, a server made with modes, and what /proc says of processes
(a test that says "no process is left" reads it there, not from the client it checks)."""
import os
import sys
import time
from pathlib import Path

from miniagents.mcp import MCPServerStdio

HERE = Path(__file__).resolve().parent
TEST_SERVER = str(HERE / "mcp_test_server.py")


def make_server(*modes, log=None, version=None, page_size=None, plan=None, env=None, **options):
    """An `MCPServerStdio` running tests/mcp/mcp_test_server.py with `modes` (not connected)."""
    args = [TEST_SERVER]
    for mode in modes:
        args += ["--mode", mode]
    for flag, value in (("--log", log), ("--version", version), ("--page-size", page_size), ("--plan", plan)):
        if value is not None:
            args += [flag, str(value)]
    options.setdefault("client_session_timeout_seconds", 10)
    options.setdefault("shutdown_grace_seconds", 0.5)
    params = {"command": sys.executable, "args": args}
    if env is not None:
        params["env"] = env
    return MCPServerStdio(params, **options)


def alive(pid):
    """Whether a process with this id exists (a zombie counts: it was not reaped)."""
    return os.path.exists(f"/proc/{pid}")


def state(pid):
    """The process's state letter from /proc (Z: a zombie), or None when there is none."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def group(pgid):
    """The ids of the processes in a process group."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(entry))
    return members


def gone(pid, seconds=5.0):
    """Wait until the process (and its group) has vanished; whether it has."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid) and not group(pid):
            return True
        time.sleep(0.02)
    return False


def not_our_child(pid):
    """True when `pid` is no unreaped child of this process (os.waitpid has nothing left to reap)."""
    try:
        os.waitpid(pid, os.WNOHANG)  # a running child answers (0, 0); a zombie is reaped here: both are left-overs
        return False
    except ChildProcessError:
        return True


def ended(server_pid):
    """The server and everything in its process group are gone, and nothing is left for us to reap."""
    return gone(server_pid) and not_our_child(server_pid)


def tagged(tag, seconds=5.0):
    """The live processes whose environment has FAMILY_TAG=`tag`, once none is left or `seconds` have passed."""
    deadline = time.monotonic() + seconds
    while True:
        found = []
        for entry in os.listdir("/proc"):
            try:
                if entry.isdigit() and state(entry) != "Z" and \
                        f"FAMILY_TAG={tag}".encode() in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                    found.append(int(entry))
            except OSError:
                continue
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.02)
