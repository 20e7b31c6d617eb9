"""Write the deploy artifact (docs/training.md): ONNX + TorchScript + policy.json.

    export_artifact(out_dir, DeployPolicy(...), artifact_meta(env, ...), cost=DeployCost(...))

The folder is assembled under a temporary name and renamed into place when complete, and
every exported graph is checked against the torch module it came from (max abs difference
below ``tolerance`` on random observations) before the rename.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from robot_rl import __version__
from robot_rl.config_io import to_dict
from robot_rl.export.modules import DeployCost, DeployPolicy, ResidualGraph
from robot_rl.export.policy import (
    FORMAT,
    VERSION,
    ArtifactError,
    GraphInput,
    Policy,
    graph_inputs,
)
from robot_rl.policies import ChunkPolicy, PolicyConfig
from robot_rl.sim.env import BatchedEnv

POLICY_FILES = {"policy_onnx": "policy.onnx", "policy_torchscript": "policy.pt"}
COST_FILES = {"onnx": "cost_critic.onnx", "torchscript": "cost_critic.pt"}
RESIDUAL_FILES = {"onnx": "residual.onnx", "torchscript": "residual.pt"}


def task_meta(env: BatchedEnv) -> dict[str, Any]:
    """The task half of policy.json: robot, observation layout, action space, control,
    shield and safety costs of ``env``'s task (what the deploy runtime is built from)."""
    cfg, robot = env.cfg, env.robot
    return {
        "format": FORMAT, "version": VERSION,
        # the arm as the task config names it: a registered name, or a saved spec's path
        "robot": {"name": cfg.robot, "joint_names": list(robot.joint_names),
                  "ee_site": robot.ee_site,
                  "gripper": robot.gripper is not None and env.pipeline.action_space.has_gripper},
        "task": cfg.name,
        "observation": {
            "dim": env.obs_dim,
            "layout": [{"name": n, "width": w} for n, w in env.obs_layout],
        },
        "action": {"dim": env.act_dim, "low": -1.0, "high": 1.0,
                   "space": to_dict(cfg.action)},
        "control": {"rate_hz": 1.0 / cfg.control_dt, "physics_dt": cfg.physics_dt,
                    "decimation": cfg.decimation,
                    "controller": None if cfg.controller is None else to_dict(cfg.controller)},
        "shield": to_dict(cfg.shield),
        "safety_costs": to_dict(cfg.safety),
        "env": to_dict(cfg),
    }


def artifact_meta(env: BatchedEnv, policy: DeployPolicy | ChunkPolicy,
                  safety: dict[str, Any] | None, provenance: dict[str, Any],
                  chunk: dict[str, Any] | None = None) -> dict[str, Any]:
    """policy.json contents for a policy acting in ``env``'s task (docs/training.md);
    ``chunk``: ``chunk_meta`` of a chunked policy."""
    meta = task_meta(env)
    norm = policy.obs_norm if isinstance(policy, ChunkPolicy) else policy.norm
    meta["observation"]["normalization"] = {
        "in_model": True, "mean": norm.mean.tolist(), "std": norm.std.tolist(),
        "clip": norm.clip}
    if chunk is not None:
        meta["chunk"] = chunk
    return with_provenance(meta, safety, provenance)


def with_provenance(meta: dict[str, Any], safety: dict[str, Any] | None,
                    provenance: dict[str, Any]) -> dict[str, Any]:
    """``meta`` with the safety entry, the file names and the provenance (versions, time,
    and ``provenance``'s entries) filled in."""
    meta.update(safety=safety, files=dict(POLICY_FILES),
                provenance={"robot_rl": __version__, "torch": torch.__version__,
                            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **provenance})
    return meta


def chunk_meta(cfg: PolicyConfig, kind: str, noise_input: bool,
               ensemble: float | None = None) -> dict[str, Any]:
    """policy.json's ``chunk`` entry: the policy maps the last ``obs_history`` observations
    (and, with ``noise_input``, noise (H A,) from N(0, I); with a ``clock``, the steps since
    the episode's start) to ``horizon`` actions, of which ``execute`` run before the next
    call (or every call, temporally ensembled)."""
    return {"horizon": cfg.horizon, "execute": cfg.executed, "obs_history": cfg.obs_history,
            "noise_input": noise_input, "ensemble": ensemble, "kind": kind,
            "flow_steps": cfg.flow_steps if kind == "flow" else None,
            "clock": list(cfg.clock)}


