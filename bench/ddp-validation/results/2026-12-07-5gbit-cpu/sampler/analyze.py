import json, sys, glob, os, re
def parse(path):
    snaps = []; cur = None
    for line in open(path):
        f = line.split()
        if not f: continue
        if f[0] == "T": cur = {"t": float(f[1]), "nodes": {}, "k": [0, 0]}; snaps.append(cur)
        elif f[0] == "cpu": cur["cpu"] = list(map(int, f[1:]))
        elif f[0] == "N": cur["nodes"][f[1]] = list(map(int, f[2:5]))
        elif f[0] == "K": cur["k"][0] += int(f[1]); cur["k"][1] += int(f[2])
    return [s for s in snaps if "cpu" in s]
for res in sorted(glob.glob(sys.argv[1] + "/result-*.json")):
    tag = os.path.basename(res)[7:-5]
    r = json.load(open(res))
    snaps = parse(res.replace("result-", "samples-").replace(".json", ".txt"))
    a = next(s for s in snaps if s["t"] >= r["start"]); b = [s for s in snaps if s["t"] <= r["end"]][-1]
    dt = b["t"] - a["t"]
    c = [(y - x) / 100 / dt for x, y in zip(a["cpu"], b["cpu"])]
    # user nice system idle iowait irq softirq steal
    line = f"{tag:32s} {r['ms']:7.1f} ms | host CPUs busy: user {c[0]+c[1]:.2f} sys {c[2]:.2f} softirq {c[6]:.2f} idle {c[3]:.2f} steal {c[7]:.2f} | ksoftirqd {(b['k'][1]-a['k'][1])/100/dt:.2f} |"
    for n in sorted(b["nodes"]):
        x, y = a["nodes"].get(n, [0,0,0]), b["nodes"][n]
        line += f" {n}: u{(y[1]-x[1])/100/dt:.2f} s{(y[2]-x[2])/100/dt:.2f} thr{(y[0]-x[0])/1e9/dt:.2f}"
    print(line)
