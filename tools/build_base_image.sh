#!/usr/bin/env bash
# Builds a slim local base image equivalent to denoland/deno:2.9.6, from Debian's archive and npm
# only (for machines without Docker Hub):
#
#   tools/build_base_image.sh [TAG]        # default TAG: localhost/uds-deno-base:2.9.6
#
# - Debian bookworm, unpacked by mmdebstrap (--variant=extract): libc6, libgcc-s1, tini and the
#   CA bundle of ca-certificates. No shell, no package manager, no dpkg database: nothing runs in
#   it but tini and Deno (the Dockerfile's RUN steps are exec-form `deno` commands).
# - /usr/bin/deno from the npm package @deno/linux-x64-glibc@2.9.6 (what `npx deno` runs).
# - The official image's layout: /tini, user and group `deno` (uid/gid 1993), DENO_DIR=/deno-dir/.
#
# Needs root (or sudo), mmdebstrap, npm and podman (apt-get install mmdebstrap podman npm).
# Set UDS_DEBIAN_MIRROR to use another Debian mirror. Prints the image id last.
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

# Runs on the unpacked root ($1) after mmdebstrap: trims what nothing here runs, writes the CA
# bundle (update-ca-certificates is not run by an extract), users, and the Deno binary.
cat >"$work/hook.sh" <<'HOOK'
set -eu
r=$1
cd "$r"
# Only the certificates' bundle is needed from ca-certificates (and its openssl/debconf/perl deps).
mkdir -p etc/ssl/certs
cat usr/share/ca-certificates/mozilla/*.crt > etc/ssl/certs/ca-certificates.crt
rm -rf usr/share/ca-certificates etc/ca-certificates* usr/sbin/update-ca-certificates \
  usr/bin/openssl usr/lib/ssl usr/lib/x86_64-linux-gnu/libssl.so* \
  usr/lib/x86_64-linux-gnu/libcrypto.so* usr/lib/x86_64-linux-gnu/ossl-modules \
  usr/lib/x86_64-linux-gnu/engines-3 etc/ssl/openssl.cnf \
  usr/bin/debconf* usr/share/debconf etc/debconf.conf usr/share/perl5 var/cache/debconf \
  usr/lib/x86_64-linux-gnu/gconv usr/bin/tini-static \
  usr/share/man usr/share/info usr/share/lintian usr/share/bash-completion usr/share/pixmaps \
  usr/share/locale usr/share/zoneinfo \
  etc/apt var/lib/apt var/cache/apt var/log/apt var/lib/dpkg
# Keep each package's copyright file; drop changelogs and other docs.
find usr/share/doc -type f ! -name copyright -delete 2>/dev/null || true
find usr/share/doc -type l -delete 2>/dev/null || true
find usr/share -depth -type d -empty -delete 2>/dev/null || true
cat > etc/passwd <<'EOF'
root:x:0:0:root:/root:/usr/sbin/nologin
deno:x:1993:1993::/home/deno:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
EOF
cat > etc/group <<'EOF'
root:x:0:
deno:x:1993:
nogroup:x:65534:
EOF
printf 'hosts: files dns\n' > etc/nsswitch.conf
mkdir -p tmp var/tmp root home/deno deno-dir usr/local/bin
chmod 1777 tmp var/tmp
chmod 700 root
chown 1993:1993 home/deno deno-dir
ln -sf usr/bin/tini tini
HOOK
install -m 0755 "$work/package/deno" "$work/deno"

mmdebstrap --quiet --variant=extract --include=libc6,libgcc-s1,tini,ca-certificates \
  bookworm "$work/root" \
  "deb $MIRROR bookworm main" "deb $MIRROR bookworm-updates main" \
  "deb $SECURITY bookworm-security main" </dev/null
sh "$work/hook.sh" "$work/root"
install -m 0755 "$work/deno" "$work/root/usr/bin/deno"
rm -rf "${work:?}/root/dev" && mkdir -p "$work/root/dev" "$work/root/proc" "$work/root/sys"
tar --numeric-owner -C "$work/root" -cf "$work/root.tar" .

podman import --quiet \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV DENO_DIR=/deno-dir/' \
  --change 'ENV DENO_INSTALL_ROOT=/usr/local' \
  --change "ENV DENO_VERSION=$DENO_VERSION" \
  --change 'ENTRYPOINT ["/tini", "--"]' \
  --change 'CMD ["deno", "--version"]' \
  "$work/root.tar" "$TAG"
