"""The Kubernetes manifests as data: every object in deploy/, and each service's pods."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
MANIFESTS = sorted(p for p in DEPLOY.glob("*.yaml") if p.name != "kustomization.yaml")
DATA_DIR = "/data"  # S2C_DATA_DIR in every pod


def docs() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in MANIFESTS:
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    return docs


def one(kind: str, name: str) -> dict[str, Any]:
    found = [d for d in docs() if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind}/{name}, found {len(found)}"
    return found[0]


def workloads() -> dict[str, dict[str, Any]]:
    """Each service's Deployment (gateway, tools) or StatefulSet (agent), by name."""
    kinds = ("Deployment", "StatefulSet")
    return {d["metadata"]["name"]: d for d in docs() if d["kind"] in kinds}


def containers(deployment: dict[str, Any]) -> list[dict[str, Any]]:
    containers: list[dict[str, Any]] = deployment["spec"]["template"]["spec"]["containers"]
    return containers


def container(name: str) -> dict[str, Any]:
    (container,) = containers(workloads()[name])
    return container


def env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}


def pod_labels(name: str) -> dict[str, str]:
    labels: dict[str, str] = workloads()[name]["spec"]["template"]["metadata"]["labels"]
    return labels


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def claim_at(name: str, path: str) -> tuple[dict[str, Any], bool]:
    """The PersistentVolumeClaim mounted at `path` in `name`'s pods, and whether read-only."""
    pod = workloads()[name]["spec"]["template"]["spec"]
    volumes = {
        v["name"]: v["persistentVolumeClaim"]
        for v in pod.get("volumes", [])
        if "persistentVolumeClaim" in v
    }
    (container,) = pod["containers"]
    assert env(container)["S2C_DATA_DIR"] == DATA_DIR, name
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == path]
    templates = {
        t["metadata"]["name"]: t for t in workloads()[name]["spec"].get("volumeClaimTemplates", [])
    }
    if mount["name"] in templates:  # a StatefulSet's claim per pod
        assert mount["name"] not in volumes, (name, path)
        return templates[mount["name"]], bool(mount.get("readOnly"))
    source = volumes[mount["name"]]
    read_only = bool(mount.get("readOnly")) and bool(source.get("readOnly"))
    assert read_only or not (mount.get("readOnly") or source.get("readOnly")), (name, path)
    return one("PersistentVolumeClaim", source["claimName"]), read_only


def data_claim(name: str) -> dict[str, Any]:
    """The PersistentVolumeClaim mounted at S2C_DATA_DIR in `name`'s pods."""
    return claim_at(name, DATA_DIR)[0]
