#!/bin/sh
# Copied from ../shared/dist/slurm-local.sh (the shared engine recipes) so that CI, on a fresh
# checkout, has it; keep the two in step.
# A two-node Slurm cluster on this one host, for tests of barrage's shard contract.
#   slurm-local.sh start DIR   install (Debian slurm-wlm + munge) if missing, start munged (if not
#                              running), slurmctld and two slurmd "nodes" n1, n2; state under DIR.
#                              Then: export SLURM_CONF=DIR/slurm.conf
#   slurm-local.sh stop DIR    stop what `start` started, by the PIDs it recorded.
# Ports 26817 (controller) and 26821-26822 (nodes) must be free. Checked on Debian 12, Slurm 22.05.
set -eu
cmd=${1:?start|stop}; D=$(realpath -m "${2:?state directory}")
case "$cmd" in
start)
  if ! command -v slurmctld >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
  fi
  # A daemon of another cluster still on a port would take this cluster's jobs: wait a
  # little for it to go, then refuse.
  for _ in $(seq 1 15); do
    busy=$(ss -Hltn 2>/dev/null | awk '{print $4}' | grep -E ':(26817|26821|26822)$' || true)
    [ -z "$busy" ] && break
    sleep 1
  done
  if [ -n "$busy" ]; then
    echo "slurm-local: ports in use by another cluster: $busy; stop it first" >&2
    exit 1
  fi
  mkdir -p "$D/state" "$D/log" "$D/spool/n1" "$D/spool/n2"
  cat > "$D/slurm.conf" <<EOF
ClusterName=barrage
SlurmctldHost=localhost
SlurmctldPort=26817
AuthType=auth/munge
CryptoType=crypto/munge
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmUser=root
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd-%n.pid
SlurmdSpoolDir=$D/spool/%n
StateSaveLocation=$D/state
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd-%n.log
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=n[1-2] NodeHostname=localhost NodeAddr=127.0.0.1 Port=[26821-26822] CPUs=2 RealMemory=2000
PartitionName=load Nodes=n[1-2] Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
EOF
  export SLURM_CONF="$D/slurm.conf"
  if ! pgrep -x munged >/dev/null 2>&1; then
    mkdir -p /run/munge; chown munge:munge /run/munge
    [ -f /etc/munge/munge.key ] || { runuser -u munge -- mungekey -c 2>/dev/null || /usr/sbin/create-munge-key -f; }
    runuser -u munge -- munged; cp /run/munge/munged.pid "$D/munged.pid"
  fi
  slurmctld -f "$SLURM_CONF"
  slurmd -f "$SLURM_CONF" -N n1
  slurmd -f "$SLURM_CONF" -N n2
  for _ in $(seq 1 30); do [ "$(sinfo -h -o %T 2>/dev/null | grep -c idle)" -ge 1 ] && break; sleep 1; done
  sinfo -N ;;
stop)
  for f in "$D/slurmd-n1.pid" "$D/slurmd-n2.pid" "$D/slurmctld.pid" "$D/munged.pid"; do
    [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
  done ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
