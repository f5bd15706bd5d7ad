#!/usr/bin/env python3
"""Real PyTorch DDP training of an MLP, timed as commgate predicts it (issue #22).

The truth the validation holds commgate's predictions to: torch.nn.parallel.
DistributedDataParallel with its defaults (Gloo, bucket_cap_mb 25), one thread per rank,
stepping an MLP with the given optimizer. Each timed step is forward, backward (DDP's
bucketed all-reduces overlap it; backward returns once they are done) and the optimizer's
step. The compute-only baseline is the same step under `no_sync()` (no all-reduce),
interleaved with the communicating steps so that both see the same machine load: the
exposed communication is the difference, and its share of the step is what commgate's
policy limits.

  ddp_mlp.py --params 5M --batch 32 --optimizer sgd            (rank: MASTER_ADDR, MASTER_PORT,
                                                                RANK, WORLD_SIZE from the env)
  ddp_mlp.py --params 5M --batch 32 --save-torchscript m.pt    the same model for the probe
                                                                (prints the input shape)
  ddp_mlp.py --params 5M --batch 32 --optimizer sgd --busy 900  no process group: the same
                                                                step without communication,
                                                                over and over (prints "busy"
                                                                after the first), until killed
                                                                or 900 s have passed
Rank 0 prints one JSON object on stdout.
"""
import argparse
import json
import os
import statistics
import sys
import time

# One thread per rank, as commgate-probe --threads 1 runs: torch.set_num_threads does not
# reach Debian's OpenBLAS, whose threads (one per core, spinning while they wait) would
# otherwise burn a capped node's CPU time: the compute-only step measured 1,341 ms with
# them against 590 ms without, at the same point.
for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ[variable] = "1"

import torch  # noqa: E402  (after the thread counts: OpenBLAS reads them when it loads)
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

DEPTH = 4  # Linear layers of width x width: the parameters are almost all in them


def quantity(text):
    units = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


def make_model(params):
    width = max(8, int(round((params / DEPTH) ** 0.5)))
    layers = []
    for i in range(DEPTH):
        layers.append(torch.nn.Linear(width, width))
        if i + 1 < DEPTH:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers), width


def make_optimizer(name, parameters):
    if name == "sgd":
        return torch.optim.SGD(parameters, lr=1e-3)
    if name == "sgd-momentum":
        return torch.optim.SGD(parameters, lr=1e-3, momentum=0.9)
    if name == "adamw":
        return torch.optim.AdamW(parameters, lr=1e-3)
    if name == "adam":
        return torch.optim.Adam(parameters, lr=1e-3)
    raise SystemExit(f"ddp_mlp.py: --optimizer {name}: sgd, sgd-momentum, adam or adamw")


def train_step(model, optimizer, x):
    """One training step (forward, backward, the optimizer's step); returns the three
    phases' times (ms). The measured ranks and the busy nodes run this same step."""
    optimizer.zero_grad(set_to_none=True)
    t0 = time.perf_counter()
    loss = model(x).square().mean()
    t1 = time.perf_counter()
    loss.backward()
    t2 = time.perf_counter()
    optimizer.step()
    t3 = time.perf_counter()
    return [(t1 - t0) * 1000, (t2 - t1) * 1000, (t3 - t2) * 1000]


