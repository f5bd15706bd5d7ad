#!/usr/bin/env bash
# The same points of the validation measured in ROUNDS rounds (run.sh each time: the probe,
# its predictions, real DDP), so that a point's error can be told apart from the
# emulation's noise: where one run's prediction misses real DDP by more than 3 points, do
# the means of several rounds still part, or do single measurements of the point move as
# far as the miss? (issue #22; docs/benchmarks.md "Repeated rounds").
#
#   sudo ROUNDS=4 RATES="1gbit 2500mbit" SIZES=25M OPTIMIZERS=adamw KEEP=DIR \
#     bench/ddp-validation/repeat.sh [BUILD]     measures (about 4 minutes a round for these)
#   FROM=DIR bench/ddp-validation/repeat.sh [BUILD]   the table again from the kept rounds,
#                                                     predicted by this build (no root)
#
# Each round is one `run.sh` with AGAIN_RATES="" (the rounds are the repeats), kept in
# KEEP/round-K (KEEP must be new or empty); RATES, SIZES, OPTIMIZERS, COUNTS, PROBE_NODES
# and run.sh's other settings pass through to it. KEEP/points.txt records the lists,
# PROBE_NODES and the rounds completed so far (rewritten after each round, so that an
# interrupted run replays the rounds it finished); each round's settings.txt the rest.
# Prints, for every point, real DDP's share as mean and range over all its measurements
# (one a round, and any run.sh took again), the predicted share as mean and range over the
# rounds (each round's prediction comes from that round's own probe), the error of the
# means, and a summary.
set -euo pipefail
[ -z "${FROM:-}" ] || FROM=$(realpath -m -- "$FROM")
[ -z "${KEEP:-}" ] || KEEP=$(realpath -m -- "$KEEP")
cd "$(dirname "$0")/../.."
BUILD="${1:-build}"
RUN="$PWD/bench/ddp-validation/run.sh"
command -v jq >/dev/null || { echo "repeat: jq is missing" >&2; exit 1; }
TMP=$(mktemp -d /tmp/commgate-ddp-repeat.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

count_or_die() {  # NAME VALUE WHERE: VALUE is a positive count, or the run stops naming it
  [[ "$2" =~ ^[1-9][0-9]*$ ]] || { echo "repeat: $3$1 must be a positive count, got '$2'" >&2; exit 1; }
}

if [ -n "${FROM:-}" ]; then
  [ -f "$FROM/points.txt" ] || { echo "repeat: FROM=$FROM has no points.txt (not a KEEP directory of repeat.sh)" >&2; exit 1; }
  # What the rounds measured, from the file alone (never the caller's settings): plain
  # words only (the file is read, never sourced), every key present.
  unset RATES SIZES OPTIMIZERS COUNTS ROUNDS PROBE_NODES
  while IFS='=' read -r key value; do
    [[ "$value" =~ ^[A-Za-z0-9.\ -]*$ ]] || { echo "repeat: $FROM/points.txt: $key has an unexpected value" >&2; exit 1; }
    case "$key" in
      RATES) RATES="$value" ;; SIZES) SIZES="$value" ;; OPTIMIZERS) OPTIMIZERS="$value" ;;
      COUNTS) COUNTS="$value" ;; ROUNDS) ROUNDS="$value" ;; PROBE_NODES) PROBE_NODES="$value" ;;
    esac
  done <"$FROM/points.txt"
  PROBE_NODES="${PROBE_NODES:-2}"  # not recorded before 2026-12-07 15:30: run.sh's default
  for key in RATES SIZES OPTIMIZERS COUNTS ROUNDS; do
    [ -n "${!key:-}" ] || { echo "repeat: $FROM/points.txt has no $key" >&2; exit 1; }
  done
  count_or_die ROUNDS "$ROUNDS" "$FROM/points.txt: "
  count_or_die PROBE_NODES "$PROBE_NODES" "$FROM/points.txt: "
else
  [ -n "${KEEP:-}" ] || { echo "repeat: name KEEP=DIR, where the rounds are kept" >&2; exit 1; }
  # Never over an earlier run's rounds: they would mix with this one's.
  [ ! -e "$KEEP" ] || [ -z "$(ls -A "$KEEP")" ] || { echo "repeat: KEEP=$KEEP is not empty (name a new directory)" >&2; exit 1; }
  [ "$(id -u)" -eq 0 ] || { echo "repeat: network namespaces and cgroups need root" >&2; exit 1; }
  for binary in commgate commgate-probe; do
    [ -x "$BUILD/bin/$binary" ] || { echo "repeat: $BUILD/bin/$binary is not built (make build)" >&2; exit 1; }
  done
  RATES="${RATES:-1gbit 2500mbit}" SIZES="${SIZES:-25M}" OPTIMIZERS="${OPTIMIZERS:-adamw}"
  COUNTS="${COUNTS:-2 3 4}" ROUNDS="${ROUNDS:-4}" PROBE_NODES="${PROBE_NODES:-2}"
  count_or_die ROUNDS "$ROUNDS" ""
  count_or_die PROBE_NODES "$PROBE_NODES" ""
