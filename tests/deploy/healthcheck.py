"""The images' health probe (deploy/docker/healthcheck.py), run as the images run it."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

HEALTHCHECK = Path(__file__).resolve().parents[2] / "deploy" / "docker" / "healthcheck.py"


async def run_healthcheck(*args: str) -> tuple[int, str]:
    """The probe's exit code and output (stdout and stderr) for these arguments."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(HEALTHCHECK),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode()
