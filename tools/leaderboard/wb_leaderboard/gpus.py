"""The GPUs of this machine, as nvidia-smi lists them, and the ones a run is asked to use
(--gpus): shared by a local run (run.py) and a Slurm job on its node (node.py).
"""

import shutil
import subprocess

from .repository import Refused


def list_gpus():
    """[(index, uuid, compute capability without the dot, name)] as nvidia-smi lists them."""
    if not shutil.which("nvidia-smi"):
        return []
    try:
        p = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,uuid,compute_cap,name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    gpus = []
    for line in p.stdout.splitlines() if p.returncode == 0 else []:
        parts = [x.strip() for x in line.split(",", 3)]
        if len(parts) == 4:
            gpus.append((parts[0], parts[1], parts[2].replace(".", ""), parts[3]))
    return gpus


def pick_gpus(gpus, wanted):
    """The GPUs named in `wanted` (indices or UUIDs, comma-separated; all when empty)."""
    if not wanted:
        return list(gpus)
    picked = []
    for w in (x.strip() for x in wanted.split(",")):
        found = [g for g in gpus if w in (g[0], g[1])]
        if not found:
            raise Refused("--gpus: no GPU '%s' (nvidia-smi lists: %s)" % (w, " ".join(g[0] for g in gpus)))
        picked.append(found[-1])
    return picked
