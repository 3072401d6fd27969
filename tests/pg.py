"""A throwaway PostgreSQL server for tests: initdb + pg_ctl in a temp dir, free port.

The server refuses to run as root, so under root it runs as the `postgres` system
user (created when missing). Missing binaries are an error, never a skip: CI
installs them, and a silently skipped backend would hide a broken store.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

BINARIES = ("initdb", "pg_ctl", "postgres")
SUPERUSER = "s2c"
SYSTEM_USER = "postgres"


class PostgresUnavailable(RuntimeError):
    pass


def find_bin_dir() -> Path:
    """The directory holding initdb, pg_ctl and postgres: PATH first, then Debian's."""
    found = [shutil.which(name) for name in BINARIES]
    if all(found):
        return Path(os.path.realpath(str(found[1]))).parent  # pg_ctl finds its siblings
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if all((Path(candidate) / name).exists() for name in BINARIES):
            return Path(candidate)
    raise PostgresUnavailable(
        "PostgreSQL server binaries (initdb, pg_ctl, postgres) are not on PATH nor under "
        "/usr/lib/postgresql/*/bin. The PostgreSQL run-store tests need them: install the "
        "`postgresql` package (CI does)."
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _server_user() -> pwd.struct_passwd | None:
    """The user to run the server as; None for the current (non-root) one."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/bin/false", SYSTEM_USER],
            check=True,
            capture_output=True,
        )
        return pwd.getpwnam(SYSTEM_USER)


@dataclass(frozen=True)
class PostgresServer:
    port: int
    root: Path

    @property
    def dsn(self) -> str:
        return self.dsn_for("postgres")

    def dsn_for(self, database: str) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"


def _run(cmd: list[str], user: pwd.struct_passwd | None) -> None:
    result = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        user=user.pw_uid if user else None,
        group=user.pw_gid if user else None,
        extra_groups=[] if user else None,
        cwd="/",
        check=False,
    )
    if result.returncode != 0:
        raise PostgresUnavailable(
            f"{' '.join(cmd)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
        )


@contextmanager
def postgres_server() -> Iterator[PostgresServer]:
    """Starts a server with trust auth for SUPERUSER on 127.0.0.1; stops and deletes it."""
    bin_dir = find_bin_dir()
    user = _server_user()
    # Not under pytest's tmp dir: that is private to root, and the server user must
    # reach its data directory.
    root = Path(tempfile.mkdtemp(prefix="s2c-pg-"))
    if user is not None:
        os.chown(root, user.pw_uid, user.pw_gid)
    data, log = root / "data", root / "server.log"
    started = False
    try:
        _run(
            [
                str(bin_dir / "initdb"),
                "-D", str(data),
                "-U", SUPERUSER,
                "--auth=trust",
                "--encoding=UTF8",
                "--no-locale",
                "--no-sync",
            ],
            user,
        )  # fmt: skip
        port = _free_port()
        options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
        start = [str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options]
        try:
            _run([*start, "-w", "start"], user)
        except PostgresUnavailable as exc:
            server_log = log.read_text() if log.exists() else "(no server log)"
            raise PostgresUnavailable(f"{exc}\nserver log:\n{server_log}") from exc
        started = True
        yield PostgresServer(port, root)
    finally:
        if started:
            _run([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"], user)
        shutil.rmtree(root, ignore_errors=True)
