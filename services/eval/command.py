"""The `eval` subcommand's arguments; what runs it (services.eval.cli) loads on use only,
so `s2c up` and friends never import numpy, scipy or scikit-image."""

from __future__ import annotations

import argparse
import sys

from services.eval.stack import DEFAULT_STACK

# What the eval extra brings (pyproject.toml); the services never import them.
EVAL_EXTRA_MODULES = frozenset({"numpy", "scipy", "skimage"})


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], agent: str) -> None:
    p = sub.add_parser("eval", help="score models' pages against a reference set")
    p.add_argument("set", help="a set directory, or a built-in set name (basic)")
    p.add_argument("--model", action="append", default=[], required=True, help="repeatable")
    p.add_argument("--out", required=True, help="the report directory (resumed if it exists)")
    p.add_argument("--agent", default=agent)
    p.add_argument("--stack", default=DEFAULT_STACK, help=f"default {DEFAULT_STACK}")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per generation")
    p.add_argument(
        "--gate",
        metavar="BASELINE.json",
        help="exit 1 naming each item and metric that dropped by more than --tolerance",
    )
    p.add_argument("--tolerance", type=float, default=0.02, help="for --gate; default 0.02")
    p.add_argument(
        "--save-baseline", metavar="BASELINE.json", help="write this run's scores as a baseline"
    )
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    try:
        from services.eval.cli import main
    except ModuleNotFoundError as exc:
        if exc.name not in EVAL_EXTRA_MODULES:
            raise
        print(
            f"s2c eval needs {exc.name}, from the package's eval extra: "
            "pip install 's2c-grpc[eval]' (make install has it)",
            file=sys.stderr,
        )
        return 2
    return main(args)
