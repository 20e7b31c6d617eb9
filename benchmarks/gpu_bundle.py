"""The packages a GPU machine lacks, as parts small enough to travel with a device call.

    python benchmarks/gpu_bundle.py                        # .gpu_bundle/: part-00, part-01, ...
    python benchmarks/gpu_bundle.py --python 3.11 --out /tmp/bundle   # for another Python

The lent GPU machines hold torch, numpy, numba, rich, tensorboard and pyarrow but not MuJoCo,
MuJoCo Warp, Warp or tyro, and reach no registry. This downloads those packages' wheels for
the machine's Python (3.12 there, x86-64 Linux) at the versions installed here (what the
tests ran), installs them into one folder without their dependencies, packs it as a
tar.xz, and splits that into parts of ``--part-mib`` (a call carries at most 64 MiB with
the working tree). ``manifest.json`` names the parts with their SHA-256;
``benchmarks/gpu_setup.sh`` on the machine keeps the parts that each call brings, and once
all are there unpacks them (docs/performance/gpu-learning.md gives the calls).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import json
import lzma
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import tyro

PACKAGES = ("mujoco", "mujoco-core", "mujoco-warp", "warp-lang", "tyro", "docstring-parser",
            "typeguard", "gymnasium", "farama-notifications", "glfw", "pyopengl")
"""What the machine lacks for training, at this checkout's installed versions (mujoco's
viewer, mujoco-studio, is left out: training never opens it)."""

PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux1_x86_64")


@dataclasses.dataclass
class Args:
    python: str = "3.12"
    """The GPU machine's Python (major.minor)."""
    out: Path = Path(".gpu_bundle")
    """Folder of the parts and manifest.json (ignored by git; name it in the call's carry)."""
    part_mib: int = 48
    """Size of each part [MiB] (a call carries 64 MiB with the working tree, about 12 of
    them the checkout's)."""
    packages: tuple[str, ...] = PACKAGES
    """Distributions to bundle, at their versions installed here."""
    warp_cpu: bool = False
    """Keep Warp's CPU kernel compiler (warp/bin/warp-clang.so, 69 MB; 20 of the bundle's
    108 MiB packed). Off: on the GPU, Warp compiles for CUDA alone (``wp.init()`` lists no
    CPU device), and the bundle fits two calls instead of three."""


def pinned(names: tuple[str, ...]) -> list[str]:
    """``name==version`` of each distribution as installed here."""
    return [f"{n}=={importlib.metadata.version(n)}" for n in names]


def main(args: Args) -> None:
    pins = pinned(args.packages)
    with tempfile.TemporaryDirectory() as tmp:
        wheels, site = Path(tmp) / "wheels", Path(tmp) / "site"
        platforms = [a for p in PLATFORMS for a in ("--platform", p)]
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                        "--only-binary=:all:", "--python-version", args.python,
                        "--implementation", "cp", *platforms, "-d", str(wheels), *pins],
                       check=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index",
                        "--no-deps", "--no-compile", "--target", str(site),
                        "--python-version", args.python, "--implementation", "cp",
                        *platforms, "--only-binary=:all:", *map(str, wheels.glob("*.whl"))],
                       check=True)
        if not args.warp_cpu:
            (site / "warp" / "bin" / "warp-clang.so").unlink()
        packed = Path(tmp) / "site.tar.xz"
        with lzma.open(packed, "wb", preset=6) as xz, tarfile.open(fileobj=xz, mode="w") as tar:
            tar.add(site, arcname=".")
        if args.out.exists():
            shutil.rmtree(args.out)
        args.out.mkdir(parents=True)
        parts: list[dict[str, object]] = []
        size = args.part_mib * 2**20
        with open(packed, "rb") as f:
            while chunk := f.read(size):
                name = f"part-{len(parts):02d}"
                (args.out / name).write_bytes(chunk)
                parts.append({"name": name, "bytes": len(chunk),
                              "sha256": hashlib.sha256(chunk).hexdigest()})
    manifest = {"python": args.python, "packages": pins, "warp_cpu": args.warp_cpu,
                "parts": parts,
                "id": hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]}
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    total = sum(int(str(p["bytes"])) for p in parts) / 2**20
    print(f"{args.out}: {len(parts)} parts, {total:.0f} MiB for Python {args.python}: "
          f"{', '.join(pins)}")
    for p in parts:
        print(f"  carry {args.out / str(p['name'])} and {args.out / 'manifest.json'} in one "
              f"call, then run bash benchmarks/gpu_setup.sh")


if __name__ == "__main__":
    main(tyro.cli(Args))
