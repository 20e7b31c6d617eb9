"""Camera frame age: the images a pixel policy acts on are older than the state, as a real
camera's are (it captures at its own frame rate and delivers each frame after a latency).

    ages = FrameAge(num_envs=E, control_dt=0.02, frame_rate=30.0, max_latency=0.05)
    shown = ages.reset(images)              # at reset: every env sees its newest frame
    shown = ages.step(images)               # each step: {key: (E, C, H, W)}, aged per env
    shown = ages.restart(ids, first)        # envs ``ids`` began a new episode: ``first``

Each env's camera captures every ``1 / frame_rate`` seconds from a random phase and delivers
each capture ``latency`` seconds later, both drawn per episode (latency uniform in
[0, ``max_latency``]); at each control step the env shows its newest delivered capture. The
simulator has the state only at control steps, so a capture shows the rendered frame of the
step nearest its time. Frames never run backwards and are never older than the env's episode
(before its first delivery, an env shows its episode's first frame). ``frame_rate`` 0 is a
capture at every control step. A 30 fps stream with 30 ms of latency under a 50 Hz policy
shows captures 1.5-3.2 steps (30-63 ms) old, i.e. the frames of 1-3 steps before.

The ring holds the last ``max_steps + 1`` rendered frames per env: (K, E, C, H, W) per key.
"""

from __future__ import annotations

import math

import torch

from robot_rl.errors import ConfigError


class FrameAge:
    """Per-env camera timing over a ring of the last rendered frames (module docstring)."""

    def __init__(self, num_envs: int, control_dt: float, frame_rate: float,
                 max_latency: float, seed: int = 0, device: str | torch.device = "cpu"):
        if frame_rate < 0 or max_latency < 0 or control_dt <= 0:
            raise ConfigError(f"frame age needs frame_rate >= 0, max_latency >= 0 and "
                              f"control_dt > 0; got {frame_rate}, {max_latency}, {control_dt}")
        self.num_envs, self.rate = num_envs, frame_rate
        self.period = 1.0 if frame_rate == 0 else 1.0 / (frame_rate * control_dt)
        """Steps between captures."""
        self.max_latency = max_latency / control_dt
        """Steps [0, this] of each env's delivery latency."""
        self.max_steps = math.ceil(self.max_latency + self.period) + 1
        """The oldest frame shown [control steps]."""
        self.gen = torch.Generator().manual_seed(seed)
        self.device = dev = torch.device(device)
        self._ring: dict[str, torch.Tensor] = {}
        """Key -> (K, E, C, H, W), slot ``t % K`` holding the frame rendered at step t."""
        self._t = 0
        """Steps pushed since ``reset`` (the newest frame's index)."""
        self._start = torch.zeros(num_envs, dtype=torch.long, device=dev)
        """(E,) index of each env's episode's first frame."""
        self._latency = torch.zeros(num_envs, device=dev)
        self._phase = torch.zeros(num_envs, device=dev)
        """(E,) steps: each env's latency, and its first capture's time after its start."""
        self._shown = torch.zeros(num_envs, dtype=torch.long, device=dev)
        """(E,) index of the frame each env shows."""
        self._envs = torch.arange(num_envs, device=dev)

    @property
    def ages(self) -> torch.Tensor:
        """(E,) the shown frames' ages [control steps]."""
        return self._t - self._shown

    def reset(self, images: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Every env starts an episode with ``images`` (age 0); returns them."""
        K = self.max_steps + 1
        self._ring = {k: v.unsqueeze(0).repeat(K, *([1] * v.dim())) for k, v in images.items()}
        self._t = 0
        self._begin(self._envs)
        return images

    def step(self, images: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Push this step's rendered ``images`` ({key: (E, C, H, W)}); returns the frames the
        envs see, each as old as its camera's timing makes it."""
        if not self._ring:  # stepped before any reset: these are the first frames
            return self.reset(images)
        self._t += 1
        K = self.max_steps + 1
        for k, v in images.items():
            self._ring[k][self._t % K] = v
        tau = (self._t - self._start).to(self._phase.dtype)
        captures = torch.floor((tau - self._latency - self._phase) / self.period)
        at = torch.round(self._phase + captures * self.period).long()
        shown = self._start + torch.where(captures >= 0, at, 0)
        self._shown = shown.clamp(min=self._t - self.max_steps)
        return self._gather()

    def restart(self, env_ids: torch.Tensor, first: dict[str, torch.Tensor]
                ) -> dict[str, torch.Tensor]:
        """Envs ``env_ids`` begin an episode whose first frames are ``first`` ({key: (n, C,
        H, W)}), replacing this step's frame; returns every env's shown frames."""
        K = self.max_steps + 1
        for k, v in first.items():
            self._ring[k][self._t % K, env_ids] = v
        self._begin(env_ids)
        return self._gather()

    def _begin(self, env_ids: torch.Tensor) -> None:
        """New episodes of ``env_ids`` at step ``_t``: new latency and capture phase."""
        n = len(env_ids)
        u = torch.rand((2, n), generator=self.gen).to(self.device)
        self._latency[env_ids] = u[0] * self.max_latency
        self._phase[env_ids] = u[1] * self.period if self.rate > 0 else 0.0
        self._start[env_ids] = self._t
        self._shown[env_ids] = self._t

    def _gather(self) -> dict[str, torch.Tensor]:
        slot = self._shown % (self.max_steps + 1)
        return {k: ring[slot, self._envs] for k, ring in self._ring.items()}
