# syntax=docker/dockerfile:1
# One image for all three services; the command picks the role:
#   docker run IMAGE gateway --host 0.0.0.0 --port 7001
#   docker run IMAGE agent --listen 0.0.0.0:50051 --metrics-listen 0.0.0.0:9101
#   docker run IMAGE tools --listen 0.0.0.0:50052 --metrics-listen 0.0.0.0:9102
# Inside a container a service must listen on 0.0.0.0, not the CLI's 127.0.0.1 default.
# Keys are never part of the image: pass them as environment at run time.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# --- build: the project and its dependencies in a venv that the runtime stage copies ------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /src
# Dependencies first, from pyproject.toml alone, so a source change reuses this layer.
COPY pyproject.toml README.md ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt
COPY gen ./gen
COPY services ./services
# A regular (non-editable) install: the runtime image needs no source tree.
RUN pip install --no-deps . \
    && s2c --help >/dev/null

# --- runtime -------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE}
# chromium: screenshot_preview (Playwright drives Debian's build, it downloads none of its own).
# Fonts so rendered pages are not all tofu; tini reaps Chromium's children and forwards signals.
# More scripts: --build-arg EXTRA_APT_PACKAGES="fonts-noto-core fonts-noto-cjk".
ARG EXTRA_APT_PACKAGES=""
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        chromium \
        fonts-dejavu-core \
        fonts-liberation \
        fonts-noto-color-emoji \
        tini \
        ${EXTRA_APT_PACKAGES} \
    && rm -rf /var/lib/apt/lists/*

RUN groupadd --system --gid 10001 s2c \
    && useradd --system --uid 10001 --gid s2c --home-dir /home/s2c --create-home \
        --shell /usr/sbin/nologin s2c \
    && install -d -o s2c -g s2c -m 0750 /data /data/assets

COPY --from=build /opt/venv /opt/venv

# Health probe for whichever service this container runs: it reads the role and the port
# from PID 1's command line (tini -- s2c ROLE ...), then asks the gateway's /healthz or the
# gRPC server's grpc.health.v1 service. Kubernetes uses its own probes instead (deploy/).
COPY --chmod=0755 <<'EOF' /usr/local/bin/s2c-healthcheck
#!/opt/venv/bin/python
"""Exit 0 when the s2c service that is this container's PID 1 reports healthy."""

import sys
import urllib.request
from pathlib import Path

DEFAULTS = {"gateway": "7001", "agent": "127.0.0.1:50051", "tools": "127.0.0.1:50052"}


def option(args, name, default):
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return default


def main():
    args = [a.decode() for a in Path("/proc/1/cmdline").read_bytes().split(b"\0") if a]
    role = next((a for a in args if a in DEFAULTS), None)
    if role is None:
        print("s2c-healthcheck: PID 1 runs no s2c service", file=sys.stderr)
        return 1
    rest = args[args.index(role) + 1 :]
    if role == "gateway":
        url = f"http://127.0.0.1:{option(rest, '--port', DEFAULTS[role])}/healthz"
        with urllib.request.urlopen(url, timeout=3) as response:
            return 0 if response.status == 200 else 1
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    host, _, port = option(rest, "--listen", DEFAULTS[role]).rpartition(":")
    if host in ("", "0.0.0.0", "[::]", "::"):
        host = "127.0.0.1"
    with grpc.insecure_channel(f"{host}:{port}") as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(), timeout=3
        )
    return 0 if reply.status == health_pb2.HealthCheckResponse.SERVING else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as exc:  # any failure means unhealthy
        print(f"s2c-healthcheck: {exc}", file=sys.stderr)
        sys.exit(1)
EOF

ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    S2C_DATA_DIR=/data \
    S2C_CHROMIUM_PATH=/usr/bin/chromium

USER 10001:10001
WORKDIR /home/s2c
EXPOSE 7001 50051 50052 9101 9102

HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
    CMD ["/usr/local/bin/s2c-healthcheck"]

ENTRYPOINT ["/usr/bin/tini", "--", "s2c"]
CMD ["gateway", "--host", "0.0.0.0", "--port", "7001"]