fi
# Every run.sh below, measuring a round or replaying one, covers these points (the rounds
# are the repeats: no AGAIN_RATES).
export RATES SIZES OPTIMIZERS COUNTS PROBE_NODES AGAIN_RATES=""
DIR="${FROM:-$KEEP}"  # the rounds: kept ones to replay, or this run's
if [ -z "${FROM:-}" ]; then
  mkdir -p "$KEEP"
  for ((k = 1; k <= ROUNDS; k++)); do
    echo "repeat: round $k of $ROUNDS; $(date -u +%Y-%m-%dT%H:%M:%SZ)" >&2
    KEEP="$KEEP/round-$k" "$RUN" "$BUILD" >"$KEEP/round-$k.md"
    printf 'RATES=%s\nSIZES=%s\nOPTIMIZERS=%s\nCOUNTS=%s\nROUNDS=%s\nPROBE_NODES=%s\n' \
      "$RATES" "$SIZES" "$OPTIMIZERS" "$COUNTS" "$k" "$PROBE_NODES" >"$KEEP/points.txt"
  done
fi

# Every round predicted again by this build (run.sh FROM=: its evaluations to $TMP), then
# rows of the point, what the row is ("ddp": the round's measurement, with that round's
# prediction; "again": the point measured again in that round, real DDP only), real DDP's
# share and step, and the predicted ones.
: >"$TMP/rows.tsv"
for ((k = 1; k <= ROUNDS; k++)); do
  [ -d "$DIR/round-$k" ] || { echo "repeat: $DIR/round-$k is missing" >&2; exit 1; }
  FROM="$DIR/round-$k" KEEP="$TMP/round-$k" "$RUN" "$BUILD" >/dev/null 2>"$TMP/replay.err" ||
    { cat "$TMP/replay.err" >&2; exit 1; }
  for rate in $RATES; do
    for params in $SIZES; do
      for optimizer in $OPTIMIZERS; do
        for n in $COUNTS; do
          jq -r --slurpfile d "$DIR/round-$k/ddp-$rate-$params-$optimizer-$n.json" --argjson n "$n" \
            --arg rate "$rate" --arg params "$params" --arg opt "$optimizer" '
            (.decision.predictions // [] | map(select(.nodes == $n)) | first) as $p |
            [$rate, $params, $opt, $n, "ddp", $d[0].commShare, $d[0].stepMs, ($p.commShare // "null"), ($p.stepTimeMs // "null")] | @tsv' \
            "$TMP/round-$k/eval-$rate-$params-$optimizer.json" >>"$TMP/rows.tsv"
          again="$DIR/round-$k/again-$rate-$params-$optimizer-$n.json"
          [ ! -f "$again" ] || jq -r --argjson n "$n" --arg rate "$rate" --arg params "$params" --arg opt "$optimizer" \
            '[$rate, $params, $opt, $n, "again", .commShare, .stepMs, "", ""] | @tsv' "$again" >>"$TMP/rows.tsv"
        done
      done
    done
  done
done

# Real DDP's mean and range over every measurement of the point (the rounds' and any
# taken again), the prediction's over the rounds.
awk -F'\t' -v rounds="$ROUNDS" -v probed="$PROBE_NODES" '
function abs(x) { return x < 0 ? -x : x }
{
  key = $1 " | " $2 " | " $3 " | " $4 ($4 == probed ? " (probed)" : "")
  if (!(key in seen)) { seen[key] = 1; order[++points] = key }
  measured[key]++; rs[key] += $6; rstep[key] += $7
  if (!(key in rmin) || $6 < rmin[key]) rmin[key] = $6
  if (!(key in rmax) || $6 > rmax[key]) rmax[key] = $6
  if ($5 != "ddp") next
  if ($8 == "null") { unpredicted[key] = 1; next }
  n[key]++
  single = abs($8 - $6) * 100; singles++; if (single <= 3) singles_within++
  if (single > singles_max) singles_max = single
  ps[key] += $8; pstep[key] += $9
  if (!(key in pmin) || $8 < pmin[key]) pmin[key] = $8
  if (!(key in pmax) || $8 > pmax[key]) pmax[key] = $8
}
END {
  printf "%d rounds. Each round: the probe on %d nodes, its predictions, real DDP at every count (run.sh).\n\n", rounds, probed
  print "| link | params | optimizer | nodes | real DDP share: mean (range) | measurements | predicted: mean (range) | error of the means (points) | real DDP step (ms) | predicted step (ms) | step error |"
  print "|---|---|---|---|---|---|---|---|---|---|---|"
  for (i = 1; i <= points; i++) {
    k = order[i]
    if (k in unpredicted || !(k in n)) { printf "| %s | none: a round could not predict | | | | | | |\n", k; continue }
    r = rs[k] / measured[k]; p = ps[k] / n[k]; err = (p - r) * 100
    real_step = rstep[k] / measured[k]; step_err = (pstep[k] / n[k] - real_step) / real_step * 100
    printf "| %s | %.1f%% (%.1f–%.1f) | %d | %.1f%% (%.1f–%.1f) | %+.1f | %.0f | %.0f | %+.0f%% |\n", k, r * 100, rmin[k] * 100, rmax[k] * 100, measured[k], p * 100, pmin[k] * 100, pmax[k] * 100, err, real_step, pstep[k] / n[k], step_err
    judged++; sum += abs(err); if (abs(err) > max) max = abs(err); if (abs(err) <= 3) within++
    if (abs(step_err) <= 10) step_within++
    range = (rmax[k] - rmin[k]) * 100; range_sum += range; if (range > range_max) range_max = range
  }
  if (judged == 0) exit
  printf "\nerror of the means: mean %.1f points, largest %.1f; %d of %d within 3 points; predicted step within 10%% at %d of %d\n", sum / judged, max, within, judged, step_within, judged
  printf "single rounds: %d of %d predictions within 3 points of that round'"'"'s real DDP, largest error %.1f\n", singles_within, singles, singles_max
  printf "real DDP: its share at one point spanned %.1f points on average over its measurements, %.1f at most\n", range_sum / judged, range_max
}' "$TMP/rows.tsv"
