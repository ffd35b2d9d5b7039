#!/usr/bin/env bash
# A throwaway one-host Ceph cluster with an S3 endpoint, for tests and measurements:
# 1 mon, 1 memstore OSD (1 GiB in memory, or RGW_MEMSTORE_BYTES), auth none, pool size 1,
# radosgw on 127.0.0.1. The mon proposes each change within 50 ms (Ceph's default gathers for 1 s,
# and radosgw's first start makes a dozen pool changes one after another: 12 s instead of 3).
#
#   tools/start_rgw.sh DIR RGW_PORT MON_PORT MON_V2_PORT
#
# Every daemon forks into the background with its pid file, log and socket under DIR;
# on success it prints one line: READY endpoint=… key=… secret=… pids: MON OSD RGW.
# Start it detached (setsid, stdio not inherited), as tests/rgw.ts does. Stop it with
# tools/stop_rgw.sh DIR. Needs: apt-get install -y ceph-mon ceph-osd radosgw ceph-common
set -euo pipefail
D=${1:?dir}; PORT=${2:?rgw port}; MONP=${3:?mon port}; MONP2=${4:?mon v2 port}
KEY=${RGW_ACCESS_KEY:-UDSTESTKEY}; SECRET=${RGW_SECRET_KEY:-UDSTESTSECRET}
rm -rf "$D"; mkdir -p "$D"/{run,log,mon.a,osd.0,rgw}; cd "$D"
FSID=$(cat /proc/sys/kernel/random/uuid)
cat > ceph.conf <<CONF
[global]
fsid = $FSID
mon_host = [v2:127.0.0.1:$MONP2,v1:127.0.0.1:$MONP]
public_addr = 127.0.0.1
auth_cluster_required = none
auth_service_required = none
auth_client_required = none
ms_mon_client_mode = crc
ms_client_mode = crc
osd_pool_default_size = 1
osd_pool_default_min_size = 1
mon_allow_pool_size_one = true
mon_warn_on_pool_no_redundancy = false
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
osd_pool_default_pg_autoscale_mode = off
osd_crush_chooseleaf_type = 0
mon_max_pg_per_osd = 1000
run_dir = $D/run
log_file = $D/log/\$name.log
admin_socket = $D/run/\$name.asok
pid_file = $D/run/\$name.pid
keyring = $D/keyring
client_mount_timeout = 30
rados_mon_op_timeout = 30
[mon]
paxos_propose_interval = 0.05
paxos_min_wait = 0.01
mon_data = $D/mon.\$id
[osd]
osd_data = $D/osd.\$id
osd_objectstore = memstore
memstore_device_bytes = ${RGW_MEMSTORE_BYTES:-1073741824}
[client.rgw.uds]
rgw_frontends = beast endpoint=127.0.0.1:$PORT
rgw_data = $D/rgw
CONF
C="-c $D/ceph.conf"
ceph-authtool --create-keyring keyring --gen-key -n mon. --cap mon 'allow *' >/dev/null
monmaptool --create --fsid "$FSID" --addv a "[v2:127.0.0.1:$MONP2,v1:127.0.0.1:$MONP]" monmap >/dev/null
ceph-mon $C --mkfs -i a --monmap monmap --keyring keyring
ceph-mon $C -i a
ID=$(ceph $C osd create)
ceph-osd $C -i "$ID" --mkfs 2>/dev/null
ceph-osd $C -i "$ID" 2>/dev/null
radosgw $C -n client.rgw.uds
for _ in $(seq 1 600); do
  curl -sf -o /dev/null "http://127.0.0.1:$PORT/" && break
  sleep 0.1
done
# Its own admin socket: the default is the running radosgw's, and a socket at /dev/null
# would replace /dev/null and delete it on exit.
radosgw-admin $C -n client.rgw.uds --admin-socket="$D/run/radosgw-admin.asok" user create --uid=uds \
  --display-name=UDS --access-key="$KEY" --secret="$SECRET" >/dev/null
echo "READY endpoint=http://127.0.0.1:$PORT key=$KEY secret=$SECRET pids: $(cat run/mon.a.pid) $(cat run/osd.0.pid) $(cat run/client.rgw.uds.pid)"
