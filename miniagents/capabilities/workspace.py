"""`Workspace`: a capability that lets a model read, search and optionally write the files of one folder.

Paths. A `Workspace` never lets a model reach outside its root: `..`, absolute paths, NUL bytes, over-long names,
symbolic links that lead out (also through intermediate folders) and device files, FIFOs and sockets are
refused with a message the model can read (a `ToolError`), never with the host's absolute path; a backslash
is a character of a name (as POSIX has it), never a separator. Checking a
path by name and then opening it by name leaves a window in which another process can swap a folder for a
link to the outside, so no path below the root is ever opened by name: each name is opened relative to its
folder's descriptor (`dir_fd`) with O_NOFOLLOW (and O_DIRECTORY for folders; O_PATH, on Linux, for a folder
only gone through: search permission suffices, as for any program). A symbolic link is read and
followed here, one name at a time, its `..` going back to a folder already open and never above the root; an
absolute link must name a place below the root. A name swapped for a link between the look and the open
fails the open, and is looked at again. Listing and searching walk folders the same way (they do not enter
links to folders). Any operating-system error reaches the model as a message naming its own path.

Writing makes a new temporary file in the target's folder and renames it over the target (`os.replace`,
relative to the folder's descriptor), keeping an existing file's permission bits (and refusing a file they
forbid this process to write: the rename would not ask them): readers see the old file or
the new one, never half of it; a link swapped in at the last moment is replaced, not followed; and a hard link
to a file outside the root is replaced, never written through. Reading a hard link reads the file it names: a
hard link *is* that file, no different from its other names; the model cannot make one, and whoever can put
one in the root could as well copy the file there. The root's own path is trusted: it is resolved once, when
the Workspace is made, and opened (without following a link) at each call.

Platforms without descriptor-relative calls (Windows has no O_NOFOLLOW, O_DIRECTORY or `dir_fd`) cannot do
this; a Workspace refuses to be made there (a `UserError`) rather than fall back to checks a race gets round.

Regular expressions. Python's `re` backtracks: `(a+)+$` takes time exponential in the line's length, and the
match holds the interpreter lock, so no other thread runs until it ends, and a thread with a timeout cannot
stop it. Spotting such patterns first (nested repeats, backreferences in `sre_parse`'s tree) refuses useful
patterns and still misses others (overlapping alternatives: `(a|aa)+$`); an engine of our own with a
linear-time guarantee would be pure Python, far slower, and only a subset of the syntax the model knows. So
a regex search matches in a child Python process (`python -I -S`): this process reads the files (through the
checks above) and sends their lines down a pipe, the child sends back the matches. The child bounds itself,
so it ends even if this process is killed: the processor time it spends matching is counted by the system
(`ITIMER_PROF`, armed only while it matches, so neither this process's reading nor the child's decoding
counts) and the system ends it once that reaches `regex_seconds` (2 s); it also ends when its input ends or
its parent is gone. The model then reads that its pattern took too long. This process's waits on the child are
bounded too (starting: `START_SECONDS`; all later waits together: `regex_seconds` plus that, whatever the
machine's load), and it only waits on pipes meanwhile, so its other threads keep running. The child is a real
Python of this version: `sys.executable` when it is one, else the interpreter next to it (a host program that
embeds Python has its own `sys.executable`); a program not named like a Python is never started, and one that
does not answer as the matcher does is not believed. With none, the model reads that the search could not
run. The price is
starting an interpreter for each regex search (benchmarks/workspace.py). Plain-text search runs here: it is
linear in the text.

Every name the model reads (a path, a listed or matched file) has its control and other unprintable
characters escaped (`\\n`, `\\x1b`, `\\u2028`) and its backslashes doubled (so no two names look alike), and so
do line separators inside a match's text, so no name or line can forge another line of an answer.
"""
from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import re
import secrets
import signal
import stat
import sys
import threading
import time
from typing import Any, Callable, Iterator, Optional, Union

from ..errors import UserError, needs
from ..tool import ToolError, function_tool
from . import Capability

subprocess = needs("subprocess", f"Workspace (the shell {__name__.rpartition('.')[0]})")  # the typed error on import

_NOFOLLOW, _DIRECTORY = getattr(os, "O_NOFOLLOW", 0), getattr(os, "O_DIRECTORY", 0)
_FOLDER_FLAGS = os.O_RDONLY | _NOFOLLOW | _DIRECTORY  # a folder to be listed: needs read permission
# A folder on a path's way, only gone through: where the system has O_PATH (Linux), opened as the system's own path
# lookup goes through it, needing search permission only (a folder of mode 0711 is passed, as by any program); as
# pinned as a readable descriptor, and still never through a link (O_NOFOLLOW with O_DIRECTORY refuses one).
_WAY_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | _NOFOLLOW | _DIRECTORY
_FILE_FLAGS = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
_RELATIVE_CALLS = bool(_NOFOLLOW and _DIRECTORY and os.scandir in os.supports_fd and
                       {os.open, os.stat, os.readlink, os.mkdir, os.rename, os.unlink, os.access} <= os.supports_dir_fd)

