#!/usr/bin/env bash
# The same points of the validation measured in ROUNDS rounds (run.sh each time: the probe,
# its predictions, real DDP), so that a point's error can be told apart from the
# emulation's noise: where one run's prediction misses real DDP by more than 3 points, do
# the means of several rounds still part, or do single measurements of the point move as
# far as the miss? (issue #22; docs/benchmarks.md "Repeated rounds").
#
#   sudo ROUNDS=4 RATES="1gbit 5gbit" SIZES=25M OPTIMIZERS=adamw KEEP=DIR \
#     bench/ddp-validation/repeat.sh [BUILD]     measures (about 4 minutes a round for these)
#   FROM=DIR bench/ddp-validation/repeat.sh [BUILD]   the table again from the kept rounds,
#                                                     predicted by this build (no root)
#
# Each round is one `run.sh` with AGAIN_RATES="" (the rounds are the repeats), kept in
# KEEP/round-K; RATES, SIZES, OPTIMIZERS, COUNTS and the other settings pass through to it
# and are recorded in KEEP/points.txt. Prints, for every point, real DDP's share and the
# predicted share as mean and range over the rounds (each round's prediction comes from
# that round's own probe), the error of the means, and a summary.
set -euo pipefail
[ -z "${FROM:-}" ] || FROM=$(realpath -m -- "$FROM")
[ -z "${KEEP:-}" ] || KEEP=$(realpath -m -- "$KEEP")
cd "$(dirname "$0")/../.."
BUILD="${1:-build}"
RUN="$PWD/bench/ddp-validation/run.sh"
command -v jq >/dev/null || { echo "repeat: jq is missing" >&2; exit 1; }
TMP=$(mktemp -d /tmp/commgate-ddp-repeat.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

if [ -n "${FROM:-}" ]; then
  [ -f "$FROM/points.txt" ] || { echo "repeat: FROM=$FROM has no points.txt (not a KEEP directory of repeat.sh)" >&2; exit 1; }
  # The lists the rounds measured: plain words only (the file is read, never sourced).
  while IFS='=' read -r key value; do
    [[ "$value" =~ ^[A-Za-z0-9.\ -]*$ ]] || { echo "repeat: $FROM/points.txt: $key has an unexpected value" >&2; exit 1; }
    case "$key" in
      RATES) RATES="$value" ;; SIZES) SIZES="$value" ;; OPTIMIZERS) OPTIMIZERS="$value" ;;
      COUNTS) COUNTS="$value" ;; ROUNDS) ROUNDS="$value" ;; PROBE_NODES) PROBE_NODES="$value" ;;
    esac
  done <"$FROM/points.txt"
  DIR="$FROM"
