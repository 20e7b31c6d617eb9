"""Warp backend: MuJoCo Warp steps ``num_envs`` worlds of one model on a GPU (or Warp's CPU
device, for tests and machines without one).

The worlds are one ``mjw.Data`` with ``nworld = num_envs``. Its arrays are exposed to torch
zero-copy (``wp.to_torch``), so the task code reads and writes them in place, float32, on
the device. On CUDA every physics call (a control step's substeps, a reset, a forward pass,
the model constants after randomization) is captured once as a CUDA graph and replayed.

Step semantics match the CPU backend's persistent batch: after a step with current sensors
the position and velocity stages (and their sensors) describe the new state, and the next
step starts from them instead of computing them again (MuJoCo's ``mj_step1``/``mj_step2``
split). Acceleration-stage sensors (contact forces) keep the values of the last substep.

Domain randomization: a model field asked for through ``model_field`` becomes per-world
(MuJoCo Warp indexes batched model fields by ``world % batch``), and so do the constants
``set_const`` derives from it.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import mujoco
import numpy as np
import torch

from robot_rl.errors import ConfigError, RobotRLError
from robot_rl.sim.backends.base import Backend
from robot_rl.sim.backends.kinematics import ViewKinematics
from robot_rl.sim.backends.warp_setup import (
    Capacity,
    capacity_or_override,
    import_warp,
    to_mjw_model,
    warp_device,
)
from robot_rl.sim.configs import WarpOptions

# Model constants set_const derives, by the randomized field they depend on.
_DERIVED = {
    "body_mass": ("body_subtreemass", "dof_invweight0", "body_invweight0", "tendon_invweight0",
                  "actuator_acc0"),
    "body_inertia": ("dof_invweight0", "body_invweight0", "tendon_invweight0", "actuator_acc0"),
    "dof_armature": ("dof_invweight0", "body_invweight0", "tendon_invweight0", "actuator_acc0"),
}


class CapacityError(RobotRLError):
    """A world needed more contacts or constraint rows than the Warp buffers hold."""


class WarpBackend(ViewKinematics, Backend):
    """``num_envs`` worlds on MuJoCo Warp (see module docstring)."""

    def __init__(self, model: mujoco.MjModel, num_envs: int, device: str = "cuda",
                 options: WarpOptions | None = None, what: str = "this scene"):
        opts = options or WarpOptions()
        wp, mjw = import_warp()
        self._wp, self._mjw = wp, mjw
        self._gather, self._scatter, self._capacity_bits = _kernels()
        self._wp_device = warp_device(wp, str(device))
        self.model = model
        self.num_envs = num_envs
        self.dtype = torch.float32
        self.device = torch.device(wp.device_to_torch(self._wp_device))
        self.capacity: Capacity = capacity_or_override(model, opts.nconmax, opts.njmax)
        self._check_every = max(1, opts.check_every)
        with wp.ScopedDevice(self._wp_device):
            self._m = to_mjw_model(mjw, model, what)
            self._m.opt.warn_overflow = 0  # overflows raise CapacityError instead
            self._d = mjw.make_data(model, nworld=num_envs, nconmax=self.capacity.nconmax,
                                    njmax=self.capacity.njmax)
            self._reset_mask = wp.zeros(num_envs, dtype=bool)
            sd_acc = [int(model.sensor_adr[i]) + k for i in range(model.nsensor)
                      if model.sensor_needstage[i] == mujoco.mjtStage.mjSTAGE_ACC
                      for k in range(int(model.sensor_dim[i]))]
            self._acc_cols = wp.array(sd_acc, dtype=int) if sd_acc else None
            self._acc_keep = wp.zeros((num_envs, max(len(sd_acc), 1)), dtype=float)
        self._graphs: dict[tuple, Any] = {}
        self._use_graph = opts.graph and self._wp_device.is_cuda and \
            wp.is_mempool_enabled(self._wp_device)
        self._bind()
        self._fields: dict[str, torch.Tensor] = {}
        self._setconst_groups = 0
        self._fresh = False  # position/velocity stages describe the current state
        self._steps = 0
        self._overflow_seen = torch.zeros(num_envs, dtype=torch.bool, device=self.device)
        self._init_kinematics()
        self._run(("reset_all",), lambda: mjw.reset_data(self._m, self._d))
        self.forward(torch.arange(num_envs, device=self.device))

    def _bind(self) -> None:
        """Torch views of the Data arrays the task code and the kinematics read."""
        t, d = self._wp.to_torch, self._d
        self.qpos, self.qvel, self.ctrl = t(d.qpos), t(d.qvel), t(d.ctrl)
        self.mocap_pos, self.time, self.sensordata = t(d.mocap_pos), t(d.time), t(d.sensordata)
        self._cdof, self._subtree_com, self._mass = t(d.cdof), t(d.subtree_com), t(d.M)
        self._bias, self._passive = t(d.qfrc_bias), t(d.qfrc_passive)
        self._gravcomp = t(d.qfrc_gravcomp)
        self._xpos, self._xmat = t(d.xpos), t(d.xmat)
        self._overflow = t(d.overflow)
        self._mask = t(self._reset_mask)

    # -- running physics -------------------------------------------------------------------

    def _run(self, key: tuple, fn: Callable[[], None]) -> None:
        """Run ``fn`` (Warp launches only): replayed from a CUDA graph captured on first use,
        or launched directly (Warp's CPU device, or graphs off)."""
        wp = self._wp
        with wp.ScopedDevice(self._wp_device):
            if not self._use_graph:
                fn()
                return
            graph = self._graphs.get(key)
            if graph is None:
                with wp.ScopedCapture() as capture:
                    fn()
                graph = self._graphs[key] = capture.graph
            wp.capture_launch(graph)

    def _stages_pos_vel(self) -> None:
        """Position and velocity stages and their sensors at the current state (mj_step1),
        keeping the acceleration-stage sensors of the last substep."""
        wp, d = self._wp, self._d
        if self._acc_cols is not None:
            wp.launch(self._gather, dim=self._acc_keep.shape,
                      inputs=[d.sensordata, self._acc_cols], outputs=[self._acc_keep])
        self._mjw.step1(self._m, d)
        if self._acc_cols is not None:
            wp.launch(self._scatter, dim=self._acc_keep.shape,
                      inputs=[self._acc_keep, self._acc_cols], outputs=[d.sensordata])

    def step(self, nstep: int, current_sensors: bool = True) -> None:
        fresh = self._fresh
        mjw, m, d = self._mjw, self._m, self._d

        def substeps() -> None:
            for i in range(nstep):
                if i > 0 or not fresh:
                    mjw.step1(m, d)
                mjw.step2(m, d)
            if current_sensors:
                self._stages_pos_vel()

        self._run(("step", nstep, current_sensors, fresh), substeps)
        self._fresh = current_sensors
        self._steps += 1
        if self._steps % self._check_every == 0:
            self.check_capacity()

    def check_capacity(self) -> None:
        """Raise CapacityError if any world ran out of contact or constraint room since the
        last check (waits for the device)."""
        seen = self._overflow_seen | ((self._overflow & self._capacity_bits) != 0)
        if not bool(seen.any()):
            return
        bits = int(np.bitwise_or.reduce(self._overflow.cpu().numpy()))
        n = int(seen.sum())
        raise CapacityError(
            f"MuJoCo Warp ran out of room in {n} of {self.num_envs} worlds "
            f"(nconmax={self.capacity.nconmax} contacts, njmax={self.capacity.njmax} "
            f"constraint rows per world; flags {bits:#x}): contacts or constraints were "
            f"dropped, so the physics is wrong. Raise them, e.g. --warp.nconmax "
            f"{2 * self.capacity.nconmax} --warp.njmax {2 * self.capacity.njmax}")

    def diverged(self, max_qvel: float) -> torch.Tensor | None:
        # MuJoCo Warp does not reset unstable worlds itself: non-finite or runaway state
        # marks them, and the env resets them. The mask stays on the device (no sync).
        bad = ~(self.qvel.abs() <= max_qvel).all(dim=1) | ~torch.isfinite(self.qpos).all(dim=1)
        return bad if self.device.type != "cpu" or bool(bad.any()) else None

    def _select(self, env_ids: torch.Tensor) -> None:
        """Set the per-world mask to ``env_ids``."""
        self._mask.zero_()
        self._mask[env_ids] = True

    def reset(self, env_ids: torch.Tensor) -> None:
        self._overflow_seen[env_ids] |= (self._overflow[env_ids] & self._capacity_bits) != 0
        self._select(env_ids)
        self._run(("reset",), lambda: self._mjw.reset_data(self._m, self._d, self._reset_mask))
        self._fresh = False

    def forward(self, env_ids: torch.Tensor) -> None:
        # Every world is recomputed (one launch serves all); worlds not in env_ids keep their
        # sensor values, as on the CPU backend, where only env_ids are recomputed.
        keep = None if len(env_ids) == self.num_envs else self.sensordata.clone()
        self._run(("forward",), self._stages_pos_vel)
        if keep is not None:
            self._select(env_ids)
            self.sensordata.copy_(torch.where(self._mask[:, None], self.sensordata, keep))
        self._fresh = True

    # -- model parameters ------------------------------------------------------------------

    def model_field(self, name: str) -> torch.Tensor:
        if name not in self._fields:
            if not hasattr(self._m, name):
                raise ConfigError(f"MuJoCo Warp's model has no field {name!r}")
            for field in (name, *_DERIVED.get(name, ())):
                self._batch_field(field)
            if name in _DERIVED:
                g = self._mjw.SetConstGroup
                self._setconst_groups |= int(g.INERT0) | (int(g.FIXED) if name == "body_mass"
                                                           else 0)
            self._fields[name] = self._wp.to_torch(getattr(self._m, name))
        return self._fields[name]

    def _batch_field(self, name: str) -> None:
        """Give a model field one row per world (a copy of the nominal row)."""
        wp = self._wp
        arr = getattr(self._m, name)
        if arr.shape[0] == self.num_envs:
            return
        if arr.shape[0] != 1:
            raise ConfigError(f"model field {name!r} is batched {arr.shape[0]} ways already")
        with wp.ScopedDevice(self._wp_device):
            nominal = wp.to_torch(arr)
            batched = wp.empty((self.num_envs, *arr.shape[1:]), dtype=arr.dtype)
            wp.to_torch(batched).copy_(nominal.expand(self.num_envs, *nominal.shape[1:]))
        setattr(self._m, name, batched)
        self._graphs.clear()  # graphs hold the old arrays' addresses

    def commit_model(self, env_ids: torch.Tensor) -> None:
        if not self._setconst_groups:
            return
        groups = self._setconst_groups
        # set_const recomputes every world (one launch serves all; the others' inputs did
        # not change) and restores the state-dependent stages it used.
        self._run(("set_const",), lambda: self._mjw.set_const(self._m, self._d, groups))
        self._fresh = False

    # -- cameras (MuJoCo Warp's batch ray tracer; see sim/cameras.py) ------------------------

    def render_context(self, cameras: tuple[str, ...], height: int, width: int,
                       depth: bool) -> Any:
        """A render context of ``cameras`` for every world (RGB, and depth if asked)."""
        with self._wp.ScopedDevice(self._wp_device):
            return self._mjw.create_render_context(
                self.model, nworld=self.num_envs, cam_res=(width, height), render_rgb=True,
                render_depth=depth, cam_active=list(cameras), use_shadows=False,
                render_skybox=False, enabled_geom_groups=[0, 1])  # no goal markers

    def render(self, rc: Any, ncam: int, depth: bool
               ) -> list[tuple[torch.Tensor, torch.Tensor | None]]:
        """Render every world's cameras at the current state: per camera, RGB (E, 3, H, W)
        uint8 and depth (E, 1, H, W) float32 [m] along the camera axis (or None)."""
        wp, mjw = self._wp, self._mjw
        if not self._fresh:  # kinematics (geoms, cameras) at the current state
            self.forward(torch.arange(self.num_envs, device=self.device))
        out = []
        with wp.ScopedDevice(self._wp_device):
            mjw.refit_bvh(self._m, self._d, rc)
            mjw.render(self._m, self._d, rc)
            res = rc.cam_res.numpy()
            for k in range(ncam):
                w, h = int(res[k][0]), int(res[k][1])
                rgb = wp.empty((self.num_envs, h, w), dtype=wp.vec3)
                mjw.get_rgb(rc, k, rgb)
                img = (wp.to_torch(rgb) * 255.0 + 0.5).clamp(0, 255).to(torch.uint8)
                z = None
                if depth:
                    far = float(self.model.vis.map.zfar * self.model.stat.extent)
                    dz = wp.empty((self.num_envs, h, w), dtype=float)
                    mjw.get_depth(rc, k, far, dz)  # scaled to [0, 1] by far, then back
                    z = (wp.to_torch(dz) * far)[:, None]
                out.append((img.permute(0, 3, 1, 2).contiguous(), z))
        return out

    # -- reading state back ------------------------------------------------------------------

    def write_data(self, env: int, data: mujoco.MjData) -> None:
        d = self._d
        data.qpos[:] = self.qpos[env].cpu().numpy()
        data.qvel[:] = self.qvel[env].cpu().numpy()
        data.ctrl[:] = self.ctrl[env].cpu().numpy()
        data.time = float(self.time[env])
        if self.model.nmocap:
            data.mocap_pos[:] = self.mocap_pos[env].cpu().numpy()
            data.mocap_quat[:] = self._wp.to_torch(d.mocap_quat)[env].cpu().numpy()
        if self.model.na:
            data.act[:] = self._wp.to_torch(d.act)[env].cpu().numpy()
        mujoco.mj_forward(self.model, data)

    def memory_bytes(self) -> int:
        """Bytes of the device arrays of the model and the data (all worlds)."""
        return _array_bytes(self._m, self._wp) + _array_bytes(self._d, self._wp)


@functools.cache
def _kernels() -> tuple[Any, Any, int]:
    """The column-copy kernels and the overflow bits that mean "out of room" (loaded on
    first use, after ``import_warp`` has set Warp up)."""
    _, mjw = import_warp()
    from robot_rl.sim.backends import warp_kernels

    over = mjw.OverflowType
    capacity = int(over.ALL) & ~int(over.ITERATIONS) & ~int(over.LS_ITERATIONS)
    return warp_kernels.gather_cols, warp_kernels.scatter_cols, capacity


def _array_bytes(obj: object, wp: Any) -> int:
    """Bytes of the Warp arrays of a MuJoCo Warp Model or Data, nested structs included."""
    total = 0
    for f in dataclasses.fields(obj):  # type: ignore[arg-type]
        value = getattr(obj, f.name, None)
        if isinstance(value, wp.array):
            total += value.capacity
        elif dataclasses.is_dataclass(value):
            total += _array_bytes(value, wp)
    return total
