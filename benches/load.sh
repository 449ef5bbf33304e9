#!/usr/bin/env bash
# Throughput as ratios to /healthz measured in the same run: a benchmark that prints figures, not
# a test. Two modes:
#
#   benches/load.sh [SECONDS] [CONNECTIONS]      (default 10 s, 32 connections)
#     Read paths against `serve --demo` (5,000 bots), /healthz measured once first.
#
#   benches/load.sh --directory BOTS [--votes N] [--seconds S] [--connections C]
#                   [--bin LABEL=PATH[,seconds=S][,fill=N]]... [--only REGEX]
#     The directory at scale: each binary (default: this tree's target/release/botlist, built
#     first) serves a directory of BOTS bots made by its own `generate` (N votes, default
#     200,000) and is measured with wrk (-t2, C connections, default 64, S seconds, default 10)
#     on the search scenarios, vote ingest and stats posts. Every scenario is measured right
#     after a /healthz run of the same server (at most 5 s), and its ratio is to that /healthz,
#     so load from elsewhere on the machine hits both alike; with several binaries each
#     scenario runs on each binary in turn before the next scenario. Then each binary fills an
#     empty directory through `POST /admin/bots`, 32 requests in flight, up to BOTS bots (or the
#     `fill=N` of its --bin), reported in bots/s. `seconds=S` shortens a slow binary's runs
#     (same connections). `--only REGEX` runs only the scenarios whose name matches (extended
#     regex; the fill is named "fill"), to repeat a few. Example, before and after a change built side by side:
#       benches/load.sh --directory 100000 \
#         --bin before=/tmp/before/target/release/botlist,seconds=5,fill=20000 \
#         --bin after=target/release/botlist
#
# Needs wrk (apt-get install wrk), curl and jq; installs nothing. Limits are off
# (--rate-limit 0) so the handlers are measured, not the 429 path; periodic snapshots are off
# (--snapshot-interval 0) so no run pays for one; --fsync is the default (always) unless
# BOTLIST_FSYNC says otherwise. Loopback only; every run is bounded by its duration.
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in wrk curl jq; do
  command -v "$tool" >/dev/null || { echo "needs $tool: apt-get install $tool" >&2; exit 1; }
done

demo_mode() {
  # The demo directory's read paths and the hot paths (check, stats, votes, a dead receiver).
  exec benches/load_demo.sh "$@"
}

# The search scenarios of the directory mode: name and query string of GET /bots. The names are
# the generator's ("Groovy Wizard 12345", numbered from bot 400 on), so ` 77777 ` names one bot.
SEARCHES=(
  "first page|"
  "q=e (1 char, common)|q=e"
  "q=er (2 chars, common)|q=er"
  "q=ard (3 chars, common)|q=ard"
  "q=wizard (6 chars, common)|q=wizard"
  "q=zq (2 chars, no match)|q=zq"
  "q=7777 (4 chars, rare)|q=7777"
  "q=%2077777%20 (7 chars, one bot)|q=%2077777%20"
  "q=wizard&category=music&sort=newest|q=wizard&category=music&sort=newest"
  "language=de&invites=100-1000|language=de&invites=100-1000"
  "votes=5|votes=5"
  "offset=5000|offset=5000"
  "page=200&limit=100|page=200&limit=100"
  "sort=votes|sort=votes"
  "sort=newest|sort=newest"
  "sort=monthly_votes|sort=monthly_votes"
  "sort=recently_updated|sort=recently_updated"
  "sort=invites|sort=invites"
)