else
  [ -n "${KEEP:-}" ] || { echo "repeat: name KEEP=DIR, where the rounds are kept" >&2; exit 1; }
  [ "$(id -u)" -eq 0 ] || { echo "repeat: network namespaces and cgroups need root" >&2; exit 1; }
  RATES="${RATES:-1gbit 5gbit}" SIZES="${SIZES:-25M}" OPTIMIZERS="${OPTIMIZERS:-adamw}"
  COUNTS="${COUNTS:-2 3 4}" ROUNDS="${ROUNDS:-4}"
  [[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "repeat: ROUNDS must be a positive count, got '$ROUNDS'" >&2; exit 1; }
  mkdir -p "$KEEP"
  printf 'RATES=%s\nSIZES=%s\nOPTIMIZERS=%s\nCOUNTS=%s\nROUNDS=%s\nPROBE_NODES=%s\n' \
    "$RATES" "$SIZES" "$OPTIMIZERS" "$COUNTS" "$ROUNDS" "${PROBE_NODES:-2}" >"$KEEP/points.txt"
  for ((k = 1; k <= ROUNDS; k++)); do
    echo "repeat: round $k of $ROUNDS; $(date -u +%Y-%m-%dT%H:%M:%SZ)" >&2
    RATES="$RATES" SIZES="$SIZES" OPTIMIZERS="$OPTIMIZERS" COUNTS="$COUNTS" AGAIN_RATES="" \
      KEEP="$KEEP/round-$k" "$RUN" "$BUILD" >"$KEEP/round-$k.md"
  done
  DIR="$KEEP"
fi

# Every round predicted again by this build (run.sh FROM=: its evaluations to $TMP), then
# one row per point and round: the point, real DDP's share and step, the predicted ones.
: >"$TMP/rows.tsv"
for ((k = 1; k <= ROUNDS; k++)); do
  [ -d "$DIR/round-$k" ] || { echo "repeat: $DIR/round-$k is missing" >&2; exit 1; }
  RATES="$RATES" SIZES="$SIZES" OPTIMIZERS="$OPTIMIZERS" COUNTS="$COUNTS" AGAIN_RATES="" \
    FROM="$DIR/round-$k" KEEP="$TMP/round-$k" "$RUN" "$BUILD" >/dev/null 2>"$TMP/replay.err" ||
    { cat "$TMP/replay.err" >&2; exit 1; }
  for rate in $RATES; do
    for params in $SIZES; do
      for optimizer in $OPTIMIZERS; do
        for n in $COUNTS; do
          jq -r --slurpfile d "$DIR/round-$k/ddp-$rate-$params-$optimizer-$n.json" --argjson n "$n" \
            --arg rate "$rate" --arg params "$params" --arg opt "$optimizer" '
            (.decision.predictions // [] | map(select(.nodes == $n)) | first) as $p |
            [$rate, $params, $opt, $n, $d[0].commShare, ($p.commShare // "null"), $d[0].stepMs, ($p.stepTimeMs // "null")] | @tsv' \
            "$TMP/round-$k/eval-$rate-$params-$optimizer.json" >>"$TMP/rows.tsv"
        done
      done
    done
  done
done

awk -F'\t' -v rounds="$ROUNDS" -v probed="${PROBE_NODES:-2}" '
function abs(x) { return x < 0 ? -x : x }
{
  key = $1 " | " $2 " | " $3 " | " $4 ($4 == probed ? " (probed)" : "")
  if (!(key in seen)) { seen[key] = 1; order[++points] = key }
  if ($6 == "null") { unpredicted[key] = 1; next }
  n[key]++
  single = abs($6 - $5) * 100; singles++; if (single <= 3) singles_within++
  if (single > singles_max) singles_max = single
  rs[key] += $5; ps[key] += $6; rstep[key] += $7; pstep[key] += $8
  if (!(key in rmin) || $5 < rmin[key]) rmin[key] = $5
  if (!(key in rmax) || $5 > rmax[key]) rmax[key] = $5
  if (!(key in pmin) || $6 < pmin[key]) pmin[key] = $6
  if (!(key in pmax) || $6 > pmax[key]) pmax[key] = $6
}
END {
  printf "%d rounds. Each round: the probe on %d nodes, its predictions, real DDP at every count (run.sh).\n\n", rounds, probed
  print "| link | params | optimizer | nodes | real DDP share: mean (range) | predicted: mean (range) | error of the means (points) | real DDP step (ms) | predicted step (ms) | step error |"
  print "|---|---|---|---|---|---|---|---|---|---|"
  for (i = 1; i <= points; i++) {
    k = order[i]
    if (k in unpredicted || !(k in n)) { printf "| %s | none: a round could not predict | | | | | |\n", k; continue }
    r = rs[k] / n[k]; p = ps[k] / n[k]; err = (p - r) * 100
    step_err = (pstep[k] - rstep[k]) / rstep[k] * 100
    printf "| %s | %.1f%% (%.1f–%.1f) | %.1f%% (%.1f–%.1f) | %+.1f | %.0f | %.0f | %+.0f%% |\n", k, r * 100, rmin[k] * 100, rmax[k] * 100, p * 100, pmin[k] * 100, pmax[k] * 100, err, rstep[k] / n[k], pstep[k] / n[k], step_err
    judged++; sum += abs(err); if (abs(err) > max) max = abs(err); if (abs(err) <= 3) within++
    if (abs(step_err) <= 10) step_within++
    range = (rmax[k] - rmin[k]) * 100; range_sum += range; if (range > range_max) range_max = range
  }
  if (judged == 0) exit
  printf "\nerror of the means: mean %.1f points, largest %.1f; %d of %d within 3 points; predicted step within 10%% at %d of %d\n", sum / judged, max, within, judged, step_within, judged
  printf "single rounds: %d of %d predictions within 3 points of that round'"'"'s real DDP, largest error %.1f\n", singles_within, singles, singles_max
  printf "real DDP between rounds: its share at one point spanned %.1f points on average, %.1f at most\n", range_sum / judged, range_max
}' "$TMP/rows.tsv"
