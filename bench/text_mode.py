"""Text-mode bench: the agent's scanning cost per preview on the three ways a page can
arrive, against the `create_file` tool call, on the same page in the same run.

Run alone: `.venv/bin/python bench/text_mode.py` (a few seconds), `--quick` (less).

The page is bench/preview.py's generated Tailwind-style page, streamed as 8-character
deltas, as a model would write it:

- `create_file` (the baseline): the call's JSON arguments, read by the production
  `ArgumentScanner` (services/agent/argscan.py), which decodes the content as it streams.
- text mode: an answer with a sentence, the page in a ```html block and a closing
  sentence, split into prose and page by the production `FenceScanner`
  (services/agent/fence.py).
- tool tags: the same `create_file` call written as `<tool_call>` text, found by the
  production `ToolTagScanner` (services/agent/providers/tool_tags.py); its arguments arrive
  whole at the closing tag, where the `ArgumentScanner` decodes them once.

"Per preview" is per page piece the scanner hands on (each becomes at most one code delta
before the event log merges them), and per KB of page. CPU is `time.process_time`, best
of several runs. A second table prices the tag scanner on an answer with no tags at all,
which every Chat Completions answer with tools now passes through, against no scan.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: find bench/

from bench.preview import DELTA, arguments, cpu, make_page, ratio, table
from services.agent.argscan import ArgumentScanner
from services.agent.fence import FenceScanner
from services.agent.providers.tool_tags import TextCall, ToolTagScanner

KB: Final = 1024


def split(text: str) -> list[str]:
    return [text[i : i + DELTA] for i in range(0, len(text), DELTA)]


def run_create_file(pieces: Sequence[str]) -> tuple[int, int]:
    """(page characters, page pieces) the ArgumentScanner decodes from the call's deltas."""
    scanner = ArgumentScanner(("path", "content"))
    size = count = 0
    for piece in pieces:
        for fragment in scanner.feed(piece):
            if fragment.key == "content" and fragment.text:
                size += len(fragment.text)
                count += 1
    return size, count


def run_text_mode(pieces: Sequence[str]) -> tuple[int, int]:
    scanner = FenceScanner()
    size = count = 0
    for piece in pieces:
        for found in scanner.feed(piece):
            if found.page:
                size += len(found.text)
                count += 1
    for found in scanner.end():
        if found.page:
            size += len(found.text)
            count += 1
    return size, count


def run_tool_tags(pieces: Sequence[str]) -> tuple[int, int]:
    scanner = ToolTagScanner()
    calls: list[TextCall] = []
    for piece in pieces:
        calls += [c for c in scanner.feed(piece) if isinstance(c, TextCall)]
    calls += [c for c in scanner.end() if isinstance(c, TextCall)]
    size = count = 0
    for call in calls:
        size_one, count_one = run_create_file([call.arguments])
        size, count = size + size_one, count + count_one
    return size, count


def run_passthrough(pieces: Sequence[str]) -> tuple[int, int]:
    """The reader without a tag scanner: each delta is text as it comes."""
    out: list[str] = []
    for piece in pieces:
        out.append(piece)
    return sum(map(len, out)), len(out)


def run_tag_scan(pieces: Sequence[str]) -> tuple[int, int]:
    scanner = ToolTagScanner()
    size = count = 0
    for piece in pieces:
        for item in scanner.feed(piece):
            if isinstance(item, str):
                size, count = size + len(item), count + 1
    for item in scanner.end():
        if isinstance(item, str):
            size, count = size + len(item), count + 1
    return size, count


def cpu_of(fn: Callable[[Sequence[str]], tuple[int, int]], pieces: Sequence[str], n: int) -> float:
    """Best CPU seconds of `n` runs (bench/preview.py's timer, on the characters found)."""
    return cpu(lambda p: fn(p)[0], pieces, n)


def streams(page: str) -> dict[str, list[str]]:
    call = {"name": "create_file", "arguments": {"path": "index.html", "content": page}}
    return {
        "create_file": split(arguments(page)),
        "text mode": split(f"Here is the page.\n\n```html\n{page}\n```\n\nIt has a hero."),
        "tool tags": split(
            f"Writing it now.\n<tool_call>\n{json.dumps(call, ensure_ascii=False)}\n</tool_call>"
        ),
    }


def prose(size: int) -> str:
    """An answer of `size` characters with markup in it (`<`, `</`) but no tool tag."""
    line = 'The <section> holds a <div class="grid"> of cards; </div> closes it. '
    return (line * (size // len(line) + 1))[:size]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer runs")
    opts = parser.parse_args(argv)
    sizes = (25, 100) if opts.quick else (25, 100, 400)
    repeat = 3 if opts.quick else 7
    rows: list[list[str]] = []
    for kb in sizes:
        page = make_page(kb * KB)
        found = {
            name: fn(p)
            for (name, p), fn in zip(
                streams(page).items(), (run_create_file, run_text_mode, run_tool_tags), strict=True
            )
        }
        for size, _count in found.values():
            # Every path hands on the whole page, or the comparison means nothing.
            assert size == len(page), (size, len(page))
        base_s = cpu_of(run_create_file, streams(page)["create_file"], repeat)
        for (name, pieces), fn in zip(
            streams(page).items(), (run_create_file, run_text_mode, run_tool_tags), strict=True
        ):
            seconds = base_s if name == "create_file" else cpu_of(fn, pieces, repeat)
            count = found[name][1]
            rows.append(
                [
                    f"{kb} KB",
                    name,
                    str(len(pieces)),
                    str(count),
                    f"{seconds * 1e3:.2f}",
                    f"{seconds / kb * 1e6:.0f}",
                    f"{seconds / count * 1e6:.2f}" if count > 1 else "-",
                    ratio(seconds / base_s),
                ]
            )
    table(
        f"Scanning a streamed page ({DELTA}-character deltas), best of {repeat}",
        "page|path|deltas|pieces|CPU ms|µs/KB|µs/piece|CPU vs create_file",
        rows,
    )
    print(
        "  tool tags: the page is one piece, at the closing tag; the engine replays it into"
        " the preview in steps, as any content that arrives whole."
    )

    tag_rows: list[list[str]] = []
    for kb in (10, 100) if opts.quick else (10, 100, 400):
        pieces = split(prose(kb * KB))
        assert run_tag_scan(pieces)[0] == run_passthrough(pieces)[0] == kb * KB
        none_s = cpu_of(run_passthrough, pieces, repeat)
        tag_s = cpu_of(run_tag_scan, pieces, repeat)
        tag_rows.append(
            [
                f"{kb} KB",
                str(len(pieces)),
                f"{none_s * 1e3:.2f}",
                f"{tag_s * 1e3:.2f}",
                f"{(tag_s - none_s) / len(pieces) * 1e6:.2f}",
                ratio(tag_s / none_s) if none_s else "-",
            ]
        )
    table(
        "The tag scanner on an answer with no tags (markup in its prose)",
        "answer|deltas|no scan ms|tag scan ms|extra µs/delta|tag scan vs no scan",
        tag_rows,
    )


if __name__ == "__main__":
    main()
