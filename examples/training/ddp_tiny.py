"""A tiny real DDP training: what commgate's workload e2e test runs under torchrun.

Started as `python3 -m torch.distributed.run examples/training/ddp_tiny.py` with no flags:
torchrun takes --nnodes, --node-rank, --nproc-per-node, --master-addr and --master-port
from the PET_* variables the operator injects (docs/operator.md "The training
workload"), and gives each worker RANK, LOCAL_RANK and WORLD_SIZE. The script checks
those against the operator's own NNODES, NODE_RANK, NPROC_PER_NODE and WORLD_SIZE, trains
a small Linear model for a few steps with the gloo backend (CPU), checks that every rank
ends with the same weights (DDP all-reduced the gradients), and prints one line per rank:

    ddp_tiny: rank 1 of 2 (node 1 of 2, local rank 0) trained 5 steps, loss 0.9123

Exit 0 on success; any mismatch exits non-zero, so a wrong rank, world size or
MASTER_ADDR fails the job. Flags: --steps N (default 5); --result PATH writes that line
there too (local rank 0 only), e.g. /dev/termination-log so it shows in the pod status;
--width W trains a Linear(W, W) (W*W + W parameters: --width 1000 is the 1M of
examples/jobs/ddp-tiny.yaml) instead of the 68-parameter Linear(16, 4), and --batch B
(default 32) samples per step and rank, so a TrainingJob can state the model it runs.
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def env_int(name):
    value = os.environ.get(name)
    if value is None:
        raise SystemExit(f"ddp_tiny: {name} is not set")
    return int(value)


def main():
    parser = argparse.ArgumentParser(description="a tiny DDP training (gloo, CPU)")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--result", default="", help="also write the result line here")
    parser.add_argument("--width", type=int, default=0, help="train a Linear(W, W)")
    parser.add_argument("--batch", type=int, default=32, help="samples per step and rank")
    args = parser.parse_args()
    rank, world = env_int("RANK"), env_int("WORLD_SIZE")
    local_rank = env_int("LOCAL_RANK")
    nnodes, node_rank = env_int("NNODES"), env_int("NODE_RANK")
    nproc = env_int("NPROC_PER_NODE")
    # torchrun's view (from PET_*) must agree with the operator's plain variables.
    if world != nnodes * nproc:
        raise SystemExit(f"ddp_tiny: WORLD_SIZE {world} != NNODES {nnodes} x NPROC_PER_NODE {nproc}")
    if rank != node_rank * nproc + local_rank:
        raise SystemExit(f"ddp_tiny: RANK {rank} != NODE_RANK {node_rank} x {nproc} + LOCAL_RANK {local_rank}")

    dist.init_process_group("gloo")  # env:// rendezvous on torchrun's MASTER_ADDR:MASTER_PORT
    if dist.get_world_size() != world or dist.get_rank() != rank:
        raise SystemExit(f"ddp_tiny: process group is rank {dist.get_rank()} of {dist.get_world_size()}")

    torch.manual_seed(1234 + rank)  # each rank sees different data
    features, outputs = (args.width, args.width) if args.width > 0 else (16, 4)
    model = torch.nn.Linear(features, outputs)
    torch.nn.init.constant_(model.weight, 0.1)
    torch.nn.init.zeros_(model.bias)
    ddp = DistributedDataParallel(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    steps = args.steps
    loss = torch.tensor(0.0)
    for _ in range(steps):
        x, y = torch.randn(args.batch, features), torch.randn(args.batch, outputs)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        loss.backward()  # DDP all-reduces the gradients here
        optimizer.step()

    # Same weights everywhere, or DDP did not synchronise: compare with rank 0's.
    weights = model.weight.detach().clone()
    reference = weights.clone()
    dist.broadcast(reference, src=0)
    if not torch.equal(weights, reference):
        raise SystemExit(f"ddp_tiny: rank {rank}'s weights differ from rank 0's")
    # One all-reduce the script checks by value: the sum of the ranks.
    total = torch.tensor([float(rank)])
    dist.all_reduce(total)
    if int(total.item()) != world * (world - 1) // 2:
        raise SystemExit(f"ddp_tiny: all-reduce of the ranks gave {total.item()}")

    line = (f"ddp_tiny: rank {rank} of {world} (node {node_rank} of {nnodes}, local rank "
            f"{local_rank}) trained {steps} steps, loss {loss.item():.4f}")
    print(line + (f" (Linear({features}, {outputs}), batch {args.batch})" if args.width else ""),
          flush=True)
    if args.result and local_rank == 0:
        with open(args.result, "w") as f:
            f.write(line + "\n")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