directory_mode() {
  local BOTS=$1; shift
  local VOTES=200000 DURATION=10 CONNECTIONS=64 FILL_CONNECTIONS=32 ADMIN=bench-admin-token ONLY=""
  local -a SPECS=()
  while [ $# -gt 0 ]; do
    case $1 in
      --votes) VOTES=$2; shift 2 ;;
      --seconds) DURATION=$2; shift 2 ;;
      --connections) CONNECTIONS=$2; shift 2 ;;
      --bin) SPECS+=("$2"); shift 2 ;;
      --only) ONLY=$2; shift 2 ;;
      *) echo "unknown option $1" >&2; exit 2 ;;
    esac
  done
  [ ${#SPECS[@]} -gt 0 ] || SPECS=("current=target/release/botlist")

  local -a LABELS=() BINS=() SECS=() FILLS=()
  local spec label rest path part
  for spec in "${SPECS[@]}"; do
    label=${spec%%=*}; rest=${spec#*=}
    path=${rest%%,*}
    LABELS+=("$label"); BINS+=("$path"); SECS+=("$DURATION"); FILLS+=("$BOTS")
    if [[ $rest == *,* ]]; then
      IFS=, read -r -a parts <<< "${rest#*,}"
      for part in "${parts[@]}"; do
        case $part in
          seconds=*) SECS[-1]=${part#seconds=} ;;
          fill=*) FILLS[-1]=${part#fill=} ;;
          *) echo "unknown --bin setting $part" >&2; exit 2 ;;
        esac
      done
    fi
    if [ "$path" = target/release/botlist ]; then cargo build --release --quiet; fi
    [ -x "$path" ] || { echo "$label: no binary at $path (build it first)" >&2; exit 1; }
  done
  local n=${#LABELS[@]} i

  WORK=$(mktemp -d /tmp/botlist-load.XXXXXX)
  trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT
  local -a PIDS=() PORTS=() BOT_IDS=() TOKENS=()

  start_server() { # index data-dir
    local i=$1 dir=$2 port=$((18510 + $1))
    "${BINS[$i]}" serve --bind 127.0.0.1:"$port" --data-dir "$dir" --rate-limit 0 \
      --admin-token "$ADMIN" --snapshot-interval 0 > "$dir.out" 2> "$dir.err" &
    PIDS[$i]=$!; PORTS[$i]=$port
    until grep -q "listening on" "$dir.out" 2>/dev/null; do
      kill -0 "${PIDS[$i]}" 2>/dev/null || { echo "${LABELS[$i]} did not start:" >&2; cat "$dir.err" >&2; exit 1; }
      sleep 0.1
    done
  }
  stop_server() { # index
    kill "${PIDS[$1]}" 2>/dev/null || true
    wait "${PIDS[$1]}" 2>/dev/null || true
  }
  load1() { cut -d' ' -f1 /proc/loadavg; }

  # One wrk run; its whole output is kept for the notes. Prints requests/s.
  measure() { # file seconds connections url [lua-script [script args...]]
    local file=$1 secs=$2 conns=$3 url=$4; shift 4
    local -a script=()
    if [ $# -gt 0 ]; then script=(-s "$1"); shift; fi
    wrk -t2 -c"$conns" -d"${secs}s" --timeout 30s "${script[@]}" "$url" -- "$@" > "$file" 2>&1 || true
    awk '/Requests\/sec/ {print $2}' "$file"
  }
  healthz_secs() { local s=$1; [ "$s" -gt 5 ] && s=5; echo "$s"; }

  echo "== $BOTS bots, $VOTES votes, wrk -t2 -c$CONNECTIONS; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  for i in $(seq 0 $((n - 1))); do
    echo "-- ${LABELS[$i]}: ${BINS[$i]} (${SECS[$i]} s per scenario, fill up to ${FILLS[$i]} bots)"
    "${BINS[$i]}" generate --bots "$BOTS" --votes "$VOTES" --out "$WORK/data-$i" > "$WORK/gen-$i"
    BOT_IDS[$i]=$(awk '/a bot id:/ {print $4}' "$WORK/gen-$i")
    TOKENS[$i]=$(awk '/its token:/ {print $3}' "$WORK/gen-$i")
    local t0; t0=$(date +%s.%N)
    start_server "$i" "$WORK/data-$i"
    echo "   started in $(echo "$(date +%s.%N) - $t0" | bc) s"
  done

  # rows: scenario \t per binary: req/s \t healthz req/s ... \t load \t total
  local ROWS=$WORK/rows
  : > "$ROWS"
  local scenario name query url rps hz totals total row k=0
  run_row() { # name kind (get QUERY | votes | stats)
    local name=$1 kind=$2 arg=${3-} row totals="" load
    [[ -z $ONLY || $name =~ $ONLY ]] || return 0
    load=$(load1)
    row="$name"
    for i in $(seq 0 $((n - 1))); do
      local base="http://127.0.0.1:${PORTS[$i]}" secs=${SECS[$i]} hz rps file
      k=$((k + 1)); file="$WORK/wrk-$k-${LABELS[$i]}"
      hz=$(measure "$file.healthz" "$(healthz_secs "$secs")" "$CONNECTIONS" "$base/healthz")
      case $kind in
        get)
          rps=$(measure "$file" "$secs" "$CONNECTIONS" "$base/api/v1/bots?$arg")
          local counted; counted=$(echo "$arg" | sed -E 's/(^|&)limit=[0-9]*//; s/^&//')
          totals="$totals $(curl -sf --max-time 60 "$base/api/v1/bots?$counted${counted:+&}limit=0" | jq -r .total || echo '?')" ;;
        votes)
          rps=$(measure "$file" "$secs" "$CONNECTIONS" "$base" benches/votes.lua "${BOT_IDS[$i]}" "$ADMIN") ;;
        stats)
          rps=$(measure "$file" "$secs" "$CONNECTIONS" "$base/api/v1/bots/${BOT_IDS[$i]}/stats" \
            benches/stats_post.lua "${TOKENS[$i]}") ;;
      esac
      echo "$name, ${LABELS[$i]}" > "$file.name"
      echo "/healthz before $name, ${LABELS[$i]}" > "$file.healthz.name"
      row="$row	${rps:-0}	${hz:-0}"
    done
    echo "$row	$load	${totals# }" >> "$ROWS"
    printf '   %-44s load %s\n' "$name" "$load"
  }

  for scenario in "${SEARCHES[@]}"; do
    name=${scenario%%|*}; query=${scenario#*|}
    run_row "GET /bots ${name}" get "$query"
  done
  run_row "POST /admin/bots/:id/votes (fresh user)" votes
  run_row "POST /bots/:id/stats" stats
  for i in $(seq 0 $((n - 1))); do stop_server "$i"; done

  # The fill: an empty directory per binary, one at a time.
  local FILLROW="POST /admin/bots fill, 32 in flight (bots/s)" fill_load
  fill_load=$(load1)
  local -a FILL_RATES=() FILL_COUNTS=() FILL_HZ=()
  local fill=yes
  [[ -z $ONLY || fill =~ $ONLY ]] || fill=no
  for i in $(seq 0 $((n - 1))); do
    [ $fill = yes ] || break
    mkdir -p "$WORK/empty-$i"
    start_server "$i" "$WORK/empty-$i"
    local base="http://127.0.0.1:${PORTS[$i]}" quota=$(( (FILLS[$i] + 1) / 2 )) prefix="$WORK/fill-$i"
    FILL_HZ[$i]=$(measure "$WORK/wrk-fill-$i.healthz" "$(healthz_secs "${SECS[$i]}")" "$FILL_CONNECTIONS" "$base/healthz")
    echo "/healthz before the fill, ${LABELS[$i]}" > "$WORK/wrk-fill-$i.healthz.name"
    echo "the fill, ${LABELS[$i]}" > "$WORK/wrk-fill-$i.name"
    local t0 t1 wrkpid
    t0=$(date +%s.%N)
    # Bounded: at most 600 s, whatever the rate.
    wrk -t2 -c"$FILL_CONNECTIONS" -d600s --timeout 30s -s benches/admin_bots.lua \
      "$base/api/v1/admin/bots" -- "$ADMIN" "$quota" "$prefix" > "$WORK/wrk-fill-$i" 2>&1 &
    wrkpid=$!
    while kill -0 "$wrkpid" 2>/dev/null && ! { [ -e "$prefix.1" ] && [ -e "$prefix.2" ]; }; do
      sleep 0.05
    done
    t1=$(date +%s.%N)
    kill -INT "$wrkpid" 2>/dev/null || true
    wait "$wrkpid" 2>/dev/null || true
    local listed
    listed=$(curl -sf --max-time 60 "$base/api/v1/bots?limit=0" | jq -r .total || echo 0)
    # The bots answered 201 when the threads stopped; without both files (wrk's bound came
    # first), what the server lists.
    if [ -e "$prefix.1" ] && [ -e "$prefix.2" ]; then
      FILL_COUNTS[$i]=$(cat "$prefix.1" "$prefix.2" | awk '{s += $1} END {print s}')
    else
      FILL_COUNTS[$i]=$listed
    fi
    FILL_RATES[$i]=$(echo "${FILL_COUNTS[$i]} / ($t1 - $t0)" | bc -l)
    printf '   fill %-8s %s bots answered 201 in %.1f s (%s listed after the in-flight requests; refused: %s)\n' \
      "${LABELS[$i]}" "${FILL_COUNTS[$i]}" "$(echo "$t1 - $t0" | bc -l)" "$listed" \
      "$(cat "$prefix".* 2>/dev/null | awk '{s += $2} END {print s + 0}')"
    stop_server "$i"
  done

  # The table: req/s and ratio of the /healthz run just before, per binary.
  echo
  local header="| scenario |" rule="|---|"
  for i in $(seq 0 $((n - 1))); do
    header="$header ${LABELS[$i]} req/s | ratio |"; rule="$rule---:|---:|"
  done
  echo "$header load (1 min) | total |"; echo "$rule---:|---|"
  awk -F'\t' -v n="$n" '{
    line = "| " $1 " |"
    for (i = 0; i < n; i++) {
      rps = $(2 + 2 * i); hz = $(3 + 2 * i)
      line = line sprintf(" %.0f | %.3f |", rps, hz > 0 ? rps / hz : 0)
    }
    print line " " $(2 + 2 * n) " | " $(3 + 2 * n) " |"
  }' "$ROWS"
  if [ $fill = yes ]; then
    local line="| $FILLROW |"
    for i in $(seq 0 $((n - 1))); do
      local note=""
      [ "${FILL_COUNTS[$i]}" -lt "$BOTS" ] && note=" (${FILL_COUNTS[$i]} bots)"
      line="$line $(printf '%.0f' "${FILL_RATES[$i]}")$note | $(printf '%.3f' "$(echo "${FILL_RATES[$i]} / ${FILL_HZ[$i]}" | bc -l)") |"
    done
    echo "$line $fill_load | |"
  fi
  echo
  for i in $(seq 0 $((n - 1))); do
    echo "/healthz of ${LABELS[$i]} (before each scenario, -c$CONNECTIONS): $(awk -F'\t' -v c=$((3 + 2 * i)) '{print $c}' "$ROWS" \
      | sort -n | awk '{a[NR]=$1} END {printf "min %.0f, median %.0f, max %.0f req/s", a[1], a[int((NR+1)/2)], a[NR]}'); ${FILL_HZ[$i]:+before the fill (-c$FILL_CONNECTIONS): $(printf '%.0f' "${FILL_HZ[$i]}") req/s}"
  done
  echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
  # Anything other than clean 2xx answers, per wrk run.
  local f said=0
  for f in "$WORK"/wrk-*; do
    case $f in *.name) continue ;; esac
    if grep -qE "Non-2xx|Socket errors|unexpected status" "$f"; then
      [ $said = 1 ] || { echo "notes:"; said=1; }
      echo "  $(cat "$f.name"): $(grep -E "Non-2xx|Socket errors" "$f" | tr -s ' ' | paste -sd';')$(grep -c "unexpected status" "$f" | sed 's/^0$//; s/^[1-9].*/ (and & unexpected-status lines)/')"
    fi
  done
  [ $said = 1 ] || echo "notes: every wrk run answered 2xx only, no socket errors"
}

if [ "${1-}" = --directory ]; then
  [ $# -ge 2 ] || { echo "usage: benches/load.sh --directory BOTS [options]" >&2; exit 2; }
  shift
  directory_mode "$@"
else
  demo_mode "$@"
fi
