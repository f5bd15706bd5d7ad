#!/usr/bin/env python3
"""One rank, no network: the compute-only step of ddp_mlp.py's MLP three ways, interleaved
(issue #22, docs/benchmarks.md "The probe's compute lean"): plain eager PyTorch, DDP under
no_sync() (a Gloo world of one, as real DDP's compute-only step runs), and the TorchScript
of the model that commgate-probe times, stepped from Python with the same optimizer. If
eager PyTorch or DDP's wrapper cost a step more than the TorchScript, a real job would pay
it and the probe would not see it.

  step_kinds.py SIZE OPTIMIZER ROUNDS [PORT]     e.g. step_kinds.py 25M sgd 40

Prints one JSON object: each kind's median step and phases (ms). Run it uncapped, or in a
CPU cgroup as the emulated nodes are (docs/benchmarks.md gives both).
"""
import json
import os
import statistics
import sys

for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):  # as ddp_mlp.py, before torch
    os.environ[variable] = "1"

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

import ddp_mlp  # noqa: E402


def main():
    if len(sys.argv) not in (4, 5):
        raise SystemExit(__doc__)
    params, optimizer, rounds = ddp_mlp.quantity(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=sys.argv[4] if len(sys.argv) == 5
                      else "29533", RANK="0", WORLD_SIZE="1")
    dist.init_process_group("gloo")

    def fresh():
        torch.manual_seed(0)
        return ddp_mlp.make_model(params)

    eager, width = fresh()
    ddp = DistributedDataParallel(fresh()[0])
    scripted = torch.jit.script(fresh()[0])
    x = torch.randn(32, width)
    kinds = {name: (model, ddp_mlp.make_optimizer(optimizer, model.parameters()))
             for name, model in (("eager", eager), ("ddp-no_sync", ddp),
                                 ("torchscript", scripted))}

    def step(name):
        model, opt = kinds[name]
        if name == "ddp-no_sync":
            with ddp.no_sync():
                return ddp_mlp.train_step(model, opt, x)
        return ddp_mlp.train_step(model, opt, x)

    for name in kinds:  # warm-up
        for _ in range(3):
            step(name)
    times = {name: [] for name in kinds}
    for _ in range(rounds):
        for name in kinds:
            times[name].append(step(name))
    out = {"params": sys.argv[1], "optimizer": optimizer, "rounds": rounds}
    for name, t in times.items():
        out[name] = {"step": statistics.median(sum(p) for p in t),
                     "forward": statistics.median(p[0] for p in t),
                     "backward": statistics.median(p[1] for p in t),
                     "optimizer": statistics.median(p[2] for p in t)}
    print(json.dumps(out))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
