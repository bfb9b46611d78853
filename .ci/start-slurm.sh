#!/usr/bin/env bash
# Starts a one-node Slurm cluster on this machine for the sweep tests
# (Debian slurm-wlm and munge): a munge key, slurm.conf for this host on
# 127.0.0.1 with its CPUs and memory, munged, slurmctld, slurmd; waits until
# sinfo shows the node idle. No GPUs: the test campaign sets slurm.gpus false.
set -euo pipefail
command -v slurmctld >/dev/null || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends slurm-wlm munge; }
# Already up (a second call in the same session): nothing to start.
if pgrep -x slurmctld >/dev/null && sinfo -h -o %t 2>/dev/null | grep -qx idle; then
  echo "slurm: a cluster is already up and idle"; exit 0
fi
state="$(mktemp -d /tmp/jb-slurm.XXXXXX)"
host="$(hostname -s)"
cpus="$(nproc)"
mem_mb=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 512 ))
mkdir -p /etc/munge /run/munge /var/log/munge /var/lib/munge /etc/slurm "$state/ctld" "$state/d"
[ -s /etc/munge/munge.key ] || dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key status=none
chown -R munge:munge /etc/munge /run/munge /var/log/munge /var/lib/munge 2>/dev/null || true
chmod 0400 /etc/munge/munge.key
pgrep -x munged >/dev/null || munged --force
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=joulebench-ci
SlurmctldHost=${host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/d
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/slurmctld.log
SlurmdLogFile=$state/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/linear
SchedulerType=sched/backfill
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=${host} NodeAddr=127.0.0.1 CPUs=${cpus} RealMemory=${mem_mb} State=UNKNOWN
PartitionName=debug Nodes=${host} Default=YES MaxTime=INFINITE State=UP
CONF
slurmctld
slurmd
for _ in $(seq 60); do
  if sinfo -h -o %t 2>/dev/null | grep -qx idle; then echo "slurm: node $host idle (state in $state)"; exit 0; fi
  sleep 1
done
echo "slurm: node never became idle" >&2
sinfo >&2 || true
tail -20 "$state/slurmctld.log" "$state/slurmd.log" >&2 || true
exit 1
