"""``benchmarks/gpu_setup.sh``: the bundle's parts kept across calls, checked, unpacked once
all are there, and the checkout laid out as installed beside them."""

from __future__ import annotations

import hashlib
import io
import json
import lzma
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

SETUP = Path(__file__).parents[2] / "benchmarks" / "gpu_setup.sh"


def _bundle(root: Path, parts: int) -> list[Path]:
    """A bundle of one module (``bundled_probe``) in ``parts`` parts, each in its own folder
    with the manifest, as one call would carry it."""
    buf = io.BytesIO()
    with lzma.open(buf, "wb") as xz, tarfile.open(fileobj=xz, mode="w") as tar:
        data = b"VALUE = 42\n" + b"# " + os.urandom(4000).hex().encode() + b"\n"
        info = tarfile.TarInfo("./bundled_probe.py")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    blob = buf.getvalue()
    size = -(-len(blob) // parts)
    chunks = [blob[i:i + size] for i in range(0, len(blob), size)]
    entries = [{"name": f"part-{i:02d}", "bytes": len(c),
                "sha256": hashlib.sha256(c).hexdigest()} for i, c in enumerate(chunks)]
    manifest = json.dumps({"parts": entries, "id": "probe"})
    calls = []
    for i, chunk in enumerate(chunks):
        call = root / f"call{i}"
        call.mkdir()
        (call / "manifest.json").write_text(manifest)
        (call / f"part-{i:02d}").write_bytes(chunk)
        calls.append(call)
    return calls


def _setup(call: Path, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHON=sys.executable, ROBOT_RL_BUNDLE_STORE=str(tmp / "store"),
               ROBOT_RL_SITE=str(tmp / "site"), MUJOCO_GL="egl")
    return subprocess.run(["bash", str(SETUP), str(call)], capture_output=True, text=True,
                          env=env, timeout=300)


@pytest.mark.slow
def test_parts_brought_over_several_calls_are_unpacked_once_all_are_there(tmp_path: Path):
    first, second = _bundle(tmp_path, 2)
    done = _setup(first, tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "1 of 2 parts here; carry the rest in the next call: part-01" in done.stdout
    # a part damaged on the way is not kept
    good = (second / "part-01").read_bytes()
    (second / "part-01").write_bytes(good[:-1] + bytes([good[-1] ^ 1]))
    assert _setup(second, tmp_path).returncode == 3
    (second / "part-01").write_bytes(good)
    done = _setup(second, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    site = tmp_path / "site"
    assert "VALUE = 42" in (site / "bundled_probe.py").read_text()
    assert (site / "robot_rl" / "sim" / "env.py").is_file()  # laid out as installed
    assert (site / "robot_rl" / "controllers" / "shield.py").is_file()
    assert "gpu_setup: ready: torch" in done.stdout and "mujoco_warp" in done.stdout
    assert f"export PYTHONPATH={site}" in done.stdout
    # a later call finds it unpacked and only re-copies the checkout
    again = _setup(first, tmp_path)
    assert again.returncode == 0 and "unpacked" not in again.stdout


def test_a_call_without_the_bundle_says_what_to_carry(tmp_path: Path):
    done = _setup(tmp_path / "nothing", tmp_path)
    assert done.returncode == 2 and "carry it" in done.stdout
