#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for testing the leaderboard's --slurm mode (and
# for trying it before a real cluster). Debian's packages, started as plain daemons (no
# systemd needed) from a configuration generated in one folder; nothing outside that folder
# is changed but the packages installed.
#
# usage: scripts/slurm-local-cluster.sh start [--dir DIR] [--no-accounting]
#        scripts/slurm-local-cluster.sh stop [--dir DIR] [--keep]
#        scripts/slurm-local-cluster.sh status [--dir DIR]
#        scripts/slurm-local-cluster.sh env [--dir DIR]      prints: export SLURM_CONF=...
#
#   start            installs slurmctld, slurmd, munge and slurm-client with apt-get where
#                    missing (and slurmdbd + mariadb-server for the accounting database, so
#                    that sacct works), then starts munged, the database, slurmdbd,
#                    slurmctld and slurmd on localhost. Runs as root. Starting a cluster that
#                    is already up does nothing; one left half-started is stopped first.
#   stop             stops the daemons this script started (by their pid files) and
#                    removes the folder (--keep keeps it, logs included)
#   --dir DIR        the cluster's folder (default /tmp/kernel-workbook-slurm): slurm.conf,
#                    keys, state, spool, logs
#   --no-accounting  no slurmdbd nor database: sacct does not work, the leaderboard then
#                    reads job states from scontrol (kept for an hour after a job ends)
#
# The node is this machine, named as `hostname -s` says, with all its CPUs, in partition
# "debug", and no GPU (no gres): jobs that ask for --gres=gpu:1 are refused, so pass
# --gres none to the leaderboard here. After start:
#   export SLURM_CONF=/tmp/kernel-workbook-slurm/slurm.conf; sinfo; squeue
set -euo pipefail

me=slurm-local-cluster
die() { printf '%s: %s\n' "$me" "$1" >&2; exit 1; }
usage_error() { printf '%s: %s\nrun %s --help for the usage\n' "$me" "$1" "$0" >&2; exit 2; }
say() { printf '%s: %s\n' "$me" "$*"; }

cmd=${1:-}
[ $# -gt 0 ] && shift
dir=/tmp/kernel-workbook-slurm
accounting=1
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) [ $# -ge 2 ] && [ -n "$2" ] || usage_error "--dir needs a folder"; dir=$2; shift 2 ;;
    --dir=*) dir=${1#*=}; shift ;;
    --no-accounting) accounting=0; shift ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage_error "unknown argument '$1'" ;;
  esac
done
case "$cmd" in
  start|stop|status|env) ;;
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") usage_error "say what to do: start, stop, status or env" ;;
  *) usage_error "unknown command '$cmd' (start, stop, status or env)" ;;
