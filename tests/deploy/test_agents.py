"""The agents in Kubernetes: a StatefulSet behind a headless Service, each agent named
after its pod, and the gateway listing every pod (docs/architecture.md, "In Kubernetes")."""

from __future__ import annotations

from services.agent.settings import AGENT_NAME_ENV, checked_agent_name
from services.cli import AGENT_PORT, GATEWAY_PORT
from services.gateway.agents import agent_addrs, owner_name
from tests.deploy import manifests as k8s


def _agent_addrs() -> list[str]:
    return agent_addrs(k8s.env(k8s.container("gateway"))["S2C_AGENT_ADDR"])


def test_agents_are_a_statefulset_behind_a_headless_service() -> None:
    agents = k8s.one("StatefulSet", "agent")["spec"]
    headless = k8s.one("Service", agents["serviceName"])["spec"]
    assert headless["clusterIP"] == "None"
    # The owner's name resolves while it starts or drains: it answers for itself.
    assert headless["publishNotReadyAddresses"] is True
    assert [p["port"] for p in headless["ports"]] == [AGENT_PORT]
    assert k8s.selects(headless["selector"], k8s.pod_labels("agent"))
    assert not k8s.selects(headless["selector"], k8s.pod_labels("tools"))
    assert agents["replicas"] >= 2
    assert agents["podManagementPolicy"] == "Parallel"
    assert agents["updateStrategy"] == {"type": "RollingUpdate"}
    (pdb,) = [
        p
        for p in k8s.docs()
        if p["kind"] == "PodDisruptionBudget"
        and k8s.selects(p["spec"]["selector"]["matchLabels"], k8s.pod_labels("agent"))
    ]
    assert pdb["spec"]["maxUnavailable"] == 1


def test_the_gateway_lists_every_agent_pod() -> None:
    # One entry per replica, by its stable DNS name; the order is free (ids name their
    # agent, not a position).
    agents = k8s.one("StatefulSet", "agent")
    name, service = agents["metadata"]["name"], agents["spec"]["serviceName"]
    expected = [f"{name}-{i}.{service}:{AGENT_PORT}" for i in range(agents["spec"]["replicas"])]
    assert sorted(_agent_addrs()) == expected
    gateway = k8s.one("Service", "gateway")
    assert [p["port"] for p in gateway["spec"]["ports"]] == [GATEWAY_PORT]
    assert k8s.selects(gateway["spec"]["selector"], k8s.pod_labels("gateway"))


def test_each_agent_is_named_after_its_pod() -> None:
    # The name prefixes the ids the agent mints, and the gateway routes a resume by it:
    # the pod's name is unique, valid and survives a restart or a replacement.
    [naming] = [e for e in k8s.container("agent")["env"] if e["name"] == AGENT_NAME_ENV]
    assert naming["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    for i, addr in enumerate(sorted(_agent_addrs())):
        pod = f"agent-{i}"
        assert addr.startswith(f"{pod}.")
        assert checked_agent_name(pod) == pod
        assert owner_name(f"{pod}-{'0' * 32}") == pod


def test_direct_grpc_clients_get_one_agent() -> None:
    # `kubectl port-forward svc/agent` and `s2c generate` must reach one agent: a Service
    # over all of them could send a WatchGeneration to one that does not hold it.
    service = k8s.one("Service", "agent")["spec"]
    assert service["type"] == "ClusterIP"
    assert service["selector"]["statefulset.kubernetes.io/pod-name"] == "agent-0"
    assert k8s.selects(
        {k: v for k, v in service["selector"].items() if not k.startswith("statefulset.")},
        k8s.pod_labels("agent"),
    )


def test_each_agent_ordinal_has_a_sqlite_run_store_of_its_own() -> None:
    # SQLite (WAL) needs a local filesystem and one process: a ReadWriteOnce claim per pod
    # (data-agent-<i>), never a shared volume, which a replaced pod gets back.
    claim = k8s.data_claim("agent")
    assert claim["metadata"]["name"] == "data"
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert claim not in (k8s.data_claim("gateway"), k8s.data_claim("tools"))
    # No claim outside the template that agents could share.
    claims = [d for d in k8s.docs() if d["kind"] == "PersistentVolumeClaim"]
    component = "app.kubernetes.io/component"
    assert not [c for c in claims if c["metadata"]["labels"].get(component) == "agent"]
    retention = k8s.one("StatefulSet", "agent")["spec"]["persistentVolumeClaimRetentionPolicy"]
    assert retention == {"whenDeleted": "Retain", "whenScaled": "Retain"}
