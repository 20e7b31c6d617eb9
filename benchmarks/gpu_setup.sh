#!/usr/bin/env bash
# Set up a fresh GPU machine (torch and a driver, no registry) for robot_rl, from the parts of
# the bundle benchmarks/gpu_bundle.py makes, brought one or more per call:
#
#   bash benchmarks/gpu_setup.sh [BUNDLE]          # BUNDLE: the carried folder (.gpu_bundle)
#
# Each call keeps the parts it brings in $ROBOT_RL_BUNDLE_STORE (default /tmp/robot_rl_bundle;
# it lasts while the machine stays warm) and checks them against manifest.json. Without all
# of them it says which are missing and exits 3; with all, it unpacks them once into
# $ROBOT_RL_SITE (default /tmp/robot_rl_site), lays this checkout out there as installed
# (sim/ as robot_rl/sim, ...), imports MuJoCo, Warp (and its CUDA devices), MuJoCo Warp,
# tyro and robot_rl from there, and prints the line that puts them on the path. Exit 0:
# ready. Every later call re-copies the checkout (the code may have changed).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
bundle=$(cd "${1:-$repo/.gpu_bundle}" 2>/dev/null && pwd) || { echo "gpu_setup: no bundle folder ${1:-.gpu_bundle}: carry it (benchmarks/gpu_bundle.py makes it)"; exit 2; }
store=${ROBOT_RL_BUNDLE_STORE:-/tmp/robot_rl_bundle}
site=${ROBOT_RL_SITE:-/tmp/robot_rl_site}
python=${PYTHON:-python3}
mkdir -p "$store" "$site"
[ -f "$bundle/manifest.json" ] || { echo "gpu_setup: $bundle/manifest.json is missing"; exit 2; }
cp "$bundle/manifest.json" "$store/manifest.json"

# keep the parts this call brought, each checked against the manifest
missing=$("$python" - "$bundle" "$store" <<'PY'
import hashlib, json, shutil, sys
from pathlib import Path
bundle, store = Path(sys.argv[1]), Path(sys.argv[2])
manifest = json.loads((store / "manifest.json").read_text())
missing = []
for part in manifest["parts"]:
    name = part["name"]
    for where in (bundle, store):
        f = where / name
        if f.is_file() and hashlib.sha256(f.read_bytes()).hexdigest() == part["sha256"]:
            if where is bundle:
                shutil.copyfile(f, store / name)
            break
    else:
        missing.append(name)
print(" ".join(missing))
PY
)
total=$("$python" -c "import json,sys; print(len(json.load(open(sys.argv[1]))['parts']))" "$store/manifest.json")
if [ -n "$missing" ]; then
  have=$((total - $(echo "$missing" | wc -w)))
  echo "gpu_setup: $have of $total parts here; carry the rest in the next call: $missing"
  exit 3
fi

id=$("$python" -c "import json,sys; print(json.load(open(sys.argv[1]))['id'])" "$store/manifest.json")
if [ "$(cat "$site/.bundle" 2>/dev/null)" != "$id" ]; then
  t0=$(date +%s)
  rm -rf "$site" && mkdir -p "$site"
  "$python" - "$store" "$site" <<'PY'
import json, lzma, sys, tarfile
from pathlib import Path
store, site = Path(sys.argv[1]), Path(sys.argv[2])
parts = [store / p["name"] for p in json.loads((store / "manifest.json").read_text())["parts"]]
class Joined:
    def __init__(self): self.files, self.f = iter(parts), None
    def read(self, n=-1):
        out = b""
        while n < 0 or len(out) < n:
            if self.f is None:
                nxt = next(self.files, None)
                if nxt is None:
                    break
                self.f = open(nxt, "rb")
            chunk = self.f.read(-1 if n < 0 else n - len(out))
            if not chunk:
                self.f.close(); self.f = None
                continue
            out += chunk
        return out
with lzma.open(Joined()) as xz, tarfile.open(fileobj=xz, mode="r|") as tar:
    tar.extractall(site, filter="data")
PY
  echo "$id" > "$site/.bundle"
  echo "gpu_setup: unpacked $total parts into $site in $(( $(date +%s) - t0 )) s"
fi

# this checkout, laid out as installed (pyproject's package-dir)
rm -rf "$site/robot_rl"
cp -r "$repo/robot_rl" "$site/robot_rl"
for d in sim controllers hardware launch; do cp -r "$repo/$d" "$site/robot_rl/$d"; done

cd /tmp
export MUJOCO_GL=${MUJOCO_GL:-egl}
PYTHONPATH="$site" "$python" - <<'PY'
import importlib.metadata as md
import mujoco, mujoco_warp, torch, tyro, warp as wp
wp.config.quiet = True
wp.init()
import robot_rl.sim
cuda = [str(d) for d in wp.get_cuda_devices()]
print(f"gpu_setup: ready: torch {torch.__version__} (cuda {torch.cuda.is_available()}), "
      f"mujoco {mujoco.__version__}, mujoco_warp {md.version('mujoco-warp')}, "
      f"warp {wp.config.version} (CUDA devices: {', '.join(cuda) or 'none'}), "
      f"tyro {md.version('tyro')}")
PY
echo "gpu_setup: export PYTHONPATH=$site MUJOCO_GL=$MUJOCO_GL"