esac
[[ $dir == /* ]] || dir="$PWD/$dir"
case "$dir" in /|/tmp|/root|/home|/usr|/etc|/var) die "--dir $dir: give a folder of its own" ;; esac
conf="$dir/slurm.conf"
export SLURM_CONF="$conf"

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1" 2> /dev/null)" 2> /dev/null; }
running() { pid_alive "$dir/run/slurmctld.pid" && pid_alive "$dir/run/slurmd.pid" && scontrol ping > /dev/null 2>&1; }

stop_daemons() {
  local name pidf pid n
  for name in slurmd slurmctld slurmdbd mariadbd munged; do
    pidf="$dir/run/$name.pid"
    [ -f "$pidf" ] || continue
    pid=$(cat "$pidf" 2> /dev/null || true)
    if [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2> /dev/null; then
      kill "$pid" 2> /dev/null || true
      for ((n = 0; n < 50; ++n)); do kill -0 "$pid" 2> /dev/null || break; sleep 0.2; done
      if kill -0 "$pid" 2> /dev/null; then kill -9 "$pid" 2> /dev/null || true; fi
    fi
    rm -f "$pidf"
  done
}

if [ "$cmd" = env ]; then
  printf 'export SLURM_CONF=%q\n' "$conf"
  exit 0
fi
if [ "$cmd" = status ]; then
  if [ -f "$conf" ] && running; then
    say "up ($conf)"
    sinfo
    squeue
    exit 0
  fi
  say "not running (no cluster in $dir)"
  exit 1
fi
if [ "$cmd" = stop ]; then
  stop_daemons
  if [ "$keep" = 0 ] && [ -f "$conf" ]; then rm -rf -- "$dir"; say "stopped; $dir removed"; else say "stopped"; fi
  exit 0
fi

# --- start ---------------------------------------------------------------------------------
[ "$(id -u)" = 0 ] || die "start needs root: it installs packages and runs the Slurm daemons (sudo $0 start)"
if [ -f "$conf" ] && running; then
  say "already up ($conf)"
  printf 'export SLURM_CONF=%q\n' "$conf"
  exit 0
fi

need=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2> /dev/null | grep -q "install ok installed"; }
pkgs=(munge slurmctld slurmd slurm-client)
[ "$accounting" = 1 ] && pkgs+=(slurmdbd mariadb-server)
for p in "${pkgs[@]}"; do have_pkg "$p" || need+=("$p"); done
if [ ${#need[@]} -gt 0 ]; then
  command -v apt-get > /dev/null || die "missing ${need[*]}, and this is not a Debian/Ubuntu machine (no apt-get)"
  say "installing ${need[*]} ..."
  # The packages' own start scripts are not run (there may be no init system): this script
  # starts the daemons itself.
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" > "/tmp/$me-apt.log" 2>&1; then
    apt-get update -qq > /dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" > "/tmp/$me-apt.log" 2>&1 ||
      die "apt-get could not install ${need[*]} (log: /tmp/$me-apt.log)"
  fi
fi

# Half-started before: stop what is left, start afresh.
stop_daemons
rm -rf -- "$dir"
mkdir -p "$dir"/{munge,socket,run,log,state,spool,db}
chmod 700 "$dir" "$dir/munge" "$dir/state" "$dir/db"
chmod 755 "$dir/socket"
host=$(hostname -s)
cpus=$(nproc)
mem=$(awk '/MemTotal/ { printf "%d", $2 / 1024 * 0.8 }' /proc/meminfo)

wait_for() {  # what, seconds, command...
  local what=$1 n=$(( $2 * 5 ))
  shift 2
  while ! "$@" > /dev/null 2>&1; do
    n=$((n - 1))
    [ "$n" -gt 0 ] || die "$what did not come up (logs: $dir/log)"
    sleep 0.2
  done
}

# munge: the key the daemons and the commands authenticate with.
head -c 1024 /dev/urandom > "$dir/munge/munge.key"
chmod 400 "$dir/munge/munge.key"
munged --force --key-file="$dir/munge/munge.key" --socket="$dir/socket/munge.socket" \
  --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed" ||
  die "munged did not start (log: $dir/log/munged.log)"
wait_for munged 10 munge -S "$dir/socket/munge.socket" -n

acct_conf="AccountingStorageType=accounting_storage/none"
if [ "$accounting" = 1 ]; then
  # The accounting database: MariaDB on a socket of its own, no network; slurmdbd in front.
  mariadb-install-db --no-defaults --datadir="$dir/db" --user=root --auth-root-authentication-method=socket \
    --skip-test-db > "$dir/log/mariadb-install.log" 2>&1 || die "mariadb-install-db failed (log: $dir/log/mariadb-install.log)"
  setsid mariadbd --no-defaults --datadir="$dir/db" --user=root --socket="$dir/socket/mysql.sock" \
    --pid-file="$dir/run/mariadbd.pid" --skip-networking --log-error="$dir/log/mariadb.log" < /dev/null > /dev/null 2>&1 &
  wait_for "the database (mariadbd)" 30 test -S "$dir/socket/mysql.sock"
  cat > "$dir/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$dir/socket/munge.socket
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=6819
SlurmUser=root
PidFile=$dir/run/slurmdbd.pid
LogFile=$dir/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=root
StorageLoc=kernel_workbook_acct
EOF
  chmod 600 "$dir/slurmdbd.conf"
  MYSQL_UNIX_PORT="$dir/socket/mysql.sock" slurmdbd || die "slurmdbd did not start (log: $dir/log/slurmdbd.log)"
  acct_conf="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=6819
AccountingStoragePass=$dir/socket/munge.socket"
fi

cat > "$conf" <<EOF
# A one-node cluster for the leaderboard's tests, made by scripts/slurm-local-cluster.sh.
ClusterName=kwb-local
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/socket/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
$acct_conf
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
# Finished jobs stay visible to scontrol for an hour (the leaderboard reads their state
# there when sacct has no database).
MinJobAge=3600
KillWait=5
ReturnToService=2
MpiDefault=none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF

if [ "$accounting" = 1 ]; then
  wait_for slurmdbd 30 sacctmgr -n list cluster
  sacctmgr -i add cluster kwb-local > /dev/null 2>&1 || true
fi
slurmctld || die "slurmctld did not start (log: $dir/log/slurmctld.log)"
wait_for slurmctld 30 scontrol ping
slurmd || die "slurmd did not start (log: $dir/log/slurmd.log)"
node_idle() { [ "$(sinfo -h -n "$host" -o %T 2> /dev/null)" = idle ]; }
wait_for "the node ($host)" 60 node_idle
say "up: one node ($host, $cpus CPUs, no GPU), partition debug$([ "$accounting" = 1 ] && echo ", accounting (sacct)"); folder $dir"
printf 'export SLURM_CONF=%q\n' "$conf"
