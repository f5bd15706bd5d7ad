import sys, time, glob, os
p, out = sys.argv[1], sys.argv[2]
def comm(d):
    try: return open(f"/proc/{d}/comm").read()
    except OSError: return ""
ks = [d for d in os.listdir("/proc") if d.isdigit() and comm(d).startswith("ksoftirqd")]
with open(out, "a") as o:
    while True:
        lines = [f"T {time.time()}", open("/proc/stat").readline().strip()]
        for d in sorted(glob.glob(f"/sys/fs/cgroup/cpu/commgate-{p}-n*")):
            thr = [l.split()[1] for l in open(d + "/cpu.stat") if l.startswith("throttled_time")][0]
            ut = st = 0
            for pid in open(d + "/cgroup.procs").read().split():
                try:
                    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
                    ut += int(f[11]); st += int(f[12])
                except OSError: pass
            lines.append(f"N {d.rsplit('-',1)[1]} {thr} {ut} {st}")
        for k in ks:
            f = open(f"/proc/{k}/stat").read().rsplit(")", 1)[1].split()
            lines.append(f"K {f[11]} {f[12]}")
        o.write("\n".join(lines) + "\n"); o.flush()
        time.sleep(0.5)
