#!/usr/bin/env python3
"""Summarize alternate.sh sittings: medians over alternations (ad hoc, 2026-12-08)."""
import json, os, re, statistics as st, sys

def load(d):
    rows = []
    for k in range(1, 1000):
        try:
            p = json.load(open(f"{d}/probe-{k}.json")); r0 = json.load(open(f"{d}/ddp-{k}.json"))
        except FileNotFoundError:
            break
        c = p["compute"]
        row = {"phase_step": c["stepTimeMs"], "phase_fwd": c["forwardMs"],
               "probe_co": p["ddpStep"]["computeOnlyStepTimeMs"], "real_co": r0["computeMs"],
               "real_fwd": r0["loopForwardMs"]}
        # Rank 1's real DDP and both ranks' probe loop phases, where kept (sittings b on).
        if os.path.exists(f"{d}/ddp-{k}-r1.out"):
            r1 = json.loads(open(f"{d}/ddp-{k}-r1.out").read())
            row["real_co"] = (r0["computeMs"] + r1["computeMs"]) / 2  # as the probe: mean over ranks
            row["real_fwd"] = (r0["loopForwardMs"] + r1["loopForwardMs"]) / 2
            fwd = [float(re.search(r"fwd ([\d.]+)", open(f"{d}/probe-{k}-r{i}.err").read()).group(1)) for i in (0, 1)]
            row["probe_fwd"] = sum(fwd) / 2
        rows.append(row)
    return rows

print("| sitting | n | probe DDP-loop compute-only / real DDP's (median) | under in | probe compute phase / real DDP's | forward (ms): probe in its DDP loop, probe in its compute phase, real DDP in its loop |")
print("|---|---|---|---|---|---|")
for d in sys.argv[1:]:
    R = load(d)
    ratio = [x["probe_co"] / x["real_co"] for x in R]
    phase = [x["phase_step"] / x["real_co"] for x in R]
    probe_fwd = "%.1f" % st.median(x["probe_fwd"] for x in R) if "probe_fwd" in R[0] else "not kept"
    fwd = "%s, %.1f, %.1f" % (probe_fwd, st.median(x["phase_fwd"] for x in R), st.median(x["real_fwd"] for x in R))
    print(f"| {d} | {len(R)} | {st.median(ratio):.3f} | {sum(1 for v in ratio if v < 1)} | {st.median(phase):.3f} | {fwd} |")
