"""`s2c eval SET --model ID [--model ID…] --out DIR`: score models against a reference set.

    s2c eval basic --model demo --out eval-out/
    s2c eval my-screens/ --model "claude-opus-4-8 (medium effort)" --model local:qwen3 --out e/

SET is a directory (see services/eval/sets.py) or the name of a built-in set in `evalsets/`
(`basic`).
Progress goes to stderr; the summary table to stdout; `DIR/report.html` and
`DIR/results.json` are rewritten after every item. Running the same command again resumes:
items already scored against the same reference content are not redone.

`--save-baseline FILE` writes the run's scores as a baseline; `--gate FILE` holds the run
to one: each item and metric that dropped by more than `--tolerance` (default 0.02), or
has no score now, is named on stderr and the exit code is 1 (services/eval/gate.py).

Exit codes: 0 every item scored (and, with --gate, nothing dropped) · 1 some item failed
(its generation or its render), or the gate found a drop · 2 bad usage, an unreadable
baseline, or the agent cannot be used · 130 interrupted (143: SIGTERM), the partial
report is valid.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text
from s2c.agent.v1 import agent_service_pb2 as pb

from services.common.proto_enums import enum_values
from services.common.security import GrpcSecurity
from services.common.vendor import vendor_dir_from_env
from services.eval import gate
from services.eval.report import SUMMARY_HEADER, summary_rows
from services.eval.results import ItemResult, Results, ResultsError
from services.eval.runner import EvalAborted, EvalOptions, prepare, run_eval
from services.eval.sets import SetError, load_set

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class RichProgress:
    """A progress bar on stderr (a line per finished item when it is not a terminal)."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self._task = self._bar.add_task("eval", total=None)
        self.failed = 0

    def start(self, total: int, done: int) -> None:
        self._bar.update(self._task, total=total, completed=done)

    def working(self, item: str, model: str) -> None:
        self._bar.update(self._task, description=f"{item} · {model}")

    def finished(self, item: str, model: str, result: ItemResult) -> None:
        self._bar.advance(self._task)
        if result.status != "ok":
            self.failed += 1
        if not self._console.is_terminal:
            state = "ok" if result.status == "ok" else f"failed: {result.error}"
            self._console.print(f"{item} · {model}: {state}", soft_wrap=True, highlight=False)

    @contextlib.contextmanager
    def shown(self) -> Iterator[None]:
        with self._bar:
            yield


def main(args: argparse.Namespace) -> int:
    err = Console(stderr=True)
    try:
        options = _options(args)
        results = prepare(options)
        # Read before the run: a bad baseline must not cost a whole eval first.
        baseline = gate.load_baseline(Path(args.gate)) if args.gate else None
    except (SetError, ResultsError, ValueError, gate.GateError) as exc:
        _error(err, str(exc))
        return EXIT_USAGE
    progress = RichProgress(err)
    interrupted: list[int] = []

    async def run() -> None:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()

        def stop(signum: int) -> None:
            interrupted.append(signum)
            task.cancel()

        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop, int(signum))
        try:
            await run_eval(options, results, progress)
        finally:
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(signum)

    code = EXIT_OK
    try:
        with progress.shown():
            asyncio.run(run())
    except asyncio.CancelledError:
        code = 128 + (interrupted[0] if interrupted else signal.SIGINT)
    except KeyboardInterrupt:
        code = 128 + signal.SIGINT
    except EvalAborted as exc:
        _error(err, str(exc))
        code = EXIT_USAGE
    _print_summary(results, options.out)
    if code > EXIT_USAGE:
        _error(err, f"interrupted; the partial report is {options.out / 'report.html'}")
        return code
    if args.save_baseline:
        gate.save_baseline(results, Path(args.save_baseline))
        err.print(f"baseline: {args.save_baseline}", soft_wrap=True, highlight=False)
    if code == EXIT_OK and baseline is not None:
        dropped = gate.regressions(baseline, results, args.tolerance)
        for regression in dropped:
            _error(err, f"regression: {regression}")
        if dropped:
            code = EXIT_FAILED
    if code == EXIT_OK and progress.failed:
        _error(err, f"{progress.failed} item(s) failed; see the report")
        return EXIT_FAILED
    return code


def _options(args: argparse.Namespace) -> EvalOptions:
    stacks = enum_values(pb.Stack)
    if args.stack not in stacks:
        raise ValueError(f"unknown stack {args.stack!r}; one of: {', '.join(stacks)}")
    models = tuple(dict.fromkeys(m.strip() for m in args.model))
    if not all(models):
        raise ValueError("--model needs a model id (see the agent's ListModels, or `demo`)")
    if args.timeout <= 0:
        raise ValueError("--timeout must be a positive number of seconds")
    if not 0 <= args.tolerance <= 1:
        raise ValueError("--tolerance must be between 0 and 1")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} exists and is not a directory")
    return EvalOptions(
        reference_set=load_set(args.set),
        models=models,
        out=out,
        agent=args.agent,
        security=GrpcSecurity.from_env(),
        stack=args.stack,
        timeout_s=args.timeout,
        vendor_dir=vendor_dir_from_env(os.environ),
    )


def _print_summary(results: Results, out: Path) -> None:
    console = Console()
    if not console.is_terminal:  # a pipe or a file: keep the table's columns whole
        console = Console(width=160)
    table = Table(title=f"s2c eval: {results.set_name}")
    for i, header in enumerate(SUMMARY_HEADER):
        table.add_column(header, justify="left" if i == 0 else "right")
    for row in summary_rows(results.summary(), len(results.items)):
        table.add_row(*row)
    console.print(table)
    console.print(f"report: {out / 'report.html'}", soft_wrap=True, highlight=False)


def _error(console: Console, message: str) -> None:
    console.print(Text(f"s2c: {message}", style="red"), soft_wrap=True, highlight=False)
