#!/usr/bin/env bash
# Uploads a big file through the admin form of a real server (`deno task start`)
# and reports the time, the server's peak resident memory (VmHWM) and whether
# the artifact downloaded through the client API has the right SHA-256.
#
#   tools/measure_upload.sh [size_in_MiB]   (default 1024)
#
# Not part of the test suite. Everything it writes lives under ./data/measure-*.
set -euo pipefail
cd "$(dirname "$0")/.."

size_mib=${1:-1024}
work="./data/measure-$$"
mkdir -p "$work"
port=$((20000 + RANDOM % 40000))
base="http://127.0.0.1:$port"
password="measure-$(head -c 12 /dev/urandom | base64 | tr -d '/+=')"
jar="$work/cookies"
server_pid=""

cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  if [ -n "${task_pid:-}" ]; then kill "$task_pid" 2>/dev/null || true; fi
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "writing a ${size_mib} MiB random file"
head -c "$((size_mib * 1024 * 1024))" /dev/urandom >"$work/upload.bin"
expected=$(sha256sum "$work/upload.bin" | cut -d' ' -f1)

APP_PORT=$port APP_HOST=127.0.0.1 APP_BASE_URL=$base APP_DATA_DIR="$work/state" \
  APP_ADMIN_USERNAME=admin APP_ADMIN_PASSWORD="$password" \
  deno task start >"$work/server.log" 2>&1 &
task_pid=$!
for _ in $(seq 1 100); do
  grep -q "listening on" "$work/server.log" 2>/dev/null && break
  sleep 0.2
done
server_pid=$(pgrep -P "$task_pid" | head -n 1)
echo "server pid $server_pid on $base"

token() { grep -o 'name="csrf_token" value="[^"]*"' | head -n 1 | sed 's/.*value="//; s/"$//'; }

login_token=$(curl -sf -c "$jar" -b "$jar" "$base/admin/login" | token)
curl -sf -o /dev/null -c "$jar" -b "$jar" \
  --data-urlencode "username=admin" --data-urlencode "password=$password" \
  --data-urlencode "csrf_token=$login_token" "$base/admin/login"
csrf=$(curl -sf -c "$jar" -b "$jar" "$base/admin" | token)
curl -sf -o /dev/null -c "$jar" -b "$jar" \
  -d "name=Measure&slug=measure&csrf_token=$csrf" "$base/admin/projects"

before=$(grep VmHWM "/proc/$server_pid/status" | awk '{print $2}')
start=$(date +%s.%N)
status=$(curl -s -o /dev/null -w "%{http_code}" -c "$jar" -b "$jar" \
  -F "csrf_token=$csrf" -F "version=1.0.0" -F "file=@$work/upload.bin" \
  "$base/admin/projects/measure/releases")
end=$(date +%s.%N)
after=$(grep VmHWM "/proc/$server_pid/status" | awk '{print $2}')

key=$(curl -sf -c "$jar" -b "$jar" -d "name=measure&can_download=on&scope_mode=all_projects&csrf_token=$csrf" \
  "$base/admin/api-keys" | grep -o 'data-api-key="[^"]*"' | sed 's/data-api-key="//; s/"$//')
download_url=$(curl -sf -H "Authorization: Bearer $key" "$base/api/v1/projects/measure/releases/latest" |
  grep -o '"download_url":"[^"]*"' | sed 's/"download_url":"//; s/"$//')
downloaded=$(curl -sf -H "Authorization: Bearer $key" "$base$download_url" | sha256sum | cut -d' ' -f1)

seconds=$(echo "$end - $start" | bc)
echo "upload status:        $status (303 expected)"
echo "upload time:          ${seconds} s for ${size_mib} MiB"
echo "throughput:           $(echo "$size_mib * 1048576 / $seconds / 1000000" | bc) MB/s"
echo "server VmHWM before:  $((before / 1024)) MiB"
echo "server VmHWM after:   $((after / 1024)) MiB"
if [ "$downloaded" = "$expected" ]; then
  echo "checksum:             ok ($expected)"
else
  echo "checksum:             MISMATCH (sent $expected, got $downloaded)"
  exit 1
fi
