"""`Workspace`: a capability that lets a model read, search and optionally write the files of one folder.

A `Workspace` never lets a model reach outside its root: `..`, absolute paths, NUL bytes, over-long names,
symbolic links that lead out (also through intermediate folders) and device files, FIFOs and sockets are
refused with a message the model can read (a `ToolError`), never with the host's absolute path.
"""
from __future__ import annotations

import os
import re
import stat
from typing import Any, Callable, Optional, Union

from ..errors import UserError
from ..tool import ToolError, function_tool
from . import Capability


class Workspace(Capability):
    """The files of one folder, for a model to read (`list_files`, `read_file`, `search`) and, with
    `writable=True`, to write (`write_file`, which needs a person's approval unless `write_needs_approval`
    says otherwise). Every path is relative to `root`; whatever would leave it is refused with a message
    the model reads. Each tool's answer is bounded (the class attributes below)."""

    type = "workspace"
    max_lines = 200  # lines per read_file call
    max_line_chars = 2000  # longer lines are cut
    max_entries = 200  # entries per list_files call
    max_matches = 50  # matches per search
    max_search_files = 2000  # files one search looks at
    max_file_bytes = 2_000_000  # search skips bigger files; write_file refuses bigger content
    max_path_chars, max_name_bytes = 1024, 255

    def __init__(self, root: Any, writable: bool = False, write_needs_approval: Union[bool, Callable] = True):
        real = os.path.realpath(os.fspath(root))
        if not os.path.isdir(real):
            raise UserError(f"Workspace root {os.fspath(root)!r} is not a folder")
        self.root, self.writable, self.write_needs_approval = real, writable, write_needs_approval

    # --- paths -------------------------------------------------------------------------------------

    def resolve(self, path: str) -> tuple:
        """(real path inside the root, the path as the model should see it), or a ToolError saying why not."""
        shown = repr(path if len(path) <= 120 else path[:120] + "...")
        if "\x00" in path:
            raise ToolError(f"Path refused: {shown} contains a NUL byte.")
        if len(path) > self.max_path_chars:
            raise ToolError(f"Path refused: it is longer than {self.max_path_chars} characters.")
        plain = path.replace("\\", "/")
        if plain.startswith("/") or os.path.splitdrive(path)[0] or os.path.isabs(path):
            raise ToolError(f"Path refused: {shown} is absolute; use a path relative to the workspace root, "
                            "such as 'docs/guide.md' ('.' is the root).")
        parts = [p for p in plain.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise ToolError(f"Path refused: {shown} contains '..'; paths must stay inside the workspace.")
        if any(len(p.encode("utf-8", "surrogatepass")) > self.max_name_bytes for p in parts):
            raise ToolError(f"Path refused: a name in it is longer than {self.max_name_bytes} bytes.")
        real = os.path.realpath(os.path.join(self.root, *parts))
        if not self._inside(real):
            raise ToolError(f"Path refused: {shown} leads outside the workspace through a symbolic link.")
        return real, "/".join(parts) or "."

    def _inside(self, real: str) -> bool:
        return real == self.root or real.startswith(self.root.rstrip(os.sep) + os.sep)

    def _open_text(self, real: str, shown: str) -> Any:
        """Open a regular file for reading (never a device, FIFO or socket), or raise ToolError."""
        try:
            info = os.stat(real)
        except OSError as error:
            raise ToolError(f"Cannot read '{shown}': {error.strerror}.") from None
        if stat.S_ISDIR(info.st_mode):
            raise ToolError(f"'{shown}' is a folder; use list_files to see what it holds.")
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(f"Path refused: '{shown}' is not a regular file (a device, FIFO or socket).")
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        try:
            fd = os.open(real, flags)
        except OSError as error:
            raise ToolError(f"Cannot read '{shown}': {error.strerror}.") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # it changed between the check and the open
            os.close(fd)
            raise ToolError(f"Path refused: '{shown}' is not a regular file (a device, FIFO or socket).")
        handle = os.fdopen(fd, "rb")
        if b"\x00" in handle.peek(8192)[:8192]:
            handle.close()
            raise ToolError(f"'{shown}' is a binary file; only text files can be read.")
        return handle

    def _lines(self, handle: Any) -> Any:
        """(line text without its newline, whether it was cut) for each line, reading at most
        `max_line_chars` characters of any line into memory."""
        import io

        text = io.TextIOWrapper(handle, encoding="utf-8", errors="replace")
        while True:
            line = text.readline(self.max_line_chars)
            if not line:
                return
            cut = len(line) == self.max_line_chars and not line.endswith("\n")
            if cut:  # skip the rest of a long line
                rest = line
                while rest and not rest.endswith("\n"):
                    rest = text.readline(self.max_line_chars)
            yield line.rstrip("\r\n"), cut

    # --- the tools' work ---------------------------------------------------------------------------

    def list_files(self, path: str = ".") -> str:
        real, shown = self.resolve(path)
        if not os.path.isdir(real):
            raise ToolError(f"'{shown}' is not a folder." if os.path.exists(real) else f"'{shown}' does not exist.")
        try:
            entries = sorted(os.scandir(real), key=lambda e: e.name)
        except OSError as error:
            raise ToolError(f"Cannot list '{shown}': {error.strerror}.") from None
        lines = []
        for entry in entries[:self.max_entries]:
            target = os.path.realpath(entry.path)
            try:
                info = os.stat(target)
            except OSError:
                lines.append(f"{entry.name}  (broken link)")
                continue
            if not self._inside(target):
                lines.append(f"{entry.name}  (link outside the workspace; refused)")
            elif stat.S_ISDIR(info.st_mode):
                lines.append(f"{entry.name}/")
            elif stat.S_ISREG(info.st_mode):
                lines.append(f"{entry.name}  ({info.st_size} bytes)")
            else:
                lines.append(f"{entry.name}  (special file; refused)")
        if len(entries) > self.max_entries:
            lines.append(f"... and {len(entries) - self.max_entries} more entries")
        return f"{shown}:\n" + "\n".join(lines) if lines else f"'{shown}' is empty."

    def read_file(self, path: str, start_line: int = 1, end_line: Optional[int] = None) -> str:
        if start_line < 1 or (end_line is not None and end_line < start_line):
            raise ToolError("start_line must be 1 or more, and end_line (if given) at least start_line.")
        real, shown = self.resolve(path)
        last = start_line + self.max_lines - 1 if end_line is None else min(end_line, start_line + self.max_lines - 1)
        shown_lines, count, more = [], 0, False
        with self._open_text(real, shown) as handle:
            for count, (line, cut) in enumerate(self._lines(handle), 1):
                if count > last:
                    more = True
                    break
                if count >= start_line:
                    shown_lines.append(f"{count:>6}\t{line}" + (" [line cut]" if cut else ""))
        if count == 0:
            return f"'{shown}' is empty."
        if not shown_lines:
            return f"'{shown}' has {count} lines; start_line {start_line} is past its end."
        note = f"\n(lines {start_line}-{last} of '{shown}'; more follow: call read_file with start_line={last + 1})" \
            if more and (end_line is None or end_line > last) else ""
        return "\n".join(shown_lines) + note

    def search(self, pattern: str, path: str = ".", regex: bool = False) -> str:
        if not pattern:
            raise ToolError("The search pattern is empty.")
        if regex:
            try:
                matches = re.compile(pattern).search
            except re.error as error:
                raise ToolError(f"Invalid regular expression {pattern!r}: {error}.") from None
        else:
            needle = pattern.casefold()
            matches = lambda line: needle in line.casefold()  # noqa: E731
        real, shown = self.resolve(path)
        found, files, notes = [], 0, []
        for file_real in self._walk(real):
            files += 1
            if files > self.max_search_files:
                notes.append(f"(stopped after {self.max_search_files} files; search a narrower path)")
                break
            try:
                if os.stat(file_real).st_size > self.max_file_bytes:
                    continue
                handle = self._open_text(file_real, "")
            except (OSError, ToolError):  # unreadable, binary or special: not searched
                continue
            name = os.path.relpath(file_real, self.root).replace(os.sep, "/")
            with handle:
                for number, (line, _) in enumerate(self._lines(handle), 1):
                    if matches(line):
                        found.append(f"{name}:{number}: {line[:200]}")
                        if len(found) >= self.max_matches:
                            break
            if len(found) >= self.max_matches:
                notes.append(f"(stopped at {self.max_matches} matches; narrow the pattern or the path)")
                break
        if not found:
            return f"No matches for {pattern!r} in '{shown}'." + (f"\n{notes[0]}" if notes else "")
        return "\n".join(found + notes)

    def _walk(self, real: str) -> Any:
        """The regular files at or below `real` whose real path is inside the root, in name order; symbolic
        links to folders are not followed, links to files outside are skipped."""
        if not os.path.isdir(real):
            yield real
            return
        for folder, dirs, names in os.walk(real):
            dirs.sort()
            for name in sorted(names):
                target = os.path.realpath(os.path.join(folder, name))
                if self._inside(target) and os.path.isfile(target):
                    yield target

    def write_file(self, path: str, content: str) -> str:
        if not self.writable:
            raise ToolError("This workspace is read-only.")
        real, shown = self.resolve(path)
        data = content.encode("utf-8", "replace")
        if len(data) > self.max_file_bytes:
            raise ToolError(f"Refused: the content is larger than {self.max_file_bytes} bytes.")
        if real == self.root or os.path.isdir(real):
            raise ToolError(f"'{shown}' is a folder; give a file path.")
        if os.path.lexists(real) and not os.path.isfile(real):
            raise ToolError(f"Path refused: '{shown}' is not a regular file (a device, FIFO or socket).")
        try:
            os.makedirs(os.path.dirname(real), exist_ok=True)
            fd = os.open(real, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o644)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
        except OSError as error:
            raise ToolError(f"Cannot write '{shown}': {error.strerror}.") from None
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

