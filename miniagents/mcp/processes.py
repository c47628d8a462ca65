"""What a server left running once it is gone: its process group, and what left the group (setsid, setpgid).

The server leads a process group of its own, and what it starts stays in it unless it leaves: a daemon calls
setsid, a launcher starts its workers in sessions of their own. Where /proc tells (Linux) those are found too, two
ways: as descendants of the group's processes (looked for before the server is ended: once it exits, its children
are orphans, adopted by init, no longer its), and by a mark each inherits in its environment from the server
(`MARK`: an orphan is found by it). A process that is an orphan and was started with an environment of its own is
out of reach; so is everything outside the group where there is no /proc (macOS): docs/mcp.md says so.

Races. A process is named by its pid and its start time, and signalled through a pidfd opened before that start
time is read, so a pid reused meanwhile is never signalled. A process may fork while it is ended: what is found is
sent SIGTERM each time it is looked for, and after the grace every process found is stopped (SIGSTOP: a stopped
process forks no more, and its children stay its own), the search repeated until it finds no new one, then all are
killed.
"""
from __future__ import annotations

import os
import signal
import sys
import time
from typing import Dict, Iterable, List, Optional, Set, Tuple

MARK = "MINIAGENTS_MCP_SERVER"  # the variable in a server's environment whose value names its connection
ROUNDS = 100  # searches, at most, for processes forked while the others were being stopped
Process = Tuple[int, int]  # a pid and the process's start time (clock ticks after boot): a pid reused is another


def new_mark() -> str:
    return os.urandom(12).hex()


def signal_group(group: int, sig: int) -> bool:
    """Send `sig` to a process group; False when nothing is left in it."""
    try:
        os.killpg(group, sig)
        return True
    except OSError:  # no such group (all gone), or not ours to signal
        return False


def _stat(pid: int) -> Optional[Tuple[str, int, int, int]]:
    """A process's state letter, parent pid, process group and start time, from /proc; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return fields[0].decode(), int(fields[1]), int(fields[2]), int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def _marked(pid: int, mark: str) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f"{MARK}={mark}".encode() in f.read().split(b"\0")
    except OSError:  # gone, or not ours to read
        return False


def family(group: int, mark: str, known: Iterable[Process] = ()) -> Set[Process]:
    """The live processes (a zombie has ended) in `group` or carrying `mark`, those of `known` still running, and
    every descendant of these; the empty set where there is no /proc."""
    if not os.path.isdir("/proc/self"):
        return set()
    table: Dict[int, Tuple[str, int, int, int]] = {}
    children: Dict[int, List[Process]] = {}
    for name in os.listdir("/proc"):
        found = _stat(int(name)) if name.isdigit() else None
        if found is not None and found[0] not in ("Z", "X"):
            table[int(name)] = found
            children.setdefault(found[1], []).append((int(name), found[3]))
    ours = {(pid, found[3]) for pid, found in table.items() if found[2] == group or _marked(pid, mark)}
    ours |= {(pid, start) for pid, start in known if pid in table and table[pid][3] == start}
    todo = list(ours)
    while todo:
        for child in children.get(todo.pop()[0], ()):
            if child not in ours:
                ours.add(child)
                todo.append(child)
    return ours


def send(process: Process, sig: int) -> None:
    """`sig` to the process if it is still the one that started then (a pid reused is left alone): through a pidfd
    where there is one, opened before the check, so the signal reaches the process checked."""
    pid, start = process
    try:
        handle = os.pidfd_open(pid) if hasattr(os, "pidfd_open") else None
    except OSError:  # gone (then the check fails), or no pidfds in this kernel
        handle = None
    try:
        found = _stat(pid)
        if found is not None and found[3] == start:
            signal.pidfd_send_signal(handle, sig) if handle is not None else os.kill(pid, sig)
    except OSError:
        pass
    finally:
        if handle is not None:
            os.close(handle)


def end(group: int, mark: str, known: Set[Process], grace: float) -> None:
    """End what a server left (its group, and its `family` from `known` on, once it is gone): SIGTERM, then, after
    `grace` seconds, whatever is left stopped until no new process is found, and killed."""
    found = family(group, mark, known)
    if not signal_group(group, signal.SIGTERM) and not found:
        return
    told: Set[Process] = set()
    deadline = time.monotonic() + grace
    while True:
        for process in found - told:  # one forked since the last look is told too
            send(process, signal.SIGTERM)
        told |= found
        if time.monotonic() >= deadline:
            break
        time.sleep(0.02)
        found = family(group, mark, known | told)
        if not found and not signal_group(group, 0):
            return
    stopped: Set[Process] = set()
    for _ in range(ROUNDS):
        signal_group(group, signal.SIGSTOP)
        new = family(group, mark, known | told | stopped) - stopped
        if not new:
            break
        for process in new:
            send(process, signal.SIGSTOP)
        stopped |= new
    signal_group(group, signal.SIGKILL)
    for process in stopped:
        send(process, signal.SIGKILL)


def watch(parent: int, group: int, mark: str, grace: float) -> None:
    """Run beside each server, in a session of its own: when `parent`, the program that started the server, is
    gone without ending it (SIGKILL, SIGTERM's default: no interpreter exit), `end` what the server left."""
    while os.getppid() == parent:
        time.sleep(0.2)
    end(group, mark, set(), grace)


if __name__ == "__main__":  # `python -I -S processes.py PARENT GROUP MARK GRACE`, started by stdio.py
    watch(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], float(sys.argv[4]))
