#!/usr/bin/env bash
# Makes a local stand-in for python:3.11-slim-bookworm with debootstrap, for machines that
# cannot pull from Docker Hub (run as root; needs debootstrap and a reachable Debian mirror):
#
#   scripts/container/base-image.sh [TAG]        # default TAG: local/python:3.11-bookworm
#   docker build --build-arg PYTHON_IMAGE=local/python:3.11-bookworm ...
#
# Bookworm's own Python (3.11) in a minimal Debian, with the `python` command the official
# image has. The host's extra CA certificates (/usr/local/share/ca-certificates) are copied
# in, so pip and apt inside a build trust an HTTPS-intercepting proxy the host trusts.
# Mirror: the host's apt sources, or DEBIAN_MIRROR=http://... .
set -euo pipefail

TAG=${1:-local/python:3.11-bookworm}
DOCKER=${DOCKER:-docker}
SUITE=bookworm

die() { echo "base-image: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "debootstrap needs root"
command -v debootstrap >/dev/null || die "debootstrap is missing: apt-get install debootstrap"

mirror=${DEBIAN_MIRROR:-}
if [ -z "$mirror" ] && [ -f /etc/apt/sources.list.d/debian.sources ]; then
  mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
fi
if [ -z "$mirror" ] && [ -f /etc/apt/sources.list ]; then
  mirror=$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list)
fi
mirror=${mirror:-http://deb.debian.org/debian}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root="$work/rootfs"
echo "base-image: debootstrap $SUITE from $mirror (a few minutes)"
debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates \
  "$SUITE" "$root" "$mirror" >"$work/debootstrap.log" 2>&1 \
  || { tail -20 "$work/debootstrap.log" >&2; die "debootstrap failed"; }

# The image's apt sources: the host's deb822 file when it has one (it may name a snapshot
# or the security suite), else the mirror the root was made from.
rm -f "$root/etc/apt/sources.list"
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  grep -v '^#' /etc/apt/sources.list.d/debian.sources >"$root/etc/apt/sources.list.d/debian.sources"
else
  echo "deb $mirror $SUITE main" >"$root/etc/apt/sources.list"
fi
ln -sf python3 "$root/usr/bin/python"
# As Debian's official images do: apt drops downloaded packages after each install.
cat >"$root/etc/apt/apt.conf.d/docker-clean" <<'CONF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
CONF
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  chroot "$root" update-ca-certificates >/dev/null
fi
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/archives/*.deb

tar --numeric-owner -C "$root" -c . | "$DOCKER" import \
  --change 'ENV LANG=C.UTF-8' \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["python3"]' - "$TAG" >/dev/null
echo "base-image: $TAG ($("$DOCKER" image inspect --format '{{.Size}}' "$TAG") bytes)"
