"""A data directory that stops taking writes, against the three real processes.

How the failure is staged: the tests run as root, and root ignores permission bits
(chmod 0o555 changes nothing) and may not mount a small full filesystem here. What does
fail for root is a file-size limit: `prlimit(pid, RLIMIT_FSIZE, 1)` on one running
process makes each of its writes past the first byte of any file fail with EFBIG, just as
a full disk fails them with ENOSPC, while its reads, sockets and pipes (the log) keep
working. Python ignores SIGXFSZ, so the process lives on. Raising the limit again is the
disk getting room back. A directory that cannot even be opened is in
tests/agent/test_runstore.py and tests/gateway/test_design_systems.py.
"""

from __future__ import annotations

import json
import resource
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import aiohttp
import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc

from services.agent.runstore_health import HEALTH_SERVICE
from services.agent.status_line import RECORD_NOT_SAVED
from tests.e2e.fuzzing import listening_ports
from tests.processes import Service, running_processes
from tests.suite import create_params, run_ws

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
UNUSED = "never retrieved"  # "Future/Task exception was never retrieved"


@contextmanager
def disk_full(service: Service) -> Iterator[None]:
    pid = service.process.pid
    _, hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (1, hard))
    try:
        yield
    finally:
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (hard, hard))


async def scrape(service: Service) -> str:
    ports = listening_ports(service.process.pid) - {service.port}
    assert len(ports) == 1, f"cannot tell the metrics port of {service.name}: {ports}"
    async with aiohttp.ClientSession() as http:
        async with http.get(f"http://127.0.0.1:{ports.pop()}/metrics") as response:
            return await response.text()


def log_records(service: Service, msg: str) -> list[dict[str, object]]:
    records = []
    for line in service.log:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if record.get("msg") == msg:
            records.append(record)
    return records


async def test_a_full_disk_under_the_agent_is_visible_and_heals(tmp_path: Path) -> None:
    async with running_processes(tmp_path) as suite:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{suite.agent.port}") as channel:
            health = health_pb2_grpc.HealthStub(channel)
            agent = pb_grpc.AgentServiceStub(channel)

            async def status(service: str) -> int:
                answer = await health.Check(health_pb2.HealthCheckRequest(service=service))
                return int(answer.status)

            assert await status(HEALTH_SERVICE) == SERVING
            with disk_full(suite.agent):
                # Resumable: the first frame then carries the generation id.
                params = create_params(resumable=True)
                results = [await run_ws(suite.ws_url, params) for _ in range(2)]
                # The generations run to the end, and the client is told about the record.
                for result in results:
                    assert result.close_code == 1000
                    for variant in (0, 1):
                        assert result.variant_frames(variant)[-1]["type"] == "variantComplete"
                        statuses = [f["value"] for f in result.of("status", variant)]
                        assert any(RECORD_NOT_SAVED in s for s in statuses), statuses
                assert await status("") == SERVING  # generations still work
                assert await status(HEALTH_SERVICE) == NOT_SERVING
                metrics = await scrape(suite.agent)
                assert 's2c_storage_healthy{store="runs"} 0.0' in metrics
                assert 's2c_storage_errors_total{op="save",store="runs"}' in metrics
                # GetGeneration answers from memory, which holds the whole truth.
                assert results[0].frames[0]["type"] == "generation"
                generation_id = results[0].frames[0]["value"]
                record = await agent.GetGeneration(
                    pb.GetGenerationRequest(generation_id=generation_id)
                )
                assert record.generation.status == pb.RUN_STATUS_COMPLETED

            # Room again: the next generation's saves land and health turns SERVING.
            watch = health.Watch(health_pb2.HealthCheckRequest(service=HEALTH_SERVICE))
            assert (await watch.read()).status == NOT_SERVING
            healed = await run_ws(suite.ws_url, create_params())
            assert healed.close_code == 1000
            assert not any(RECORD_NOT_SAVED in f["value"] for f in healed.of("status"))
            assert (await watch.read()).status == SERVING
            watch.cancel()
            assert 's2c_storage_healthy{store="runs"} 1.0' in await scrape(suite.agent)

        failing = log_records(suite.agent, "storage failing")
        assert len(failing) == 1, "the cause is logged once, not once per save"
        # SQLite reports a refused write (EFBIG here, ENOSPC on a full disk) as I/O or full.
        assert str(failing[0]["cause"]).startswith("OperationalError: disk"), failing[0]
        assert len(log_records(suite.agent, "storage recovered")) == 1
        lost = {r["generation_id"] for r in log_records(suite.agent, "run record not saved")}
        assert lost == {r.frames[0]["value"] for r in results}
        assert await suite.agent.stop(signal.SIGTERM) == 0
        assert not [line for line in suite.agent.log if UNUSED in line]


async def test_a_full_disk_under_the_gateway_gives_clear_design_system_errors(
    tmp_path: Path,
) -> None:
    async with running_processes(tmp_path) as suite, aiohttp.ClientSession() as http:
        base = f"http://127.0.0.1:{suite.gateway.port}"
        async with http.post(f"{base}/api/design-systems", json={"name": "Kept"}) as response:
            assert response.status == 200
            kept = await response.json()
        with disk_full(suite.gateway):
            for method, path, body in (
                ("POST", "/api/design-systems", {"name": "Lost"}),
                ("PATCH", f"/api/design-systems/{kept['id']}", {"name": "Renamed"}),
                ("DELETE", f"/api/design-systems/{kept['id']}", None),
            ):
                async with http.request(method, base + path, json=body) as response:
                    assert response.status == 507, (method, await response.text())
                    detail = (await response.json())["detail"]
                    assert detail.startswith("Design systems cannot be saved: OSError"), detail
                    assert "File too large" in detail
            async with http.get(f"{base}/api/design-systems") as response:
                assert response.status == 200  # reads still work
                assert await response.json() == [kept]
            async with http.get(f"{base}/api/health") as response:
                assert response.status == 200
                health = await response.json()
            assert health["status"] == "degraded"
            assert health["storage"]["design_systems"]["op"] == "write"
            async with http.get(f"{base}/metrics") as response:
                metrics = await response.text()
            assert 's2c_storage_healthy{store="design_systems"} 0.0' in metrics
            assert 's2c_storage_errors_total{op="write",store="design_systems"} 3.0' in metrics
        async with http.get(f"{base}/healthz") as response:
            assert (await response.json())["status"] == "ok"  # the probe sees room again
        async with http.post(f"{base}/api/design-systems", json={"name": "Saved"}) as response:
            assert response.status == 200
        assert len(log_records(suite.gateway, "storage failing")) == 1
        assert await suite.gateway.stop(signal.SIGTERM) == 0
        assert not [line for line in suite.gateway.log if UNUSED in line]
