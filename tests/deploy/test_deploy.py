"""The deploy files: schema validation (offline) and how the pieces fit together.

`scripts/validate_deploy.sh` checks the compose file against the Compose Specification and
the Kubernetes manifests against the API schemas; the checks below cover what no schema
can see: probes, ports, the headless Services behind `S2C_TOOLS_ADDR` and
`S2C_AGENT_ADDR` (the agents' StatefulSet, routed by name), the HPA and PDB targets,
secrets and the data volumes.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from services.agent.settings import AgentSettings
from services.agent.tool_client import DEFAULT_CALL_TIMEOUT_S
from services.cli import (
    AGENT_METRICS_PORT,
    AGENT_PORT,
    GATEWAY_PORT,
    TOOLS_METRICS_PORT,
    TOOLS_PORT,
)
from services.gateway.settings import GatewaySettings
from services.tools.settings import ToolsSettings
from tests.deploy import manifests as k8s
from tests.deploy.healthcheck import run_healthcheck
from tests.deploy.manifests import DATA_DIR, DEPLOY, MANIFESTS
from tests.suite import running_suite

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
SCRIPT = ROOT / "scripts" / "validate_deploy.sh"
BIN = Path(sys.executable).parent

# The ports fixed by docs/design.md, as the CLI defaults carry them.
PORTS = {"gateway": GATEWAY_PORT, "agent": AGENT_PORT, "tools": TOOLS_PORT}
METRICS_PORTS = {"gateway": GATEWAY_PORT, "agent": AGENT_METRICS_PORT, "tools": TOOLS_METRICS_PORT}
ASSETS_DIR = f"{DATA_DIR}/assets"  # the asset store, under the data directory
# Values that are secrets: keys, and a database URL (it may embed a password).
KEY_NAMES = re.compile(r"(_API_KEY|_API_TOKEN|_SECRET|PASSWORD|DATABASE_URL)$")


def _env_with_venv() -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


def _run(*args: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env=_env_with_venv(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _serve_args(name: str) -> list[str]:
    """The command line that runs `name` reachable from outside its container."""
    if name == "gateway":
        return ["gateway", "--host", "0.0.0.0", "--port", str(GATEWAY_PORT)]
    return [
        name,
        "--listen",
        f"0.0.0.0:{PORTS[name]}",
        "--metrics-listen",
        f"0.0.0.0:{METRICS_PORTS[name]}",
    ]


def _compose() -> dict[str, Any]:
    compose: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return compose


def _with_port(command: list[str], port: int) -> list[str]:
    """A service's compose command, serving on `port` of loopback instead."""
    design = str(PORTS[command[0]])
    return [
        arg.replace(f"0.0.0.0:{design}", f"127.0.0.1:{port}") if arg != design else str(port)
        for arg in command
    ]


# --- schema validation (offline) -------------------------------------------------------------