# The child that runs a regex search. argv: its budget of processor seconds for matching, its parent's process
# id. It first says who it is (so a program that is not this matcher is never believed); then reads a line
# [pattern, most matches], then one JSON list per file, that file's lines, and answers [file number, line number,
# text] per match (201 characters: more says the line was cut), stopping at the most. It ends by itself: SIGPROF's
# default action ends it once its matching has used its budget of processor time (the timer runs only while it
# matches), its input ending ends it, and a thread ends it when its parent is gone (a process the parent forked may
# still hold the pipe open).
_MATCHER = """
import json, os, re, signal, sys, threading, time
budget, parent = max(float(sys.argv[1]), 0.001), int(sys.argv[2])
signal.signal(signal.SIGPROF, signal.SIG_DFL)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGPROF})
def orphaned():
    while os.getppid() == parent:
        time.sleep(0.2)
    os._exit(70)
threading.Thread(target=orphaned, daemon=True).start()
sys.stdout.write(json.dumps(["miniagents matcher"] + list(sys.version_info[:2])) + "\\n")
sys.stdout.flush()
pattern, limit = json.loads(sys.stdin.readline())
search, found = re.compile(pattern).search, 0
for file, record in enumerate(sys.stdin, 1):
    lines = json.loads(record)
    signal.setitimer(signal.ITIMER_PROF, budget)
    for number, line in enumerate(lines, 1):
        if search(line):
            sys.stdout.write(json.dumps([file, number, line[:201]]) + "\\n")
            found += 1
            if found >= limit:
                sys.stdout.flush()
                os._exit(0)
    budget = max(signal.setitimer(signal.ITIMER_PROF, 0)[0], 0.001)
sys.stdout.flush()
"""
START_SECONDS = 10.0  # how long a matcher may take to start and say who it is (a loaded machine is slow)
_PYTHON_NAME = re.compile(r"(python|pypy)[0-9.]*(-?[a-z]+)?(\.exe)?", re.IGNORECASE)  # what may be started as one
_last_python: Optional[str] = None  # the interpreter the last regex search ran in: tried first


def _pythons() -> list:
    """The programs a regex search may run its matcher in, the one that worked last first: `sys.executable`, the
    interpreter it was made from (a virtual environment's), and this version's next to the installation (a host
    program that embeds Python, whose `sys.executable` is the host). Only existing programs named like a Python
    interpreter: starting a host program (which may be a server or the very application running this) with
    Python's arguments could do anything."""
    version = "python%d.%d" % sys.version_info[:2]
    found = [_last_python, sys.executable, getattr(sys, "_base_executable", None)]
    for prefix in (sys.exec_prefix, sys.base_exec_prefix):
        if isinstance(prefix, str) and prefix:
            found += [os.path.join(prefix, "bin", version), os.path.join(prefix, "bin", "python3")]
    usable = []
    for path in found:
        if isinstance(path, str) and path and path not in usable and \
                _PYTHON_NAME.fullmatch(os.path.basename(path)) and os.path.isfile(path) and os.access(path, os.X_OK):
            usable.append(path)
    return usable


def shown_name(text: str) -> str:
    """A name as the model reads it: every character that is not printable (controls, line and paragraph
    separators, format characters, undecodable bytes) escaped as Python writes it, so it is one line that
    says what it is; and a backslash always doubled, so a name holding a newline (`a\\nb`) and one holding a
    backslash and an n (`a\\\\nb`) never look alike."""
    if text.isprintable() and "\\" not in text:
        return text
    return "".join(ch if ch.isprintable() and ch != "\\" else _escape(ch) for ch in text)


_LINE_BREAKS = re.compile("[\\x0b\\x0c\\x1c\\x1d\\x1e\\x85\\u2028\\u2029\\r\\n]")  # what str.splitlines splits at


def one_line(text: str) -> str:
    """A line of a file as a match shows it: the characters other programs take for line breaks escaped."""
    return _LINE_BREAKS.sub(lambda m: _escape(m.group()), text)


def _match(name: str, number: int, line: str) -> str:
    """One line of a search's answer: where, and the line's first 200 characters (a longer line is marked cut, as
    read_file marks it)."""
    return f"{name}:{number}: {one_line(line[:200])}" + (" [line cut]" if len(line) > 200 else "")


def _escape(ch: str) -> str:
    """One character as an escape: \\n, \\r, \\t, else as `ascii()` writes it (\\x1b, \\u2028, \\udcff, \\\\)."""
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(ch) or ascii(ch)[1:-1]


class _Capped(io.RawIOBase):
    """A file's first `limit` bytes: what reads past them get is the end of the file; `more` says whether there
    was more."""

    def __init__(self, handle: Any, limit: int):
        super().__init__()
        self._handle, self._left, self.more = handle, max(limit, 0), False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._left <= 0:
            self.more = self.more or bool(self._handle.peek(1))
            return 0
        view = memoryview(buffer).cast("B")[:self._left]
        count = self._handle.readinto(view) or 0
        self._left -= count
        return count


MAX_REGEX_SECONDS = 86400.0  # the longest matching budget a search is given, whatever regex_seconds says


def _seconds(value: Any) -> float:
    """`regex_seconds` as a budget the system can count: a number from a millisecond to a day (not a number: 2)."""
    number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 2.0
    return 2.0 if number != number else min(max(number, 0.001), MAX_REGEX_SECONDS)


