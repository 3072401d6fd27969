# Two images from one file; the command picks the role:
#   docker build -t s2c-grpc .                         every role (the tool workers need it:
#                                                      it carries Chromium)
#   docker build --target server -t s2c-grpc-server .  gateway and agent only: no browser,
#                                                      no Playwright (about 1 GB smaller)
#   docker run IMAGE gateway --host 0.0.0.0 --port 7001
#   docker run IMAGE agent --listen 0.0.0.0:50051 --metrics-listen 0.0.0.0:9101
#   docker run IMAGE tools --listen 0.0.0.0:50052 --metrics-listen 0.0.0.0:9102
# Inside a container a service must listen on 0.0.0.0, not the CLI's 127.0.0.1 default.
# Keys are never part of the image: pass them as environment at run time.
#
# Only instructions every current builder parses (Engine 20.10's BuildKit and legacy
# builder, buildah): no `# syntax` line (it makes BuildKit fetch a frontend image at each
# build), no heredocs, no `COPY --chmod`. Without Docker Hub, make the base image with
# scripts/container/base-image.sh and pass --build-arg PYTHON_IMAGE=local/python:3.11-bookworm.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# --- build: the project and its runtime dependencies in a venv the images copy -----------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /src
# Dependencies first, from pyproject.toml alone, so a source change reuses this layer. Only
# [project.dependencies]: the extras (dev tools) are not for the services.
COPY pyproject.toml README.md ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt
COPY gen ./gen
COPY services ./services
# A regular (non-editable) install: the images need no source tree.
RUN pip install --no-deps . \
    && s2c --help >/dev/null

# The server image's venv: the same, less Playwright (its Node driver is 160 MB that only
# the tool workers' browser uses).
FROM build AS build-server
RUN pip uninstall -y playwright

# --- vendor: the CDN runtimes generated pages load, for renders with no internet ----------
# (docs/offline.md) From the npm registry as vendor/package-lock.json pins them, with no
# install scripts, then checked file by file against vendor/manifest.json by the installed
# project (which writes the index the services read). Debian's nodejs and npm stay here.
FROM build AS vendor
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        nodejs \
        npm \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /var/cache/apt/*.bin
WORKDIR /opt/s2c-vendor
COPY vendor/package.json vendor/package-lock.json vendor/manifest.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund --loglevel=error \
    && rm -rf /root/.npm \
    && S2C_VENDOR_DIR=/opt/s2c-vendor python -m services.common.vendor

# --- runtime: what both images share --------------------------------------------------------
FROM ${PYTHON_IMAGE} AS runtime
# Files no service reads, which dpkg then never unpacks (the packages still count as
# installed, so apt stays consistent): documentation (but the licences), manuals and
# translations, and Mesa's OpenGL drivers with the LLVM and Z3 they link (165 MB; headless
# Chromium with --disable-gpu draws on the CPU and never loads them).
RUN printf '%s\n' \
        'path-exclude=/usr/share/doc/*' \
        'path-include=/usr/share/doc/*/copyright' \
        'path-exclude=/usr/share/man/*' \
        'path-exclude=/usr/share/locale/*' \
        'path-exclude=/usr/lib/*/dri/*' \
        'path-exclude=/usr/lib/*/libLLVM-*' \
        'path-exclude=/usr/lib/*/libz3.so*' \
        > /etc/dpkg/dpkg.cfg.d/s2c-slim
# tini reaps children (Chromium's) and forwards signals to the service. Each apt step
# removes its lists and downloaded packages (a base without Debian's docker-clean hook
# would otherwise keep them in the layer).
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends tini \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /var/cache/apt/*.bin
# Health probe for whichever service the container runs (deploy/docker/healthcheck.py).
COPY deploy/docker/healthcheck.py /usr/local/bin/s2c-healthcheck
# A regular account: `useradd --system` warns about a uid past SYS_UID_MAX (999), and a
# fixed uid of 10001 is what the Kubernetes manifests' runAsUser and fsGroup name.
RUN chmod 0755 /usr/local/bin/s2c-healthcheck \
    && groupadd --gid 10001 s2c \
    && useradd --uid 10001 --gid s2c --no-log-init --create-home --home-dir /home/s2c \
        --shell /usr/sbin/nologin s2c \
    && install -d -o s2c -g s2c -m 0750 /data /data/assets
# Both images render with them: the gateway serves /vendor/ and offline exports, the tool
# workers' Chromium answers CDN URLs from them. Read-only, owned by root.
COPY --from=vendor /opt/s2c-vendor /opt/s2c-vendor
# S2C_MCP=off: a gateway listening beyond loopback serves /mcp only with a token
# (S2C_MCP_TOKEN) and refuses to start with /mcp on and none; set both to serve it.
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    S2C_DATA_DIR=/data \
    S2C_VENDOR_DIR=/opt/s2c-vendor \
    S2C_MCP=off
WORKDIR /home/s2c
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
    CMD ["/usr/local/bin/s2c-healthcheck"]
ENTRYPOINT ["/usr/bin/tini", "--", "s2c"]

# --- server: the gateway and the agent ------------------------------------------------------
FROM runtime AS server
COPY --from=build-server /opt/venv /opt/venv
USER 10001:10001
EXPOSE 7001 50051 9101
CMD ["gateway", "--host", "0.0.0.0", "--port", "7001"]

# --- the default image: every role, with Chromium for the tool workers ------------------------
FROM runtime
# chromium: screenshot_preview (Playwright drives Debian's build, it downloads none of its own).
# libatomic1: Playwright's Node driver links it; the slim base lacks it and chromium does not
# pull it in, so without it no browser ever launches. Fonts so rendered pages are not all tofu.
# More scripts: --build-arg EXTRA_APT_PACKAGES="fonts-noto-core fonts-noto-cjk".
# tesseract-ocr (with its English data): the OCR of the fidelity score (docs/eval.md).
# Before the venv: a source change rebuilds neither this layer nor the ones above.
ARG EXTRA_APT_PACKAGES=""
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        chromium \
        fonts-dejavu-core \
        fonts-liberation \
        fonts-noto-color-emoji \
        libatomic1 \
        tesseract-ocr \
        ${EXTRA_APT_PACKAGES} \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /var/cache/apt/*.bin
COPY --from=build /opt/venv /opt/venv
ENV S2C_CHROMIUM_PATH=/usr/bin/chromium
USER 10001:10001
EXPOSE 7001 50051 50052 9101 9102
CMD ["gateway", "--host", "0.0.0.0", "--port", "7001"]
