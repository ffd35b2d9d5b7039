#!/usr/bin/env bash
# Stops the cluster that tools/start_rgw.sh started in DIR (by its pid files) and removes DIR.
set -uo pipefail
D=${1:?dir}
ours() { [[ "$(cat "/proc/$1/comm" 2>/dev/null)" =~ ^(ceph-mon|ceph-osd|radosgw)$ ]]; }
for signal in TERM KILL; do
  for f in "$D"/run/*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    ours "$pid" && kill -s "$signal" "$pid" 2>/dev/null
  done
  sleep 0.5
done
rm -rf "$D"