class _Matcher:
    """A regex search's child process (`_MATCHER`) and every wait on it, each bounded: starting (it must say who it
    is within `START_SECONDS`), and the later waits (taking lines, giving its answers), which together may last the
    matching budget plus `START_SECONDS` before a watchdog thread kills it. The child also ends by itself (see
    `_MATCHER`); `timed_out` says its matching ran out of time, `status` is its exit status after `finish()`."""

    MAX_ANSWER_BYTES = 65536  # one answer line: [file, line, at most 201 characters, each escaped in 12 bytes]

    def __init__(self, python: str, seconds: float):
        self.seconds = _seconds(seconds)
        self.status: Optional[int] = None
        self.timed_out = False
        self._answers: list = []
        self._said = threading.Event()  # its first line came, or its output ended
        self._garbled = False
        self._changed = threading.Condition()
        self._deadline: Optional[float] = None  # when the wait in progress must have ended
        self._waited = 0.0  # seconds this process has waited on the child so far (its own reading not counted)
        self._over = False
        self.process: Any = None
        try:
            self.process = subprocess.Popen([python, "-I", "-S", "-c", _MATCHER, repr(self.seconds),
                                             str(os.getpid())], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=subprocess.DEVNULL)
        except (OSError, ValueError):
            return
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._watchdog = threading.Thread(target=self._watch, daemon=True)
        self._reader.start()
        self._watchdog.start()

    def started(self) -> bool:
        """Whether the child is this version's matcher: it said so (within `START_SECONDS`)."""
        if self.process is None:
            return False
        self._said.wait(START_SECONDS)
        try:
            said = json.loads(self._answers[0])
        except (IndexError, ValueError, RecursionError):
            said = None
        if said == ["miniagents matcher", *sys.version_info[:2]]:
            return True
        self._kill()
        return False

    def send(self, data: bytes) -> bool:
        """Give the child more input; False once it takes no more (it found enough, or was stopped)."""
        if self.process is None:
            return False
        with self._waiting():
            try:
                self.process.stdin.write(data)
                self.process.stdin.flush()  # now: the child matches while this process reads the next file
            except (OSError, ValueError):
                return False
        return True

    def finish(self) -> Optional[list]:
        """End the input, wait for the child's answers and its end (each wait bounded); its matches as
        [file, line, text], or None when what it said is not what the matcher says."""
        if self.process is None:
            return None
        with self._waiting():
            with contextlib.suppress(OSError, ValueError):
                self.process.stdin.close()
            self._reader.join()  # its output ends when it does, or when the watchdog stops it
        with self._changed:
            self._over = True
            self._changed.notify()
        self._watchdog.join()  # so no kill can reach the process id once it is reaped
        try:
            self.status = self.process.wait(START_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.status = self.process.wait()
        self.process.stdout.close()
        if self.status == -getattr(signal, "SIGPROF", -1):  # the system ended it: its matching used its time
            self.timed_out = True
        try:
            answers = [json.loads(line) for line in self._answers[1:] if line.endswith(b"\n")]
        except (ValueError, RecursionError):
            return None
        if self._garbled or not all(isinstance(a, list) and len(a) == 3 and type(a[0]) is int and type(a[1]) is int
                                    and isinstance(a[2], str) for a in answers):
            return None
        return answers

    def _read(self) -> None:
        try:
            while True:
                line = self.process.stdout.readline(self.MAX_ANSWER_BYTES)
                if not line:
                    return
                self._answers.append(line)
                self._said.set()
                if not line.endswith(b"\n") and len(line) == self.MAX_ANSWER_BYTES:
                    self._garbled = True  # not the matcher's answer: stop it rather than read on
                    self._kill()
                    return
        except (OSError, ValueError):
            return
        finally:
            self._said.set()

    @contextlib.contextmanager
    def _waiting(self) -> Iterator[None]:
        """A wait of this process on the child: all of them together may last `seconds + START_SECONDS`."""
        started = time.monotonic()
        with self._changed:
            self._deadline = started + self.seconds + START_SECONDS - self._waited
            self._changed.notify()
        try:
            yield
        finally:
            with self._changed:
                self._deadline = None
                self._waited += time.monotonic() - started
                self._changed.notify()

    def _watch(self) -> None:
        with self._changed:
            while not self._over:
                if self._deadline is None:
                    self._changed.wait()
                    continue
                left = self._deadline - time.monotonic()
                if left > 0:
                    self._changed.wait(left)
                    continue
                self.timed_out = True  # a wait on it ran out: it takes too long, whatever it does
                self._kill()
                self._deadline = None

    def _kill(self) -> None:
        with contextlib.suppress(OSError):
            self.process.kill()


class _LeadsOutside(ToolError):
    """The refusal of a path that a symbolic link leads outside the root."""

    def __init__(self, shown: str):
        super().__init__(f"Path refused: '{shown}' leads outside the workspace through a symbolic link.")


class Workspace(Capability):
    """The files of one folder, for a model to read (`list_files`, `read_file`, `search`) and, with
    `writable=True`, to write (`write_file`, which needs a person's approval unless `write_needs_approval`
    says otherwise). Every path is relative to `root`; whatever would leave it is refused with a message
    the model reads. Each tool's answer and work are bounded (the class attributes below)."""

    type = "workspace"
    max_lines = 200  # lines per read_file call
    max_line_chars = 2000  # longer lines are cut
    max_entries = 200  # entries per list_files call
    max_folder_names = 100_000  # names list_files or a search reads from one folder
    max_matches = 50  # matches per search
    max_search_files = 2000  # entries (files, links, folders) one search looks at
    max_search_depth = 64  # folder levels one search goes down
    max_file_bytes = 2_000_000  # search skips bigger files (and reads no more of one that grew); write_file's cap
    max_read_bytes = 32 * 2 ** 20  # bytes of a file one read_file call reads (from its start) at most
    max_path_chars, max_name_bytes = 1024, 255
    max_links = 40  # symbolic links followed for one path
    max_path_steps = 512  # names walked to find one path ('.' and '..' in its links' targets too)
    max_path_depth = 128  # folder levels one path goes down: each is held open while it is found (for '..')
    max_pattern_chars = 1000  # a search's text or regular expression
    regex_seconds = 2.0  # processor time a regex search may spend matching (its reading does not count)

    def __init__(self, root: Any, writable: bool = False, write_needs_approval: Union[bool, Callable] = True):
        if not _RELATIVE_CALLS:
            raise UserError("Workspace needs a system that opens files relative to a folder without following "
                            "links (O_NOFOLLOW, O_DIRECTORY, dir_fd); this one has not (Windows has not)")
        real = os.path.realpath(os.fspath(root))
        if not os.path.isdir(real):
            raise UserError(f"Workspace root {os.fspath(root)!r} is not a folder")
        self.root, self.writable, self.write_needs_approval = real, writable, write_needs_approval
        self._root_names = {real, os.path.abspath(os.fspath(root))}  # how an absolute link may name the root

    # --- paths -------------------------------------------------------------------------------------

    def _checked(self, path: str) -> tuple:
        """(the path's names, the path as the model should see it), or a ToolError saying why it is refused."""
        shown = "'" + shown_name(path if len(path) <= 120 else path[:120] + "...") + "'"  # as every message shows it
        if "\x00" in path:
            raise ToolError(f"Path refused: {shown} contains a NUL byte.")
        if len(path) > self.max_path_chars:
            raise ToolError(f"Path refused: it is longer than {self.max_path_chars} characters.")
        if path.startswith("/"):  # a backslash is a character of a name, as on the POSIX systems it runs on
            raise ToolError(f"Path refused: {shown} is absolute; use a path relative to the workspace root, "
                            "such as 'docs/guide.md' ('.' is the root).")
        parts = [p for p in path.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise ToolError(f"Path refused: {shown} contains '..'; paths must stay inside the workspace.")
        if any(len(p.encode("utf-8", "surrogatepass")) > self.max_name_bytes for p in parts):
            raise ToolError(f"Path refused: a name in it is longer than {self.max_name_bytes} bytes.")
        for part in parts:
            try:
                os.fsencode(part)
            except UnicodeEncodeError:
                raise ToolError(f"Path refused: {shown} is not a valid file name here.") from None
        return parts, shown_name("/".join(parts)) or "."

    def _locate(self, parts: list, shown: str, make_folders: bool = False) -> tuple:
        """(descriptor of the folder holding the path's last name, that name, its lstat or None if nothing
        has it); '.' as the name means the folder itself. Links are followed here, one name at a time, and
        never out of the root, each name walked counted against `max_path_steps` (a link's target of 4,095 bytes
        such as 'd/../d/../' is 1,600 of them), and the folders held open on the way against `max_path_depth`
        (a link's '..' goes back to one; a process has a limited number). With `make_folders`, missing folders
        on the way are made. The caller closes the descriptor; an OSError is the caller's to word."""
        folders = [os.open(self.root, _WAY_FLAGS)]  # the root, then each folder down to the current one
        todo = list(reversed(parts))  # names still to go, the next last
        turns = steps = 0  # links followed (and names looked at again); names walked
        made = False  # whether a folder may have been made (so the rest of the path was checked first)
        try:
            while todo:
                steps += 1
                if steps > self.max_path_steps:
                    raise self._too_long(shown)
                name = todo.pop()
                if name in ("", "."):
                    continue
                if name == "..":  # from a link's target
                    if len(folders) == 1:
                        raise _LeadsOutside(shown)
                    os.close(folders.pop())
                    continue
                info = _look(name, folders[-1])
                if info is not None and stat.S_ISLNK(info.st_mode):
                    turns = self._turn(turns, shown)
                    todo.extend(reversed(self._link_names(name, folders, shown)))
                elif not todo:
                    return folders.pop(), name, info
                elif len(folders) > self.max_path_depth:
                    raise self._too_deep(shown)
                else:
                    if info is None and make_folders:
                        made = made or self._fits(todo, len(folders) + 1, steps, shown)
                        with contextlib.suppress(FileExistsError):
                            os.mkdir(name, dir_fd=folders[-1])
                    opened = _open_folder(name, folders[-1])
                    if opened is None:  # it became a link or a folder since the look: look again
                        turns = self._turn(turns, shown)
                        todo.append(name)
                    else:
                        folders.append(opened)
            folder = folders.pop()
            return folder, ".", os.fstat(folder)
        finally:
            for folder in folders:
                os.close(folder)

    def _fits(self, todo: list, depth: int, steps: int, shown: str) -> bool:
        """True, or the refusal a path would meet after making folders: called before its first missing folder
        is made (`depth` folders down with it), it walks the names left as `_locate` would, so a path refused for
        its names walked, its depth or a '..' above the root makes no folder. Below a missing folder nothing
        exists, so no link can lengthen the rest (only a '..' back into folders that exist can reach one)."""
        for left, name in enumerate(reversed(todo), 1):
            steps += 1
            if steps > self.max_path_steps:
                raise self._too_long(shown)
            if name == "..":
                if depth == 1:
                    raise _LeadsOutside(shown)
                depth -= 1
            elif name not in ("", ".") and left < len(todo):
                if depth > self.max_path_depth:
                    raise self._too_deep(shown)
                depth += 1
        return True

    def _too_long(self, shown: str) -> ToolError:
        return ToolError(f"Path refused: finding '{shown}' walks more than {self.max_path_steps} names (its symbolic "
                         "links' included).")

    def _too_deep(self, shown: str) -> ToolError:
        return ToolError(f"Path refused: '{shown}' goes more than {self.max_path_depth} folders down.")

    def _turn(self, turns: int, shown: str) -> int:
        """One more link followed (or name looked at again) for a path, within `max_links`."""
        if turns >= self.max_links:
            raise ToolError(f"Path refused: '{shown}' goes through more than {self.max_links} symbolic links "
                            "(or keeps changing).")
        return turns + 1

    def _link_names(self, name: str, folders: list, shown: str) -> list:
        """The names to follow for the link `name` in the folder `folders[-1]`: its target's, from that folder,
        or (an absolute target below the root) from the root, closing the folders between; just `name` again
        if it is no longer a link."""
        target = _link_target(name, folders[-1])
        if target is None:
            return [name]
        if os.path.isabs(target):
            target = self._below_root(target, shown)
            for folder in folders[1:]:
                os.close(folder)
            del folders[1:]
        return target.split("/")

    def _below_root(self, target: str, shown: str) -> str:
        """An absolute link target as a path relative to the root, or _LeadsOutside."""
        for root in self._root_names:
            prefix = root.rstrip("/") + "/"
            if target == root or target.startswith(prefix):
                return target[len(prefix):]
        raise _LeadsOutside(shown)

    @contextlib.contextmanager
    def _at(self, path: str, doing: str, make_folders: bool = False) -> Iterator[tuple]:
        """(folder descriptor, name, lstat or None, the path as shown) for a model's path; any OSError inside
        becomes the model's message ("Cannot <doing> '<path>': <why>."). Closes the descriptor."""
        parts, shown = self._checked(path)
        try:
            folder, name, info = self._locate(parts, shown, make_folders)
            try:
                yield folder, name, info, shown
            finally:
                os.close(folder)
        except OSError as error:
            raise ToolError(f"Cannot {doing} '{shown}': {error.strerror or 'system error'}.") from None

    def _open_text(self, folder: int, name: str, info: Any, shown: str) -> Any:
        """Open a regular file for reading (never a device, FIFO or socket), or raise ToolError."""
        if info is None:
            raise ToolError(f"Cannot read '{shown}': {os.strerror(errno.ENOENT)}.")
        if stat.S_ISDIR(info.st_mode):
            raise ToolError(f"'{shown}' is a folder; use list_files to see what it holds.")
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(f"Path refused: '{shown}' is not a regular file (a device, FIFO or socket).")
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=folder)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise ToolError(f"'{shown}' changed while it was being opened; try again.") from None
            raise
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # it changed between the look and the open
            os.close(fd)
            raise ToolError(f"Path refused: '{shown}' is not a regular file (a device, FIFO or socket).")
        handle = os.fdopen(fd, "rb")
        if b"\x00" in handle.peek(8192)[:8192]:
            handle.close()
            raise ToolError(f"'{shown}' is a binary file; only text files can be read.")
        return handle

    @contextlib.contextmanager
    def _reading(self, handle: Any, limit: int, chars: int) -> Iterator[Any]:
        """(lines, the reader's `_Capped`): `lines` gives (line text without its newline, whether it was cut) for
        each line of the first `limit` bytes of the open `handle`, holding at most `chars` characters of any line
        in memory (the rest of a longer one skipped; -1: whole lines, as search needs, which `limit` bounds);
        `capped.more` then says whether the file went on past them. Closes all it opened (the handle stays the
        caller's)."""
        capped = _Capped(handle, limit)
        text = io.TextIOWrapper(io.BufferedReader(capped), encoding="utf-8", errors="replace")
        lines = self._lines(text, chars)
        try:
            yield lines, capped
        finally:
            lines.close()
            text.close()

    def _lines(self, text: Any, chars: int) -> Iterator[tuple]:
        """(line, whether it was cut) of `text`, at most `chars` characters of each (-1: whole lines). One more
        character is read than shown: a line of exactly `chars` is whole, only one that goes on is cut."""
        size = chars + 1 if chars >= 0 else -1
        while True:
            line = text.readline(size)
            if not line:
                return
            cut = len(line) == size and not line.endswith("\n")
            if cut:  # skip the rest of a long line
                rest, line = line, line[:chars]
                while rest and not rest.endswith("\n"):
                    rest = text.readline(size)
            yield line.rstrip("\r\n"), cut

    def _read_lines(self, handle: Any, limit: int) -> list:
        """Every line (text only) of the first `limit` bytes of the open `handle`: what a regex search sends its
        matcher for one file."""
        with self._reading(handle, limit, -1) as (lines, _):
            return [line for line, _ in lines]

    # --- the tools' work ---------------------------------------------------------------------------

    def list_files(self, path: str = ".") -> str:
        parts = self._checked(path)[0] or ["."]
        with self._at(path, "list") as (folder, name, info, shown):
            if info is None:
                raise ToolError(f"'{shown}' does not exist.")
            if not stat.S_ISDIR(info.st_mode):
                raise ToolError(f"'{shown}' is not a folder.")
            listed = os.open(name, _FOLDER_FLAGS, dir_fd=folder)
            try:
                names, count = self._names(listed, self.max_entries)
                where = "/".join(parts)
                lines = [self._describe(listed, each, f"{where}/{each}") for each in names]
            finally:
                os.close(listed)
        if count > self.max_folder_names:
            more = self.max_folder_names - len(names)  # 0 when max_entries is as large
            lines.append(f"... and {f'more than {more}' if more else 'still'} more entries (the names shown are "
                         f"the first in name order of the {self.max_folder_names} read)")
        elif count > len(names):
            lines.append(f"... and {count - len(names)} more entries")
        return f"{shown}:\n" + "\n".join(lines) if lines else f"'{shown}' is empty."

    def _names(self, folder: int, keep: int) -> tuple:
        """(the first `keep` names of the open `folder` in name order, how many names it holds): of at most
        `max_folder_names` read (more make the count that plus one), at most twice `keep` of them held at once,
        so a folder of millions of names costs no more."""
        names, count = [], 0
        with os.scandir(folder) as entries:
            for count, entry in enumerate(entries, 1):
                if count > self.max_folder_names:
                    break
                names.append(entry.name)
                if len(names) > 2 * keep:
                    names = sorted(names)[:keep]
        return sorted(names)[:keep], count

    def _describe(self, folder: int, name: str, path: str) -> str:
        """One list_files line: a folder, a file's size, or why it cannot be used; links are followed. `path`
        (from the root) is how to reach it, `name` is shown escaped."""
        try:
            info = _look(name, folder)
        except OSError as error:  # the folder's names can be read but not looked at (no search permission)
            return f"{shown_name(name)}  (cannot be read: {error.strerror or 'system error'})"
        name = shown_name(name)
        if info is not None and stat.S_ISLNK(info.st_mode):  # followed as read_file would, its refusals naming it
            try:
                found, _, info = self._locate(self._checked(path)[0], name)
                os.close(found)
            except _LeadsOutside:
                return f"{name}  (link outside the workspace; refused)"
            except ToolError as error:
                return f"{name}  (link cannot be followed: {error.message.rstrip('.')})"
            except OSError as error:  # only a link to nothing is broken
                if error.errno != errno.ENOENT:
                    return f"{name}  (link cannot be followed: {error.strerror or 'system error'})"
                info = None
        if info is None:
            return f"{name}  (broken link)"
        if stat.S_ISDIR(info.st_mode):
            return f"{name}/"
        if stat.S_ISREG(info.st_mode):
            return f"{name}  ({info.st_size} bytes)"
        return f"{name}  (special file; refused)"

    def read_file(self, path: str, start_line: int = 1, end_line: Optional[int] = None) -> str:
        if start_line < 1 or (end_line is not None and end_line < start_line):
            raise ToolError("start_line must be 1 or more, and end_line (if given) at least start_line.")
        last = start_line + self.max_lines - 1 if end_line is None else min(end_line, start_line + self.max_lines - 1)
        shown_lines, count, more = [], 0, False
        with self._at(path, "read") as (folder, name, info, shown):
            with self._open_text(folder, name, info, shown) as handle, \
                    self._reading(handle, self.max_read_bytes, self.max_line_chars) as (lines, capped):
                for count, (line, cut) in enumerate(lines, 1):
                    if count > last:
                        more = True
                        break
                    if count >= start_line:
                        shown_lines.append(f"{count:>6}\t{line}" + (" [line cut]" if cut else ""))
                stopped = capped.more and not more  # the bytes one call reads ran out before the lines asked for
        bound = (f"read_file reads at most the first {self.max_read_bytes} bytes of a file, which end in line "
                 f"{count}")
        if count == 0 and not stopped:
            return f"'{shown}' is empty."
        if not shown_lines:
            if stopped:
                return f"'{shown}': start_line {start_line} is past what can be read: {bound}."
            return f"'{shown}' has {count} lines; start_line {start_line} is past its end."
        if stopped:
            return "\n".join(shown_lines) + f"\n(stopped: {bound}; the rest of '{shown}' cannot be shown)"
        note = f"\n(lines {start_line}-{last} of '{shown}'; more follow: call read_file with start_line={last + 1})" \
            if more and (end_line is None or end_line > last) else ""
        return "\n".join(shown_lines) + note

    def search(self, pattern: str, path: str = ".", regex: bool = False) -> str:
        if not pattern:
            raise ToolError("The search pattern is empty.")
        if len(pattern) > self.max_pattern_chars:  # a text too: it is echoed in the answer
            raise ToolError(f"The {'regular expression' if regex else 'search text'} is longer than "
                            f"{self.max_pattern_chars} characters; use a shorter one.")
        if regex:
            try:
                re.compile(pattern)
            except (re.error, RecursionError, OverflowError) as error:  # nested too deeply, a count too large
                raise ToolError(f"Invalid regular expression {pattern!r}: {error}.") from None
        notes: list = []
        parts = self._checked(path)[0]
        with self._at(path, "search") as (folder, name, info, shown):
            if info is None:
                raise ToolError(f"'{shown}' does not exist.")
            files = self._searched_files(folder, name, info, parts, notes)
            try:
                found = self._regex_matches(pattern, files) if regex else self._text_matches(pattern, files)
            finally:
                files.close()
        if len(found) >= self.max_matches:
            notes.insert(0, f"(stopped at {self.max_matches} matches; narrow the pattern or the path)")
        if not found:
            return f"No matches for {pattern!r} in '{shown}'." + "".join(f"\n{note}" for note in notes)
        return "\n".join(found + notes)

    def _searched_files(self, folder: int, name: str, info: Any, where: list, notes: list) -> Any:
        """(path as shown, open text handle) for each text file a search reads, stopping once it has looked at
        `max_search_files` entries (every one counts: files it passes over, links, folders, so the cap bounds its
        work); the caller closes each handle (and the generator: a handle it made and did not hand over is closed
        then). `where` is the searched path's names. Why a search stopped early goes into `notes`."""
        if not stat.S_ISDIR(info.st_mode):  # one file, named: what a search passes over is said, as read_file says it
            shown = shown_name("/".join(where))
            if stat.S_ISREG(info.st_mode) and info.st_size > self.max_file_bytes:
                raise ToolError(f"'{shown}' is larger than the {self.max_file_bytes} bytes a search reads of a file; "
                                "read it with read_file.")
            yield shown, self._open_text(folder, name, info, shown)
            return
        top = os.open(name, _FOLDER_FLAGS, dir_fd=folder)
        try:
            walk = self._walk(top, where, 0, notes)
            try:
                for count, found in enumerate(walk, 1):
                    if count > self.max_search_files:
                        if found[1] is not None:
                            found[1].close()
                        notes.append(f"(stopped after looking at {self.max_search_files} entries; search a "
                                     "narrower path)")
                        return
                    if found[1] is None:
                        continue
                    try:
                        yield found
                    except GeneratorExit:
                        found[1].close()
                        raise
            finally:
                walk.close()
        finally:
            os.close(top)

    def _walk(self, folder: int, where: list, depth: int, notes: list) -> Any:
        """(path as shown, open text handle, or None for what a search passes over) for each entry looked at in
        the open `folder` and below: a folder's entries in name order (a link is read if it names a file inside
        the root), then its folders' entries; links to folders are not entered, and a folder or a name that
        cannot be read is passed over. So is what no tool could open (a path longer than `max_path_chars`, or more
        than `max_path_depth` folders down): a match there could not be read, and its shown path is unbounded."""
        if len(where) > self.max_path_depth:
            _note(notes, f"(folders more than {self.max_path_depth} levels below the root were not searched: no "
                         "tool opens what they hold)")
            return
        try:
            names, count = self._names(folder, self.max_search_files + 1)  # one more than it looks at: it stops
        except OSError:
            return
        if count > self.max_folder_names:
            _note(notes, f"(a folder holds more than the {self.max_folder_names} names read of one; those in "
                         "name order after them were not searched)")
        folders = []
        for name in names:
            if len("/".join(where + [name])) > self.max_path_chars:
                _note(notes, f"(paths longer than {self.max_path_chars} characters were not searched: no tool opens "
                             "them)")
                yield "", None
                continue
            try:
                info = _look(name, folder)
            except OSError:  # the folder's names can be read but not looked at (no search permission)
                info = None
            if info is None:
                handle = None
            elif stat.S_ISDIR(info.st_mode):
                folders.append(name)
                handle = None
            elif stat.S_ISLNK(info.st_mode):
                handle = self._searchable_link(where + [name])
            else:
                handle = self._searchable(folder, name, info)
            try:
                yield shown_name("/".join(where + [name])), handle
            except GeneratorExit:  # the search stopped before it took this file
                if handle is not None:
                    handle.close()
                raise
        if folders and depth >= self.max_search_depth:
            _note(notes, f"(folders more than {self.max_search_depth} levels down were not searched)")
            return
        for name in folders:
            try:
                below = os.open(name, _FOLDER_FLAGS, dir_fd=folder)
            except OSError:
                continue
            try:
                yield from self._walk(below, where + [name], depth + 1, notes)
            finally:
                os.close(below)

    def _searchable(self, folder: int, name: str, info: Any) -> Any:
        """An open text handle, or None for what a search passes over (too big, binary, special, gone)."""
        if not stat.S_ISREG(info.st_mode) or info.st_size > self.max_file_bytes:
            return None
        try:
            return self._open_text(folder, name, info, name)
        except (OSError, ToolError):
            return None

    def _searchable_link(self, parts: list) -> Any:
        try:
            with self._at("/".join(parts), "search") as (folder, name, info, _):
                return None if info is None else self._searchable(folder, name, info)
        except ToolError:  # it leads outside, or nowhere
            return None

    def _text_matches(self, pattern: str, files: Any) -> list:
        needle, found = pattern.casefold(), []
        for name, handle in files:
            with handle, self._reading(handle, self.max_file_bytes, -1) as (lines, _):
                for number, (line, _) in enumerate(lines, 1):
                    if needle in line.casefold():
                        found.append(_match(name, number, line))
                        if len(found) >= self.max_matches:
                            return found
        return found

    def _regex_matches(self, pattern: str, files: Any) -> list:
        """The matches of `pattern`, found by a child process that ends once its matching has used
        `regex_seconds` of processor time (or its parent is gone); this process's reading is not counted."""
        global _last_python
        child = None
        for python in _pythons():
            child = _Matcher(python, self.regex_seconds)
            if child.started():
                _last_python = python
                break
            child.finish()
            child = None
        if child is None:
            raise ToolError("Regular-expression search could not run here: no Python interpreter was found to run it "
                            "in (this program's own is not one, or cannot be started); search for plain text "
                            "instead (regex=false).")
        names = []
        try:
            child.send(json.dumps([pattern, self.max_matches]).encode() + b"\n")
            for name, handle in files:
                with handle:
                    lines = self._read_lines(handle, self.max_file_bytes)  # not counted: the child waits, idle
                names.append(name)
                if not child.send(json.dumps(lines).encode() + b"\n"):
                    break  # the child has found enough, or was stopped
        finally:
            answers = child.finish()
        if child.timed_out:
            raise ToolError(f"Search stopped: the regular expression {pattern!r} did not finish within "
                            f"{child.seconds:g} seconds (a pattern with nested repeats such as '(a+)+' can "
                            "take exponential time); simplify it or search a narrower path.")
        if child.status != 0 or answers is None:
            raise ToolError(f"Search failed: the process matching the regular expression stopped (exit status "
                            f"{child.status}); try a simpler pattern or a plain-text search.")
        return [_match(names[file - 1], number, text) for file, number, text in answers]

    def write_file(self, path: str, content: str) -> str:
        if not self.writable:
            raise ToolError("This workspace is read-only.")
        data = content.encode("utf-8", "replace")
        if len(data) > self.max_file_bytes:
            raise ToolError(f"Refused: the content is larger than {self.max_file_bytes} bytes.")
        with self._at(path, "write", make_folders=True) as (folder, name, info, shown):
            if name == "." or info is not None and stat.S_ISDIR(info.st_mode):
                raise ToolError(f"'{shown}' is a folder; give a file path.")
            if info is not None and not stat.S_ISREG(info.st_mode):
                raise ToolError(f"Path refused: '{shown}' is not a regular file (a device, FIFO or socket).")
            if info is not None and not os.access(name, os.W_OK, dir_fd=folder, follow_symlinks=False):
                raise ToolError(f"Refused: '{shown}' is read-only (its permissions forbid writing); it is unchanged.")
            _replace(folder, name, data, None if info is None else stat.S_IMODE(info.st_mode) & 0o777)
        return f"Wrote {len(data)} bytes to '{shown}'."

    # --- the capability ----------------------------------------------------------------------------

    def instructions(self, manifest: Any = None) -> str:
        text = ("You can read the files of a workspace folder with list_files, read_file and search. Paths are "
                "relative to the workspace root ('.' is the root); read_file shows numbered lines, "
                f"at most {self.max_lines} per call.")
        if self.writable:
            text += " write_file creates or replaces a file; a person may have to approve each write."
        return text

    def tools(self) -> list:
        workspace = self

        @function_tool
        def list_files(path: str = ".") -> str:
            """List the files and folders in a folder of the workspace.

            Args:
                path: A folder relative to the workspace root; "." is the root.
            """
            return workspace.list_files(path)

        @function_tool
        def read_file(path: str, start_line: int = 1, end_line: Optional[int] = None) -> str:
            """Read a text file of the workspace, with line numbers. Large files are shown in slices.

            Args:
                path: A file relative to the workspace root.
                start_line: The first line to show (1 is the first line of the file).
                end_line: The last line to show, or null for as many as one call shows.
            """
            return workspace.read_file(path, start_line, end_line)

        @function_tool
        def search(pattern: str, path: str = ".", regex: bool = False) -> str:
            """Find lines containing a text (ignoring case) or matching a regular expression.

            Args:
                pattern: The text to find, or a Python regular expression when regex is true.
                path: A folder or file relative to the workspace root; "." searches everything.
                regex: Whether pattern is a regular expression.
            """
            return workspace.search(pattern, path, regex)

        tools: list = [list_files, read_file, search]
        if self.writable:
            @function_tool(needs_approval=self.write_needs_approval)
            def write_file(path: str, content: str) -> str:
                """Create or replace a text file of the workspace (folders are created as needed).

                Args:
                    path: A file relative to the workspace root.
                    content: The whole new text of the file.
                """
                return workspace.write_file(path, content)

            tools.append(write_file)
        return tools


def _note(notes: list, note: str) -> None:
    """Add `note` to a search's notes, once."""
    if note not in notes:
        notes.append(note)


def _look(name: str, folder: int) -> Any:
    """The lstat of `name` in the open `folder`, or None if nothing has that name."""
    try:
        return os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _open_folder(name: str, folder: int) -> Optional[int]:
    """A descriptor of the folder `name` in the open `folder`, never through a link; None if `name` changed
    since it was looked at (it is a link now, or a folder again): look again."""
    try:
        return os.open(name, _WAY_FLAGS, dir_fd=folder)
    except OSError as error:
        now = _look(name, folder)
        if error.errno in (errno.ELOOP, errno.ENOTDIR) and now is not None and \
                (stat.S_ISLNK(now.st_mode) or stat.S_ISDIR(now.st_mode)):
            return None
        raise


def _link_target(name: str, folder: int) -> Optional[str]:
    """What the link `name` in the open `folder` points to, or None if it is no longer a link."""
    try:
        return os.readlink(name, dir_fd=folder)
    except OSError as error:
        if error.errno in (errno.EINVAL, errno.ENOENT):
            return None
        raise


def _replace(folder: int, name: str, data: bytes, mode: Optional[int]) -> None:
    """Put `data` in place of `name` in the open `folder`: written to a new file there, then renamed over it
    (with `mode`, an existing file's permission bits)."""
    temporary = f".{secrets.token_hex(8)}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o644 if mode is None else mode,
                 dir_fd=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            if mode is not None:
                os.chmod(handle.fileno(), mode)  # the umask does not apply to a file that already had its mode
            handle.write(data)
        os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=folder)
        raise