def export_artifact(out: str | Path, policy: torch.nn.Module, meta: dict[str, Any],
                    cost: DeployCost | None = None, tolerance: float = 1e-5,
                    residual: ResidualGraph | None = None) -> Path:
    """Write the artifact folder ``out`` (replacing an existing one); returns its path.

    ``policy``: a ``DeployPolicy``, or for a chunked policy (``meta["chunk"]``) a
    ``ChunkGraph`` / ``NoisyChunkGraph``. ``meta["safety"]`` must name the cost files when
    ``cost`` is given; this function fills them in. ``residual``: a chunked policy's
    per-step correction (``ResidualGraph``), written as ``residual.onnx`` / ``.pt`` and named
    in ``meta["residual"]``.
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    obs_dim, act_dim = int(meta["observation"]["dim"]), int(meta["action"]["dim"])
    policy = policy.eval()
    inputs = graph_inputs(meta)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        obs = torch.zeros(1, obs_dim)
        _write_graph(policy, tuple(torch.zeros((1, *shape), dtype=getattr(torch, dtype))
                                   for _, shape, dtype in inputs),
                     tuple(n for n, _, _ in inputs), "action", tmp, POLICY_FILES["policy_onnx"],
                     POLICY_FILES["policy_torchscript"])
        if cost is not None:
            cost = cost.eval()
            if meta.get("safety") is None:
                raise ArtifactError("a cost critic needs meta['safety'] (threshold etc.)")
            _write_graph(cost, (obs, torch.zeros(1, act_dim)), ("obs", "action"), "cost", tmp,
                         COST_FILES["onnx"], COST_FILES["torchscript"])
            meta["safety"]["cost_critic"] = dict(COST_FILES)
        if residual is not None:
            if not meta.get("chunk"):
                raise ArtifactError("a residual corrects a chunked policy's actions")
            residual = residual.eval()
            _write_graph(residual, (obs, torch.zeros(1, act_dim)), ("obs", "base_action"),
                         "action", tmp, RESIDUAL_FILES["onnx"], RESIDUAL_FILES["torchscript"])
            meta["residual"] = {**RESIDUAL_FILES, "scale": residual.scale,
                                "every": residual.every}
        (tmp / "policy.json").write_text(json.dumps(meta, indent=2) + "\n")
        _check(tmp, policy, cost, inputs, obs_dim, act_dim, tolerance, residual)
        tmp.chmod(0o755)  # mkdtemp makes it private; an artifact is meant to be shared
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def _write_graph(module: torch.nn.Module, example: tuple[torch.Tensor, ...],
                 inputs: tuple[str, ...], output: str, folder: Path, onnx_name: str,
                 ts_name: str) -> None:
    # TorchScript and the TorchScript-based ONNX exporter are deprecated in favour of
    # torch.export, but they are what deploy runtimes (libtorch, onnxruntime) load today;
    # their notices are not actionable for users, so they are silenced here.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        with torch.no_grad():
            traced = torch.jit.trace(module, example)
        traced.save(str(folder / ts_name))
        axes = {name: {0: "batch"} for name in (*inputs, output)}
        torch.onnx.export(module, example, str(folder / onnx_name), input_names=list(inputs),
                          output_names=[output], dynamic_axes=axes, dynamo=False)


def _random_input(name: str, shape: tuple[int, ...], dtype: str, gen: torch.Generator,
                  n: int = 64) -> torch.Tensor:
    if dtype == "uint8":  # an RGB image
        return torch.randint(0, 256, (n, *shape), generator=gen, dtype=torch.uint8)
    if name == "step" and dtype == "int64":  # a clock's steps since the episode's start
        return torch.randint(0, 1_000, (n, *shape), generator=gen)
    if dtype != "float32":
        raise ArtifactError(f"graph input {name!r} has unsupported dtype {dtype}")
    if len(shape) > 1:  # a depth image [m], 0 where nothing returned
        return torch.rand((n, *shape), generator=gen) * 3.0
    return torch.randn((n, *shape), generator=gen) * (2.0 if name == "obs" else 1.0)


def _check(folder: Path, policy: torch.nn.Module, cost: DeployCost | None,
           inputs: list[GraphInput], obs_dim: int, act_dim: int, tolerance: float,
           residual: ResidualGraph | None = None) -> None:
    """Every exported graph agrees with its torch module on random inputs."""
    gen = torch.Generator().manual_seed(0)
    xs = [_random_input(name, shape, dtype, gen) for name, shape, dtype in inputs]
    obs = xs[0][:, -obs_dim:]
    act = torch.rand(64, act_dim, generator=gen) * 2.0 - 1.0
    with torch.no_grad():
        ref_a = policy(*xs).numpy()
        ref_c = cost(obs, act).numpy() if cost is not None else None
    for backend in ("onnx", "torchscript"):
        loaded = Policy(folder, backend=backend)  # type: ignore[arg-type]
        err = float(np.abs(loaded.run_graph(*(x.numpy() for x in xs)) - ref_a).max())
        if err > tolerance:
            raise ArtifactError(f"exported {backend} policy differs from torch by {err:.2e}")
        if ref_c is not None:
            got = np.stack([loaded.cost(o, a[None])[0] for o, a in zip(obs.numpy()[:8],
                                                                   act.numpy()[:8], strict=True)])
            err = float(np.abs(got - ref_c[:8]).max())
            if err > tolerance * max(1.0, float(np.abs(ref_c).max())):
                raise ArtifactError(f"exported {backend} cost critic differs from torch by "
                                    f"{err:.2e}")
        if residual is not None:
            with torch.no_grad():
                ref_r = residual(obs, act).numpy()
            err = float(np.abs(loaded.correct(obs.numpy(), act.numpy()) - ref_r).max())
            if err > tolerance:
                raise ArtifactError(f"exported {backend} residual differs from torch by "
                                    f"{err:.2e}")
