"""The Dockerfile and the images' health probe, checked offline.

`make container-check` (scripts/container/check.sh) builds and runs the images for real;
these checks hold the rules that keep the file building everywhere: what every builder
parses, what each image carries, and the probe both images run.
"""

from __future__ import annotations

import importlib.util
import re
from types import ModuleType

from services.agent.runstore_health import HEALTH_SERVICE as RUN_STORE_HEALTH
from services.tools.browser_health import HEALTH_SERVICE as BROWSER_HEALTH
from tests.deploy.healthcheck import HEALTHCHECK
from tests.deploy.test_deploy import DOCKERFILE, PORTS, ROOT

HEALTHCHECK_IN_CONTEXT = "deploy/docker/healthcheck.py"


def _healthcheck_script() -> ModuleType:
    """deploy/docker/healthcheck.py, imported as a module (the images run it as a script)."""
    spec = importlib.util.spec_from_file_location("s2c_healthcheck", HEALTHCHECK)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _stages() -> dict[str, str]:
    """The Dockerfile's stages by name (the last, unnamed one is the default image)."""
    parts = re.split(r"^(FROM .*)$", DOCKERFILE.read_text(), flags=re.M)
    stages = {}
    for line, body in zip(parts[1::2], parts[2::2], strict=True):
        match = re.fullmatch(r"FROM \S+(?: AS (\S+))?", line)
        assert match, line
        stages[match.group(1) or "default"] = line + body
    return stages


def _apt_packages(stage: str) -> list[str]:
    text = _stages()[stage]
    if "apt-get install" not in text:
        return []
    apt = text[text.index("apt-get install") : text.index("rm -rf /var/lib/apt/lists")]
    return re.findall(r"^\s+([a-z0-9][a-z0-9.+-]+) \\$", apt, re.M)


def test_dockerfile_uses_only_what_every_builder_parses() -> None:
    # Engine 20.10's BuildKit frontend, its legacy builder and buildah: no `# syntax` line
    # (BuildKit would fetch a frontend image from a registry at every build), no heredoc,
    # no flag only BuildKit knows.
    text = DOCKERFILE.read_text()
    assert not re.search(r"^#\s*syntax\s*=", text, re.M | re.I)
    assert "<<" not in text
    instructions = re.findall(r"^([A-Z]+)\b", text, re.M)
    classic = {"FROM", "ARG", "ENV", "RUN", "COPY", "WORKDIR", "USER", "EXPOSE", "CMD"}
    classic |= {"ENTRYPOINT", "HEALTHCHECK", "LABEL", "VOLUME", "STOPSIGNAL", "SHELL"}
    assert set(instructions) <= classic, set(instructions) - classic
    for flag in re.findall(r"^(?:COPY|ADD|RUN) (--[a-z-]+)", text, re.M):
        assert flag == "--from", flag


def test_dockerfile_copies_only_what_the_build_context_has() -> None:
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    for source in re.findall(r"^COPY (?!--from)(.+) \S+$", DOCKERFILE.read_text(), re.M):
        for path in source.split():
            assert (ROOT / path).exists(), path
            assert any(f"!{path}" == line or path.startswith(line[1:]) for line in ignore), path


def test_dockerfile_images_and_what_each_carries() -> None:
    stages = _stages()
    assert list(stages)[:1] == ["build"]
    assert "ARG PYTHON_IMAGE=python:3.11-slim-bookworm" in DOCKERFILE.read_text()
    # The default image runs the tool workers: Chromium, and the library Playwright's
    # driver needs, which the slim base lacks and chromium does not pull in.
    full = _apt_packages("default")
    for package in ("chromium", "libatomic1", "fonts-liberation"):
        assert package in full, package
    assert "S2C_CHROMIUM_PATH=/usr/bin/chromium" in stages["default"]
    # The gateway's and the agent's image: no browser, no Playwright.
    assert stages["server"].startswith("FROM runtime AS server")
    assert "chromium" not in _apt_packages("runtime") + _apt_packages("server")
    assert "COPY --from=build-server /opt/venv /opt/venv" in stages["server"]
    assert "pip uninstall -y playwright" in stages["build-server"]
    for name in ("server", "default"):
        assert "USER 10001:10001" in stages[name], name
    runtime = stages["runtime"]
    assert "S2C_DATA_DIR=/data" in runtime
    # Both images render pages offline from the vendored runtimes (docs/offline.md),
    # installed and checked in a stage of their own whose Node stays there.
    assert "COPY --from=vendor /opt/s2c-vendor /opt/s2c-vendor" in runtime
    assert "S2C_VENDOR_DIR=/opt/s2c-vendor" in runtime
    assert _apt_packages("vendor") == ["nodejs", "npm"]
    assert "python -m services.common.vendor" in stages["vendor"]
    assert "npm" not in _apt_packages("runtime") + _apt_packages("default")
    assert 'ENTRYPOINT ["/usr/bin/tini", "--", "s2c"]' in runtime
    assert re.search(
        r"^HEALTHCHECK .*\n\s+CMD \[\"/usr/local/bin/s2c-healthcheck\"\]", runtime, re.M
    )
    assert "COPY deploy/docker/healthcheck.py /usr/local/bin/s2c-healthcheck" in runtime
    # A uid past SYS_UID_MAX with --system makes useradd warn.
    code = "\n".join(line for line in runtime.splitlines() if not line.startswith("#"))
    assert "useradd --uid 10001" in code
    assert "--system" not in code


def test_dockerfile_healthcheck_script_reads_role_and_port() -> None:
    script = _healthcheck_script()
    option = script.option
    assert option(["--listen", "0.0.0.0:50052"], "--listen", "x") == "0.0.0.0:50052"
    assert option(["--port=7001"], "--port", "x") == "7001"
    assert option([], "--port", "7001") == "7001"
    assert script.grpc_target("0.0.0.0:50052") == "127.0.0.1:50052"
    assert script.grpc_target("[::]:50051") == "127.0.0.1:50051"
    assert set(script.DEFAULTS) == set(PORTS)
    # The optional parts it reports are the services' own health names.
    assert set(script.DEGRADED_WHEN_DOWN["tools"]) == {BROWSER_HEALTH}
    assert set(script.DEGRADED_WHEN_DOWN["agent"]) == {RUN_STORE_HEALTH}


def test_dockerignore_keeps_what_pip_install_needs() -> None:
    text = (ROOT / ".dockerignore").read_text()
    lines = [line.strip() for line in text.splitlines() if line.strip()[:1] not in ("", "#")]
    # An allow-list: everything is out unless named, so no .env or .venv can leak in.
    assert lines[0] == "*"
    vendor = ("vendor/package.json", "vendor/package-lock.json", "vendor/manifest.json")
    for needed in (
        "pyproject.toml",
        "README.md",
        "gen/",
        "services/",
        HEALTHCHECK_IN_CONTEXT,
        *vendor,
    ):
        assert f"!{needed}" in lines, needed
    assert "!.env" not in lines