def test_validate_deploy_script_passes() -> None:
    result = _run("bash", SCRIPT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "deploy files are valid" in result.stdout


def test_compose_validator_rejects_an_unknown_key(tmp_path: Path) -> None:
    broken = tmp_path / COMPOSE.name
    broken.write_text(COMPOSE.read_text().replace("shm_size:", "shm_sise:", 1))
    result = _run(BIN / "check-jsonschema", "--builtin-schema", "vendor.compose-spec", broken)
    assert result.returncode != 0
    assert "shm_sise" in result.stdout + result.stderr


def test_manifest_validator_rejects_an_unknown_field(tmp_path: Path) -> None:
    broken = tmp_path / "tools.yaml"
    broken.write_text(
        (DEPLOY / "tools.yaml").read_text().replace("periodSeconds:", "periodSecond:")
    )
    result = _run(BIN / "kubernetes-validate", "--strict", "--quiet", broken)
    assert result.returncode != 0
    assert "periodSecond" in result.stdout + result.stderr


def test_validate_script_rejects_a_kind_without_schema(tmp_path: Path) -> None:
    # kubernetes-validate only warns about a kind it has no schema for; the script fails.
    (tmp_path / "scripts").mkdir()
    shutil.copy(SCRIPT, tmp_path / "scripts" / SCRIPT.name)
    shutil.copy(COMPOSE, tmp_path / COMPOSE.name)
    shutil.copytree(DEPLOY, tmp_path / "deploy")
    (tmp_path / "deploy" / "typo.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deploymnet\nmetadata:\n  name: x\n"
    )
    result = _run("bash", tmp_path / "scripts" / SCRIPT.name, cwd=tmp_path)
    assert result.returncode != 0
    assert "Deploymnet" in result.stderr


# --- Kubernetes: how the pieces fit ----------------------------------------------------------


def test_kustomization_lists_every_manifest() -> None:
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    assert sorted(kustomization["resources"]) == sorted(p.name for p in MANIFESTS)
    assert kustomization["namespace"] == "s2c"


def test_every_deployment_has_readiness_and_liveness_probes() -> None:
    deployments = k8s.workloads()
    assert set(deployments) == set(PORTS)
    for name, deployment in deployments.items():
        for container in k8s.containers(deployment):
            assert "readinessProbe" in container, name
            assert "livenessProbe" in container, name


@pytest.mark.parametrize("name", ["agent", "tools"])
def test_grpc_services_probe_grpc_health_on_their_design_port(name: str) -> None:
    container = k8s.container(name)
    port = PORTS[name]
    assert container["args"] == _serve_args(name)
    assert [p["containerPort"] for p in container["ports"]] == [port, METRICS_PORTS[name]]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["grpc"] == {"port": port}, (name, probe)


def test_gateway_listens_on_all_interfaces_and_probes_readyz_and_healthz() -> None:
    container = k8s.container("gateway")
    assert container["args"] == _serve_args("gateway")
    assert [p["containerPort"] for p in container["ports"]] == [GATEWAY_PORT]
    # Ready: not draining (503 from SIGTERM on); alive: /healthz, 200 while it drains.
    paths = {"readinessProbe": "/readyz", "livenessProbe": "/healthz"}
    for probe, path in paths.items():
        assert container[probe]["httpGet"]["path"] == path
        assert container[probe]["httpGet"]["port"] in ("http", GATEWAY_PORT)


# --- rolling updates (docs/architecture.md, "Rolling updates") --------------------------------


def _drains_s() -> dict[str, float]:
    """How long each service may take to stop after SIGTERM, by its settings in deploy/."""
    return {
        "gateway": GatewaySettings.from_env(k8s.env(k8s.container("gateway"))).drain_s,
        "agent": AgentSettings.from_env(k8s.env(k8s.container("agent"))).shutdown_grace_s,
        "tools": ToolsSettings.from_env(k8s.env(k8s.container("tools"))).shutdown_grace_s,
    }


def test_each_pod_gets_its_whole_drain_before_it_is_killed() -> None:
    drains = _drains_s()
    for name, drain_s in drains.items():
        pod = k8s.workloads()[name]["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        pre_stop = container.get("lifecycle", {}).get("preStop", {}).get("sleep", {})
        assert pod["terminationGracePeriodSeconds"] > pre_stop.get("seconds", 0) + drain_s, name
    # Drains that let every generation end: upstream sockets and running generations
    # outlast the longest generation deadline.
    deadline = AgentSettings.from_env(k8s.env(k8s.container("agent"))).max_generation_s
    assert drains["gateway"] >= deadline
    assert drains["agent"] >= deadline
    # Proxies learn of a terminating gateway a few seconds late: it keeps serving meanwhile.
    assert k8s.container("gateway")["lifecycle"]["preStop"]["sleep"]["seconds"] >= 5


def test_every_service_has_a_disruption_budget_of_one() -> None:
    pdbs = [d for d in k8s.docs() if d["kind"] == "PodDisruptionBudget"]
    for name in PORTS:
        (pdb,) = [
            p
            for p in pdbs
            if k8s.selects(p["spec"]["selector"]["matchLabels"], k8s.pod_labels(name))
        ]
        assert pdb["spec"].get("maxUnavailable") == 1, name


def test_compose_stops_gateway_and_agent_only_after_their_drain() -> None:
    services = _compose()["services"]
    defaults = {
        "gateway": ("S2C_DRAIN_S", GatewaySettings().drain_s),
        "agent": ("S2C_SHUTDOWN_GRACE_S", AgentSettings().shutdown_grace_s),
    }
    for name, (variable, fallback) in defaults.items():
        value = services[name]["environment"][variable]
        match = re.fullmatch(r"\$\{" + variable + r":-(\d+)\}", value)
        drain_s = float(match.group(1)) if match else fallback
        grace = re.fullmatch(r"(\d+)s", services[name]["stop_grace_period"])
        assert grace, name
        assert int(grace.group(1)) > drain_s >= AgentSettings().max_generation_s, name


def test_agent_reaches_tools_through_a_headless_service() -> None:
    addr = k8s.env(k8s.container("agent"))["S2C_TOOLS_ADDR"]
    match = re.fullmatch(r"dns:///([a-z0-9-]+):(\d+)", addr)
    assert match, addr
    service = k8s.one("Service", match.group(1))
    assert service["spec"]["clusterIP"] == "None"
    assert int(match.group(2)) == TOOLS_PORT
    assert [p["port"] for p in service["spec"]["ports"]] == [TOOLS_PORT]
    assert k8s.selects(service["spec"]["selector"], k8s.pod_labels("tools"))
    assert not k8s.selects(service["spec"]["selector"], k8s.pod_labels("agent"))


def test_hpa_scales_the_tools_deployment() -> None:
    (hpa,) = [d for d in k8s.docs() if d["kind"] == "HorizontalPodAutoscaler"]
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "tools",
    }
    assert hpa["spec"]["minReplicas"] >= 2
    assert hpa["spec"]["maxReplicas"] > hpa["spec"]["minReplicas"]
    # The HPA owns the replica count; utilisation needs a CPU request to measure against.
    assert "replicas" not in k8s.workloads()["tools"]["spec"]
    assert k8s.container("tools")["resources"]["requests"]["cpu"]


def test_pdb_protects_the_tool_workers() -> None:
    pdbs = [d for d in k8s.docs() if d["kind"] == "PodDisruptionBudget"]
    tools_pdbs = [
        p
        for p in pdbs
        if k8s.selects(p["spec"]["selector"]["matchLabels"], k8s.pod_labels("tools"))
    ]
    assert len(tools_pdbs) == 1
    spec = tools_pdbs[0]["spec"]
    assert spec.get("maxUnavailable") == 1 or spec.get("minAvailable", 0) >= 1


def test_keys_come_only_from_optional_secrets() -> None:
    for name in PORTS:
        container = k8s.container(name)
        for env in container.get("env", []):
            assert not KEY_NAMES.search(env["name"]), (name, env["name"])
        for source in container.get("envFrom", []):
            ref = source.get("secretRef") or source.get("configMapRef")
            assert ref is not None, (name, source)
            assert ref["optional"] is True, (name, source)
    refs = {
        name: {
            s["secretRef"]["name"]
            for s in k8s.container(name).get("envFrom", [])
            if "secretRef" in s
        }
        for name in PORTS
    }
    assert refs["gateway"] == set()
    # Model keys never reach the tool workers: they get a secret of their own.
    assert refs["agent"], refs
    assert refs["tools"], refs
    assert not refs["agent"] & refs["tools"], refs
    assert not [d for d in k8s.docs() if d["kind"] == "Secret"]


def test_tools_own_the_asset_store_and_the_gateway_reads_it() -> None:
    # The workers write assets from pods on any node; the gateway only serves them.
    written, tools_read_only = k8s.claim_at("tools", ASSETS_DIR)
    served, gateway_read_only = k8s.claim_at("gateway", ASSETS_DIR)
    assert written == served
    assert (tools_read_only, gateway_read_only) == (False, True)
    assert written["spec"]["accessModes"] == ["ReadWriteMany"]
    # Nothing else of the workers' is visible to the gateway, and the reverse.
    assert k8s.data_claim("gateway") not in (k8s.data_claim("tools"), written)
    assert k8s.data_claim("tools") != written
    # Replicated gateways share design-systems.json.
    assert k8s.data_claim("gateway")["spec"]["accessModes"] == ["ReadWriteMany"]


def test_pods_run_unprivileged() -> None:
    for name, deployment in k8s.workloads().items():
        pod = deployment["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        assert pod["securityContext"]["fsGroup"] == pod["securityContext"]["runAsUser"], name
        (container,) = pod["containers"]
        assert container["securityContext"]["allowPrivilegeEscalation"] is False, name
        assert container["securityContext"]["capabilities"]["drop"] == ["ALL"], name
    # The gRPC servers drain in-flight calls for shutdown_grace_s after SIGTERM.
    agent = k8s.container("agent")
    grace = {
        "agent": float(
            k8s.env(agent).get("S2C_SHUTDOWN_GRACE_S", AgentSettings().shutdown_grace_s)
        ),
        "tools": ToolsSettings().shutdown_grace_s,
    }
    for name, seconds in grace.items():
        pod = k8s.workloads()[name]["spec"]["template"]["spec"]
        assert pod["terminationGracePeriodSeconds"] > seconds, name


def test_metrics_are_scraped_where_they_are_served() -> None:
    for name, deployment in k8s.workloads().items():
        annotations = deployment["spec"]["template"]["metadata"]["annotations"]
        assert annotations["prometheus.io/scrape"] == "true", name
        assert annotations["prometheus.io/path"] == "/metrics", name
        assert int(annotations["prometheus.io/port"]) == METRICS_PORTS[name], name
        ports = [p["containerPort"] for p in k8s.containers(deployment)[0]["ports"]]
        assert METRICS_PORTS[name] in ports, name


# --- Compose ---------------------------------------------------------------------------------


def test_compose_services_listen_on_design_ports_with_healthchecks() -> None:
    compose = _compose()
    # Compose v1 (Debian's docker-compose 1.29) refuses a top-level `name:`.
    assert "name" not in compose
    services = compose["services"]
    assert set(services) == set(PORTS)
    for name, service in services.items():
        assert service["command"] == _serve_args(name), name
    assert services["gateway"]["ports"] == [
        f"127.0.0.1:${{S2C_GATEWAY_PORT:-{GATEWAY_PORT}}}:{GATEWAY_PORT}"
    ]
    for name, service in services.items():
        # The images' own probe, which reads the role and port from the command.
        assert service["healthcheck"]["test"] == ["CMD", "/usr/local/bin/s2c-healthcheck"], name


def test_compose_builds_the_browser_image_only_for_the_tool_workers() -> None:
    services = _compose()["services"]
    assert "target" not in services["tools"]["build"]  # the default: with Chromium
    assert services["tools"]["image"] == "s2c-grpc:local"
    for name in ("agent", "gateway"):
        assert services[name]["build"]["target"] == "server", name
        assert services[name]["image"] == "s2c-grpc-server:local", name
    targets = re.findall(r"^FROM \S+ AS (\S+)$", DOCKERFILE.read_text(), re.M)
    assert "server" in targets


def test_tool_workers_close_connections_so_new_workers_get_calls() -> None:
    # The agent balances over what `tools` resolves to and resolves it again only when a
    # connection ends: each worker ends its connections after about a minute, and the
    # grace lets every call on them finish first.
    compose_env = _compose()["services"]["tools"]["environment"]
    k8s_env = k8s.env(k8s.container("tools"))
    assert compose_env["S2C_TOOLS_MAX_CONNECTION_AGE_S"] == "${S2C_TOOLS_MAX_CONNECTION_AGE_S:-60}"
    for env in ({"S2C_TOOLS_MAX_CONNECTION_AGE_S": "60"}, k8s_env):
        settings = ToolsSettings.from_env(env)
        assert 0 < settings.max_connection_age_s <= 60
        longest = max(
            [
                *settings.tool_timeouts_s.values(),
                settings.default_tool_timeout_s,
                settings.capture.timeout_s,
            ]
        )
        assert settings.max_connection_age_grace_s > longest
        assert settings.max_connection_age_grace_s > DEFAULT_CALL_TIMEOUT_S  # the agent's
    # Not the agents: each is its generations' owner, reached by name, and a stream may
    # last max_generation_s; ending its connections would move no work, only cut streams.
    for env in (_compose()["services"]["agent"]["environment"], k8s.env(k8s.container("agent"))):
        assert not [k for k in env if "MAX_CONNECTION_AGE" in k]


def test_compose_runs_several_tool_workers_behind_dns() -> None:
    services = _compose()["services"]
    assert services["tools"]["deploy"]["replicas"] >= 2
    assert "container_name" not in services["tools"]
    assert services["agent"]["environment"]["S2C_TOOLS_ADDR"] == f"dns:///tools:{TOOLS_PORT}"
    assert services["gateway"]["environment"]["S2C_AGENT_ADDR"] == f"agent:{AGENT_PORT}"
    assert services["agent"]["depends_on"]["tools"]["condition"] == "service_healthy"
    assert services["gateway"]["depends_on"]["agent"]["condition"] == "service_healthy"


def test_compose_gives_each_service_its_data_and_the_gateway_assets_read_only() -> None:
    services = _compose()["services"]
    data_volumes = {}
    for name, service in services.items():
        assert service["environment"]["S2C_DATA_DIR"] == DATA_DIR, name
        (data,) = [v for v in service["volumes"] if v.endswith(f":{DATA_DIR}")]
        data_volumes[name] = data.split(":")[0]
    assert len(set(data_volumes.values())) == len(services), data_volumes
    assets = [v for v in services["tools"]["volumes"] if v.endswith(f":{ASSETS_DIR}")]
    (volume,) = (v.split(":")[0] for v in assets)
    assert services["gateway"]["volumes"].count(f"{volume}:{ASSETS_DIR}:ro") == 1
    assert not [v for v in services["agent"]["volumes"] if v.startswith(f"{volume}:")]


def test_compose_bakes_in_no_keys() -> None:
    for name, service in _compose()["services"].items():
        for key, value in service["environment"].items():
            if KEY_NAMES.search(key):
                assert value == f"${{{key}:-}}", (name, key)
    assert "OPENAI_API_KEY" not in _compose()["services"]["tools"]["environment"]


async def test_the_images_healthcheck_passes_against_running_services(tmp_path: Path) -> None:
    async with running_suite(tmp_path) as suite:
        ports = {
            "tools": suite.tools.port,
            "agent": suite.agent.port,
            "gateway": suite.gateway_port,
        }
        for name, service in _compose()["services"].items():
            code, out = await run_healthcheck(*_with_port(service["command"], ports[name]))
            # A running suite without an agent's workers' browser is healthy, and says so.
            assert code == 0, (name, out)


async def test_the_images_healthcheck_fails_when_nothing_listens() -> None:
    # A bound socket that never listens: connections are refused, and no one else gets it.
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        port = bound.getsockname()[1]
        for name, service in _compose()["services"].items():
            code, _ = await run_healthcheck(*_with_port(service["command"], port))
            assert code != 0, name
    code, out = await run_healthcheck("generate", "x")
    assert code == 1
    assert "no s2c service" in out
