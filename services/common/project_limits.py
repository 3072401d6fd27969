"""How large a generated project may be: one rule for the agent, the tool workers and the
gateway, so a project one of them takes is never refused by another.

A project is bounded three ways: each file's UTF-8 size (`MAX_FILE_BYTES`, the tools'
`create_file`/`edit_file` limit and a text-mode page's), the number of its files
(`S2C_MAX_PROJECT_FILES`) and the UTF-8 bytes of all its files together, their paths
included (`S2C_MAX_PROJECT_BYTES`): a million one-byte files are 21 MB of paths, and an
empty file still costs a frame to every client and a row in the run store.
"""

from __future__ import annotations

from collections.abc import Iterable

from services.common.tool_types import FileState

MAX_FILE_BYTES = 2 * 1024 * 1024
DEFAULT_MAX_PROJECT_FILES = 64  # a site of S2C_MAX_PAGES (12) pages and its shared files
DEFAULT_MAX_PROJECT_BYTES = 8 << 20
FILES_ENV = "S2C_MAX_PROJECT_FILES"
BYTES_ENV = "S2C_MAX_PROJECT_BYTES"


def utf8_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def file_bytes(file: FileState) -> int:
    """What one file counts toward its project's bytes: its path and its content."""
    return utf8_size(file.path) + utf8_size(file.content)


def project_bytes(files: Iterable[FileState]) -> int:
    return sum(file_bytes(file) for file in files)


def too_many_files(count: int | str, limit: int) -> str:
    """The refusal of a project of `count` files (a number, or words such as "more than
    64") when it may hold `limit`."""
    return f"{count} files; a project holds at most {limit} ({FILES_ENV})"


def too_many_bytes(size: int, limit: int) -> str:
    return f"{size} bytes together, paths included; at most {limit} ({BYTES_ENV})"
