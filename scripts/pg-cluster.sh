#!/usr/bin/env bash
# A PostgreSQL primary and two synchronous standbys on loopback, for tests and demos of `wo run --store`.
#
#   scripts/pg-cluster.sh start <dir> [base-port]   primary on base-port (default 54320), standbys s1, s2 on the next two;
#                                                   on a cluster already made, starts whatever is not running: the
#                                                   current primary as it is, every other node as its standby (an old
#                                                   primary, or a stopped standby of an older timeline, is first
#                                                   rewound onto the new primary's timeline with pg_rewind; one that
#                                                   cannot be is left stopped, never writable)
#   scripts/pg-cluster.sh stop <dir>                stops whatever of the three is running (idempotent)
#   scripts/pg-cluster.sh kill <dir> <node>         kill -9 of one server's postmaster (primary, s1 or s2): a crash
#   scripts/pg-cluster.sh promote <dir> [node]      failover after the primary is lost (and fenced): promotes the
#                                                   standby given, else the one that received the most WAL, and
#                                                   points the other running standby at it; prints the promoted node
#                                                   (recorded in <dir>/primary-node for `start`)
#
# `start` prints the connection string (every host listed; writeonce finds the writable one) as its last line.
# The primary runs with synchronous_commit=on and synchronous_standby_names='ANY 1 (s1, s2)': a commit returns
# once it is fsynced on the primary and on at least one standby. With both standbys down, commits wait.
#
# Each server lives in its own subdirectory (<dir>/primary, <dir>/s1, <dir>/s2; logs in <dir>/*.log), listens on
# 127.0.0.1 only, with trust authentication for local connections: a test cluster, not a production setup.
# PostgreSQL refuses to run as root: as root, the servers run as the `postgres` user (the dir is chowned to it).
set -euo pipefail

usage() {
  echo "usage: $0 start <dir> [base-port] | stop <dir> | kill <dir> <node> | promote <dir> [node]" >&2
  exit 2
}

# The PostgreSQL binaries: $PG_BIN, else Debian's layout (15 first, else the newest), else whatever is on PATH.
find_bin() {
  if [ -n "${PG_BIN:-}" ]; then echo "$PG_BIN"; return; fi
  if [ -x /usr/lib/postgresql/15/bin/initdb ]; then echo /usr/lib/postgresql/15/bin; return; fi
  local newest
  newest=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$newest" ] && [ -x "$newest/initdb" ]; then echo "$newest"; return; fi
  if command -v initdb >/dev/null 2>&1; then dirname "$(command -v initdb)"; return; fi
  echo "pg-cluster: PostgreSQL binaries not found (install postgresql-15, or set PG_BIN)" >&2
  exit 1
}

# Runs a command as the servers' user: `postgres` when we are root, else ourselves.
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

NODES=(primary s1 s2)

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || usage
BIN=$(find_bin)

stop_cluster() {
  [ -d "$dir" ] || return 0
  local node
  for node in s1 s2 primary; do
    if [ -f "$dir/$node/postmaster.pid" ]; then
      as_pg "$BIN/pg_ctl" -D "$dir/$node" -m fast -w -t 30 stop >/dev/null 2>&1 \
        || as_pg "$BIN/pg_ctl" -D "$dir/$node" -m immediate -w stop >/dev/null 2>&1 || true
    fi
  done
}

sql() { # port, sql
  as_pg "$BIN/psql" -X -q -t -A -h 127.0.0.1 -p "$1" -U postgres -d postgres -c "$2"
}

start_node() { # node
  as_pg "$BIN/pg_ctl" -D "$dir/$1" -l "$dir/$1.log" -w -t 60 start >/dev/null
}

port_of() { # node -> its port
  local base
  base=$(cat "$dir/base-port")
  case "$1" in primary) echo "$base" ;; s1) echo "$((base + 1))" ;; s2) echo "$((base + 2))" ;; *) echo "pg-cluster: no node $1" >&2; exit 2 ;; esac
}

running() { # node
  as_pg "$BIN/pg_ctl" -D "$dir/$1" status >/dev/null 2>&1
}

# The node that takes writes: the one promoted last (recorded by `promote`), else the first primary.
current_primary() {
  if [ -f "$dir/primary-node" ]; then cat "$dir/primary-node"; else echo primary; fi
}

# The two nodes other than the given one.
others_of() { # node
  local n
  for n in "${NODES[@]}"; do [ "$n" = "$1" ] || echo "$n"; done
}

stop_node() { # node
  as_pg "$BIN/pg_ctl" -D "$dir/$1" -m fast -w -t 30 stop >/dev/null 2>&1 \
    || as_pg "$BIN/pg_ctl" -D "$dir/$1" -m immediate -w stop >/dev/null 2>&1 || true
}

# The timeline of a stopped node's last checkpoint (or restartpoint).
timeline_of() { # node
  as_pg "$BIN/pg_controldata" -D "$dir/$1" | sed -n "s/^Latest checkpoint's TimeLineID: *//p"
}

