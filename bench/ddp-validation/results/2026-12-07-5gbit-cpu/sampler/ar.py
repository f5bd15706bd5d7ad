# ar.py SIZE OPT SECONDS MODE: one rank of drive.sh (ad hoc, kept as it ran); rank 0 prints
# the timed window (wall clock) and the median time of MODE (allreduce, step or nosync).
import os, sys, json, time, statistics
for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"): os.environ[v] = "1"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../.."))  # ddp_mlp.py
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
import ddp_mlp as d
params, optname, seconds, mode = d.quantity(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4]
torch.set_num_threads(1); torch.manual_seed(0)
model, width = d.make_model(params)
dist.init_process_group("gloo")
rank = dist.get_rank()
ddp = DistributedDataParallel(model)
opt = d.make_optimizer(optname, ddp.parameters())
x = torch.randn(32, width)
for _ in range(2): d.train_step(ddp, opt, x)
logged = ddp._get_ddp_logging_data()
sizes = logged.get("rebuilt_bucket_sizes") or logged.get("bucket_sizes") or ""
buckets = [torch.zeros(int(b) // 4) for b in str(sizes).replace(" ", "").split(",") if b]
def once():
    dist.barrier(); s = time.perf_counter()
    if mode == "allreduce":
        for w in [dist.all_reduce(b, async_op=True) for b in buckets]: w.wait()
    elif mode == "step":
        d.train_step(ddp, opt, x)
    else:
        with ddp.no_sync(): d.train_step(ddp, opt, x)
    return (time.perf_counter() - s) * 1000
first = [once() for _ in range(3)]
n = torch.tensor([max(5, int(seconds * 1000 / statistics.median(first)))]); dist.broadcast(n, 0)
dist.barrier()
t0 = time.time(); ms = [once() for _ in range(int(n.item()))]; t1 = time.time()
if rank == 0: print(json.dumps({"start": t0, "end": t1, "ms": statistics.median(ms), "iters": len(ms)}))
dist.destroy_process_group()
