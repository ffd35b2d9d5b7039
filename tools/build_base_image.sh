#!/usr/bin/env bash
# Builds a slim local base image equivalent to denoland/deno:2.9.6, from Debian's archive and npm
# only (for machines without Docker Hub):
#
#   tools/build_base_image.sh [TAG]        # default TAG: localhost/uds-deno-base:2.9.6
#
# - Debian bookworm, unpacked by mmdebstrap (--variant=extract): libc6, libgcc-s1, tini, the CA
#   bundle of ca-certificates, and dash as /bin/sh (Compose tools run health checks through
#   `/bin/sh -c`). No package manager, no dpkg database, no coreutils.
# - /usr/bin/deno from the npm package @deno/linux-x64-glibc@2.9.6 (what `npx deno` runs).
# - The official image's layout: /tini, user and group `deno` (uid/gid 1993), DENO_DIR=/deno-dir/.
#
# Needs root, mmdebstrap, npm and podman (apt-get install mmdebstrap podman npm). Set
# UDS_DEBIAN_MIRROR / UDS_DEBIAN_SECURITY_MIRROR for other Debian mirrors. Prints the image id.
set -euo pipefail
TAG=${1:-localhost/uds-deno-base:2.9.6}
DENO_VERSION=2.9.6
MIRROR=${UDS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY=${UDS_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The Deno binary, from npm (its tarball holds package/deno).
(cd "$work" && npm pack --silent "@deno/linux-x64-glibc@$DENO_VERSION" >/dev/null)
tar -xzf "$work"/deno-linux-x64-glibc-*.tgz -C "$work" package/deno
test -x "$work/package/deno"

# The Debian packages whose files make up the image. Their dependencies (dpkg, debconf, perl,
# openssl, …) are unpacked by mmdebstrap too and removed below: no maintainer script runs here.
packages="libc6 libgcc-s1 tini ca-certificates dash"
mmdebstrap --quiet --variant=extract --include="${packages// /,}" --skip=cleanup/apt/cache \
  bookworm "$work/root" \
  "deb $MIRROR bookworm main" "deb $MIRROR bookworm-updates main" \
  "deb $SECURITY bookworm-security main" </dev/null

r="$work/root"
for p in $packages; do
  dpkg-deb --fsys-tarfile "$r/var/cache/apt/archives/${p}"_*.deb | tar -t
done | sed -e 's#^\./##' -e 's#/$##' | sort -u >"$work/keep"
(cd "$r" && find . -mindepth 1 \( -type f -o -type l \) -printf '%P\n') | sort >"$work/all"
comm -23 "$work/all" "$work/keep" | (cd "$r" && xargs -r -d '\n' rm -f)
find "$r" -mindepth 1 -depth -type d -empty -delete

cd "$r"
# From ca-certificates only the bundle (what update-ca-certificates would write).
mkdir -p etc/ssl/certs
cat usr/share/ca-certificates/mozilla/*.crt >etc/ssl/certs/ca-certificates.crt
rm -rf usr/share/ca-certificates usr/sbin/update-ca-certificates
# Nothing here converts character sets or reads manuals; each package's copyright file stays.
rm -rf usr/lib/x86_64-linux-gnu/gconv usr/bin/tini-static usr/share/man usr/share/lintian \
  usr/share/locale usr/share/bug usr/share/menu
find usr/share/doc -type f ! -name copyright -delete
find usr/share/doc -type l -delete
find usr/share -depth -type d -empty -delete
[ -e bin/sh ] || ln -s dash bin/sh
ln -sf usr/bin/tini tini
install -m 0755 "$work/package/deno" usr/bin/deno
printf '%s\n' 'root:x:0:0:root:/root:/usr/sbin/nologin' \
  'deno:x:1993:1993::/home/deno:/usr/sbin/nologin' \
  'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin' >etc/passwd
printf '%s\n' 'root:x:0:' 'deno:x:1993:' 'nogroup:x:65534:' >etc/group
printf 'hosts: files dns\n' >etc/nsswitch.conf
mkdir -p dev proc sys run tmp var/tmp root home/deno deno-dir usr/local/bin
chmod 1777 tmp var/tmp
chmod 700 root
chown 1993:1993 home/deno deno-dir
cd - >/dev/null
tar --numeric-owner -C "$r" -cf "$work/root.tar" .

podman import --quiet \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV DENO_DIR=/deno-dir/' \
  --change 'ENV DENO_INSTALL_ROOT=/usr/local' \
  --change "ENV DENO_VERSION=$DENO_VERSION" \
  --change 'ENTRYPOINT ["/tini", "--"]' \
  --change 'CMD ["deno", "--version"]' \
  "$work/root.tar" "$TAG"