# Makes `node` a standby of `primary` (its slot there, its conninfo, standby.signal) and starts it. A node without
# standby.signal was a primary: it may hold commits the new primary never had (never acknowledged: an ack needed a
# standby), so it is first rewound to the point where the timelines forked. So is a stopped standby that followed
# an older timeline: it may have received more of it than the promoted server (the wrong standby was promoted), and
# could not follow the new one. (pg_rewind does nothing to one that holds no more.) Fails (leaving it stopped) if
# it cannot be rewound.
as_standby() { # node primary
  local node=$1 primary=$2 pport why=""
  pport=$(port_of "$primary")
  # pg_rewind reads the source's timeline from its control file, updated by the first checkpoint after promotion.
  if [ ! -f "$dir/$node/standby.signal" ]; then
    why="was a primary"
  elif ! running "$node"; then
    sql "$pport" "checkpoint" >/dev/null
    [ "$(timeline_of "$node")" = "$(sql "$pport" "select timeline_id from pg_control_checkpoint()")" ] || why="followed an older timeline"
  fi
  if [ -n "$why" ]; then
    if running "$node"; then stop_node "$node"; fi
    echo "pg-cluster: $node $why; rewinding it onto $primary's timeline" >&2
    sql "$pport" "checkpoint" >/dev/null
    # pg_rewind first recovers a server that was killed, in single-user mode, which refuses standby mode.
    rm -f "$dir/$node/standby.signal"
    as_pg "$BIN/pg_rewind" -D "$dir/$node" --source-server="host=127.0.0.1 port=$pport user=postgres dbname=postgres" \
      >"$dir/$node.rewind.log" 2>&1 || { cat "$dir/$node.rewind.log" >&2; return 1; }
  fi
  sql "$pport" "select pg_create_physical_replication_slot('$node') where not exists (select 1 from pg_replication_slots where slot_name = '$node')" >/dev/null
  if ! running "$node"; then
    # pg_rewind copies the source's configuration: the node's own port and names go last (the last setting wins).
    cat >>"$dir/$node/postgresql.auto.conf" <<EOF
port = $(port_of "$node")
primary_conninfo = 'host=127.0.0.1 port=$pport user=postgres application_name=$node'
primary_slot_name = '$node'
EOF
    as_pg touch "$dir/$node/standby.signal"
    start_node "$node"
  fi
}

# Whether the node's server takes writes (running and not in recovery).
writable() { # node
  [ "$(sql "$(port_of "$1")" "select not pg_is_in_recovery()" 2>/dev/null || true)" = t ]
}

case "$cmd" in
  stop)
    stop_cluster
    ;;
  kill)
    node=${3:-}
    [ -n "$node" ] && [ -f "$dir/$node/postmaster.pid" ] || { echo "pg-cluster: $node is not running" >&2; exit 1; }
    pid=$(head -n 1 "$dir/$node/postmaster.pid")
    kill -9 "$pid"
    # Gone once reaped: until then pg_ctl still takes it for running, and a `start` right after would skip it.
    for _ in $(seq 1 300); do
      running "$node" || break
      sleep 0.1
    done
    ;;
  promote)
    node=${3:-}
    if [ -z "$node" ]; then
      # The standby that received the most WAL: it holds every commit that was acknowledged (ANY 1 of the two).
      best=""
      best_lsn=""
      for s in $(others_of "$(current_primary)"); do
        running "$s" || continue
        # A running standby whose position cannot be read is not passed over (the other might lack acknowledged
        # commits): asked again, then the promotion refused. Before its first stream, replayed WAL is what it holds.
        lsn=""
        for _ in $(seq 1 50); do
          lsn=$(sql "$(port_of "$s")" "select coalesce(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn()) - '0/0'::pg_lsn" 2>/dev/null || true)
          [ -n "$lsn" ] && break
          sleep 0.1
        done
        [ -n "$lsn" ] || { echo "pg-cluster: cannot read $s's WAL position; name the standby to promote" >&2; exit 1; }
        if [ -z "$best" ] || [ "$(sql "$(port_of "$s")" "select $lsn > $best_lsn")" = t ]; then best=$s; best_lsn=$lsn; fi
      done
      [ -n "$best" ] || { echo "pg-cluster: no running standby to promote" >&2; exit 1; }
      node=$best
    fi
    as_pg "$BIN/pg_ctl" -D "$dir/$node" -w -t 60 promote >/dev/null
    new_port=$(port_of "$node")
    for _ in $(seq 1 300); do
      [ "$(sql "$new_port" "select pg_is_in_recovery()")" = f ] && break
      sleep 0.1
    done
    echo "$node" >"$dir/primary-node"
    # Quorum of the two other nodes (the old primary counts once it is rejoined by `start`).
    names=$(others_of "$node" | paste -sd, - | sed 's/,/, /')
    sql "$new_port" "alter system set synchronous_standby_names = 'ANY 1 ($names)'" >/dev/null
    sql "$new_port" "select pg_reload_conf()" >/dev/null
    for other in $(others_of "$node"); do
      # A running standby (whichever node it is: after two promotions the first primary may be one) follows the
      # new primary (recovery_target_timeline is 'latest'), through a slot there.
      running "$other" || continue
      [ "$(sql "$(port_of "$other")" "select pg_is_in_recovery()" 2>/dev/null || true)" = t ] || continue
      sql "$new_port" "select pg_create_physical_replication_slot('$other') where not exists (select 1 from pg_replication_slots where slot_name = '$other')" >/dev/null
      sql "$(port_of "$other")" "alter system set primary_conninfo = 'host=127.0.0.1 port=$new_port user=postgres application_name=$other'" >/dev/null
      sql "$(port_of "$other")" "select pg_reload_conf()" >/dev/null
      for _ in $(seq 1 300); do
        n=$(sql "$new_port" "select count(*) from pg_stat_replication where application_name = '$other' and state = 'streaming'" 2>/dev/null || echo 0)
        [ "$n" = 1 ] && break
        sleep 0.1
      done
    done
    echo "$node"
    ;;
  start)
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    # A cluster already made keeps the ports it was made with.
    if [ -f "$dir/base-port" ]; then base=$(cat "$dir/base-port"); else base=${3:-54320}; fi
    ports=("$base" "$((base + 1))" "$((base + 2))")
    url="postgres://postgres@127.0.0.1:${ports[0]},127.0.0.1:${ports[1]},127.0.0.1:${ports[2]}/writeonce"
    if [ "$(id -u)" = 0 ]; then
      id postgres >/dev/null 2>&1 || { echo "pg-cluster: running as root needs a postgres user" >&2; exit 1; }
      chown postgres: "$dir"
    fi
    if [ -f "$dir/primary/PG_VERSION" ]; then
      # Already made: the current primary as it is, every other node as its standby (never a second writable server).
      primary=$(current_primary)
      running "$primary" || start_node "$primary"
      for node in $(others_of "$primary"); do
        as_standby "$node" "$primary" || { stop_node "$node"; echo "pg-cluster: could not rejoin $node as a standby of $primary; left stopped" >&2; }
      done
    else
      echo "$base" >"$dir/base-port"
      as_pg "$BIN/initdb" -D "$dir/primary" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
      cat >>"$dir/primary/postgresql.conf" <<EOF

