#!/usr/bin/env bash
# Stops the cluster that tools/start_rgw.sh started in DIR (by its pid files) and removes DIR.
set -uo pipefail
D=${1:?dir}
ours() { [[ "$(cat "/proc/$1/comm" 2>/dev/null)" =~ ^(ceph-mon|ceph-osd|radosgw)$ ]]; }
running() {
  for f in "$D"/run/*.pid; do
    [ -f "$f" ] && ours "$(cat "$f")" && return 0
  done
  return 1
}
for signal in TERM KILL; do
  for f in "$D"/run/*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    ours "$pid" && kill -s "$signal" "$pid" 2>/dev/null
  done
  # Up to 0.5 s for them to exit.
  for _ in 1 2 3 4 5; do
    running || break
    sleep 0.1
  done
done
rm -rf "$D"