def keep_busy(model, optimizer, x, seconds):
    """The compute of a training step over and over, no communication: what a node that a
    measurement leaves out does on a real cluster does not matter, but on emulated nodes that
    share one machine's cores and memory it does (run.sh starts one of these on each)."""
    deadline = time.monotonic() + seconds
    first = True
    while time.monotonic() < deadline:
        train_step(model, optimizer, x)
        if first:
            print("busy", flush=True)
            first = False


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--params", default="5M")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--optimizer", default="sgd")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--iters", type=int, default=10, help="timed pairs of steps, at least")
    parser.add_argument("--min-seconds", type=float, default=6,
                        help="more timed pairs while a step is short, until they last about this "
                        "long (judged by the last warm-up pair; at most 6x --iters)")
    parser.add_argument("--save-torchscript")
    parser.add_argument("--busy", type=float, metavar="SECONDS",
                        help="keep a node as busy as a training rank (run.sh: the nodes a "
                        "measurement leaves out), for at most this long")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model, width = make_model(quantity(args.params))
    parameters = sum(p.numel() for p in model.parameters())
    if args.save_torchscript:
        torch.jit.script(model).save(args.save_torchscript)
        print(json.dumps({"parameters": parameters, "inputShape": [args.batch, width]}))
        return
    if args.busy is not None:
        return keep_busy(model, make_optimizer(args.optimizer, model.parameters()),
                         torch.randn(args.batch, width), args.busy)

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    ddp = DistributedDataParallel(model)  # DDP's defaults: bucket_cap_mb 25
    optimizer = make_optimizer(args.optimizer, ddp.parameters())
    x = torch.randn(args.batch, width)

    def timed(sync):
        if sync or not os.environ.get("NO_CO_BARRIER"):
            dist.barrier()  # every rank starts the step together, as in training
        start = time.perf_counter()
        if sync:
            train_step(ddp, optimizer, x)
        else:
            with ddp.no_sync():
                loop_phases.append(train_step(ddp, optimizer, x))
        return (time.perf_counter() - start) * 1000

    def phases():
        """forward, backward, optimizer of one compute-only step (ms): the probe's profile."""
        dist.barrier()
        with ddp.no_sync():
            return train_step(ddp, optimizer, x)

    loop_phases = []
    pair_ms = 0.0
    for _ in range(args.warmup):
        pair_ms = timed(True) + timed(False)
    # A short step gets more pairs (10 pairs of a 70 ms step last 1.4 s, in which one stall
    # of a capped node moves the median by points); rank 0's count, so all run as many.
    wanted = int(args.min_seconds * 1000 / max(pair_ms, 1.0)) + 1
    pairs = torch.tensor([max(args.iters, min(6 * args.iters, wanted))])
    dist.broadcast(pairs, 0)
    # DDP's buckets as rebuilt after its first step (by gradient-ready order).
    logged = ddp._get_ddp_logging_data()
    sizes = logged.get("rebuilt_bucket_sizes") or logged.get("bucket_sizes") or ""
    bucket_bytes = [int(b) for b in str(sizes).replace(" ", "").split(",") if b]
    buckets = [torch.zeros(b // 4) for b in bucket_bytes]

    def allreduce_alone():
        """DDP's buckets all-reduced back to back with no compute (launched at once, as
        DDP's Reducer queues them on Gloo's worker threads): the communication to hide."""
        dist.barrier()
        start = time.perf_counter()
        works = [dist.all_reduce(b, async_op=True) for b in buckets]
        for w in works:
            w.wait()
        return (time.perf_counter() - start) * 1000

    loop_phases.clear()
    with_comm, compute_only, alone, split = [], [], [], []
    for _ in range(int(pairs.item())):
        if os.environ.get("CO_FIRST"):
            compute_only.append(timed(False))
            with_comm.append(timed(True))
        else:
            with_comm.append(timed(True))
            compute_only.append(timed(False))
    for _ in range(max(3, args.iters // 2)):
        alone.append(allreduce_alone())
        split.append(phases())
    step_ms = statistics.median(with_comm)
    compute_ms = statistics.median(compute_only)
    if True:
        print(json.dumps({
            "rank": rank,
            "nodes": world,
            "parameters": parameters,
            "batch": args.batch,
            "optimizer": args.optimizer,
            "stepMs": step_ms,
            "computeMs": compute_ms,
            "exposedCommMs": max(0.0, step_ms - compute_ms),
            "commShare": max(0.0, step_ms - compute_ms) / step_ms,
            "allReduceMs": statistics.median(alone),
            "bucketBytes": bucket_bytes,
            "forwardMs": statistics.median(p[0] for p in split),
            "backwardMs": statistics.median(p[1] for p in split),
            "optimizerMs": statistics.median(p[2] for p in split),
            "pairs": len(with_comm),
            "loopForwardMs": statistics.median(p[0] for p in loop_phases),
            "loopBackwardMs": statistics.median(p[1] for p in loop_phases),
            "loopOptimizerMs": statistics.median(p[2] for p in loop_phases),
            "stepsMs": with_comm,
            "computeStepsMs": compute_only,
        }))
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
