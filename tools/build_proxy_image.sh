#!/usr/bin/env bash
# Builds a local nginx image from Debian's archive (nginx 1.22, as in bookworm), for running
# deploy/compose.yaml where Docker Hub's nginx image cannot be pulled:
#
#   tools/build_proxy_image.sh [TAG]       # default TAG: localhost/uds-nginx:1.22
#   UDS_PROXY_IMAGE=localhost/uds-nginx:1.22 podman-compose -f deploy/compose.yaml up -d
#
# Laid out like the official nginx image where deploy/compose.yaml relies on it: configuration from
# /etc/nginx/conf.d/*.conf, logs to stdout/stderr, `nginx -g 'daemon off;'` in the foreground.
# Needs root (or sudo), mmdebstrap and podman. UDS_DEBIAN_MIRROR as in build_base_image.sh.
set -euo pipefail
TAG=${1:-localhost/uds-nginx:1.22}
MIRROR=${UDS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY=${UDS_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mmdebstrap --quiet --variant=extract --include=nginx,nginx-common \
  bookworm "$work/root" \
  "deb $MIRROR bookworm main" "deb $MIRROR bookworm-updates main" \
  "deb $SECURITY bookworm-security main" </dev/null

r="$work/root"
rm -rf "$r/dev" "$r/etc/apt" "$r/var/lib/apt" "$r/var/cache/apt" "$r/var/lib/dpkg" \
  "$r/usr/share/man" "$r/usr/share/doc" "$r/usr/share/locale" "$r/etc/nginx/sites-enabled"
mkdir -p "$r/dev" "$r/proc" "$r/sys" "$r/tmp" "$r/run" "$r/var/log/nginx" "$r/var/lib/nginx" \
  "$r/etc/nginx/conf.d" "$r/etc/nginx/modules-enabled"
chmod 1777 "$r/tmp"
cat >"$r/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/usr/sbin/nologin
www-data:x:33:33:www-data:/var/www:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
EOF
cat >"$r/etc/group" <<'EOF'
root:x:0:
www-data:x:33:
nogroup:x:65534:
EOF
printf 'hosts: files dns\n' >"$r/etc/nsswitch.conf"
ln -sf /dev/stdout "$r/var/log/nginx/access.log"
ln -sf /dev/stderr "$r/var/log/nginx/error.log"
tar --numeric-owner -C "$r" -cf "$work/root.tar" .

podman import --quiet \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'EXPOSE 80' \
  --change 'STOPSIGNAL SIGQUIT' \
  --change 'CMD ["nginx", "-g", "daemon off;"]' \
  "$work/root.tar" "$TAG"
