#!/bin/sh
# The entrypoint of the image commgate/ddp-tiny (examples/jobs/ddp-tiny.yaml): torchrun with
# no flags, so it takes the topology from the PET_* variables the operator injects, then
# ddp_tiny.py beside this file with the container's args. commgate-sim runs it for that
# image (`--image-entrypoint commgate/ddp-tiny=$PWD/examples/training/ddp-tiny-entrypoint.sh`,
# docs/install.md); on a cluster, an image with torch and these two files.
#
# PET_REDIRECTS/PET_TEE: Debian's torch 1.13 under Python 3.11 parses torchrun's default
# "0" to None and stops before starting a worker (AttributeError: 'NoneType' object has no
# attribute 'get'); "1" works and also puts each worker's output in the pod's log.
#
# The first python3 that has torch: PATH's (an image's own), else Debian's (python3-torch,
# which scripts/install-deps.sh installs), where PATH finds another Python first.
export PET_REDIRECTS="${PET_REDIRECTS:-1}" PET_TEE="${PET_TEE:-1}"
for python in python3 /usr/bin/python3; do
  if "$python" -c 'import torch' 2>/dev/null; then
    exec "$python" -m torch.distributed.run "$(dirname "$0")/ddp_tiny.py" "$@"
  fi
done
echo "ddp-tiny: no python3 with torch (tried python3 on PATH and /usr/bin/python3)" >&2
exit 127