# pg-cluster.sh
listen_addresses = '127.0.0.1'
port = ${ports[0]}
unix_socket_directories = ''
wal_level = replica
max_wal_senders = 10
max_replication_slots = 10
hot_standby = on
fsync = on
synchronous_commit = on
synchronous_standby_names = 'ANY 1 (s1, s2)'
wal_keep_size = '256MB'
max_connections = 200
# pg_rewind (an old primary rejoins as a standby after a promotion) needs hint bits WAL-logged.
wal_log_hints = on
EOF
      echo "host replication all 127.0.0.1/32 trust" >>"$dir/primary/pg_hba.conf"
      start_node primary
      i=1
      for node in s1 s2; do
        as_pg "$BIN/pg_basebackup" -D "$dir/$node" -R -C -S "$node" -X stream \
          -d "host=127.0.0.1 port=${ports[0]} user=postgres application_name=$node" >"$dir/$node.basebackup.log" 2>&1 \
          || { cat "$dir/$node.basebackup.log" >&2; exit 1; }
        cat >>"$dir/$node/postgresql.auto.conf" <<EOF
port = ${ports[$i]}
primary_conninfo = 'host=127.0.0.1 port=${ports[0]} user=postgres application_name=$node'
primary_slot_name = '$node'
EOF
        start_node "$node"
        i=$((i + 1))
      done
    fi
    # Ready once both standbys stream as quorum members; then the database (its commit needs one of them).
    # A node killed just before may still have looked alive above (its postmaster not yet reaped): start it now.
    primary=$(current_primary)
    pport=$(port_of "$primary")
    for i in $(seq 1 300); do
      n=$(sql "$pport" "select count(*) from pg_stat_replication where sync_state = 'quorum' and state = 'streaming'" 2>/dev/null || echo 0)
      [ "$n" = 2 ] && break
      if [ $((i % 20)) = 0 ]; then
        for node in $(others_of "$primary"); do running "$node" || as_standby "$node" "$primary" || stop_node "$node"; done
      fi
      sleep 0.1
    done
    if [ "$n" != 2 ]; then
      # Giving up: whatever runs besides the primary must not take writes.
      for node in $(others_of "$primary"); do if writable "$node"; then stop_node "$node"; fi; done
      echo "pg-cluster: the standbys did not start streaming (see $dir/*.log)" >&2
      exit 1
    fi
    if [ "$(sql "$pport" "select count(*) from pg_database where datname = 'writeonce'")" = 0 ]; then
      sql "$pport" "create database writeonce" >/dev/null
    fi
    echo "$url"
    ;;
  *)
    usage
    ;;
esac
