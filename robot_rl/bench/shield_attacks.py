"""Attacks on the safety shield, judged by MuJoCo's own state (never the shield's flags).

Each attack is a policy that tries to push the arm past its limits through the task's action
space, controller and shield; ``run_attack`` steps a batch of envs with it and reports the
worst hard-limit excess and speed over the run, read from ``qpos``/``qvel`` at the joints'
addresses in the model:

    drift      every action component ramps from 0 to a random +-1 over ~2 s and stays
               saturated: the arm is driven slowly into its limits and held against them
    pump       the action follows the sign of the arm's own velocity (joint velocities for
               joint spaces, end-effector velocity for pose spaces): energy pumped in at the
               arm's own rhythm
    contact    the end effector is driven down onto the table, then every component flips
               between -1 and +1 every control step
    nan_hold   uniform random actions with bursts of NaN/inf held for several steps
    saturate   random +-1 per component, held for 5-40 steps (bang-bang between limits)

    python benchmarks/shield_attacks.py            # the table over tasks x action spaces
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch

from robot_rl.controllers import (
    ActionConfig,
    ControllerConfig,
    EEDeltaConfig,
    EEPoseConfig,
    JointDeltaConfig,
    JointVelocityConfig,
    MotionConfig,
    OSCConfig,
)
from robot_rl.sim import make_env, make_task_config
from robot_rl.sim.env import BatchedEnv
from robot_rl.sim.tasks.config import decimation_for

ATTACKS = ("drift", "pump", "contact", "nan_hold", "saturate")


def target_spaces(gripper: bool) -> dict[str, ActionConfig]:
    """The target-based action spaces (torque actions have no targets to shield), with their
    default controllers (joint PD; differential IK on the joint PD for pose targets)."""
    return {"joint_delta": JointDeltaConfig(gripper=gripper),
            "joint_velocity": JointVelocityConfig(gripper=gripper),
            "ee_delta": EEDeltaConfig(gripper=gripper),
            "ee_pose": EEPoseConfig(gripper=gripper)}


OSC_SPACES = ("ee_delta", "ee_pose")
"""Pose spaces also attacked with the operational-space (torque) controller."""


@dataclasses.dataclass
class AttackResult:
    """The worst state an attack reached (over all envs, joints and control steps)."""

    q_excess: float
    """Largest distance of a joint beyond its hard limit [rad] (0: never beyond)."""
    speed_ratio: float
    """Largest |qd| / qd_max of any joint."""
    worst_joint: str
    """The joint of ``q_excess`` (or of the speed ratio when no joint passed a limit)."""
    ee_excess: float
    """Largest distance of the end effector outside the task's workspace box [m]."""
    diverged: int
    """Physics divergences the env's guard caught."""
    steps: int
    """Control steps run (per env)."""


class _State:
    """The arm's joint state read through the model's addresses (the independent check)."""

    def __init__(self, env: BatchedEnv):
        m, r = env.model, env.robot
        self.backend = env.backend
        self.qadr = [int(m.joint(n).qposadr[0]) for n in r.joint_names]
        self.vadr = [int(m.joint(n).dofadr[0]) for n in r.joint_names]
        f64 = torch.float64
        self.q_lo = torch.tensor(r.q_min, dtype=f64)
        self.q_hi = torch.tensor(r.q_max, dtype=f64)
        self.qd_max = torch.tensor(r.qd_max, dtype=f64)
        s = m.sensor("ee_pos")
        self.ee = slice(int(s.adr[0]), int(s.adr[0]) + 3)
        self.ws_lo = torch.tensor(env.cfg.safety.workspace_lo, dtype=f64)
        self.ws_hi = torch.tensor(env.cfg.safety.workspace_hi, dtype=f64)

    def q(self) -> torch.Tensor:
        return self.backend.qpos[:, self.qadr].to(torch.float64)

    def qd(self) -> torch.Tensor:
        return self.backend.qvel[:, self.vadr].to(torch.float64)

    def ee_outside(self) -> torch.Tensor:
        """(E,) distance of the end effector outside the workspace box [m]."""
        ee = self.backend.sensordata[:, self.ee].to(torch.float64)
        return torch.maximum(ee - self.ws_hi, self.ws_lo - ee).clamp_min(0.0).amax(1)


def _policy(name: str, env: BatchedEnv, gen: torch.Generator
            ) -> Callable[[int], torch.Tensor]:
    E, A = env.num_envs, env.act_dim
    s = env.state
    kind = env.pipeline.action_space.kind
    arm_dim = env.pipeline.action_space.arm_dim
    ramp = max(1, round(2.0 / env.control_dt))
    direction = torch.sign(torch.rand(E, A, generator=gen) - 0.5)
    hold = torch.zeros(E, A)
    until = torch.zeros(E, dtype=torch.long)

    def drift(k: int) -> torch.Tensor:
        return direction * min(1.0, k / ramp)

    def pump(k: int) -> torch.Tensor:
        a = direction.clone()
        if kind == "joint":
            v = s.joint_vel.float()
            a[:, :arm_dim] = torch.where(v.abs() > 1e-3, torch.sign(v), direction[:, :arm_dim])
        else:
            v = s.arm_state().ee_vel.float()
            a[:, :3] = torch.where(v.abs() > 1e-3, torch.sign(v), direction[:, :3])
        return a

    def contact(k: int) -> torch.Tensor:
        if k < ramp:  # press down (pose spaces: -z; joint spaces: shoulder and elbow down)
            a = torch.zeros(E, A)
            if kind == "joint":
                a[:, 1], a[:, 3] = 1.0, 1.0
            else:
                a[:, 2] = -1.0
            return a
        return direction * (1.0 if k % 2 else -1.0)

    def nan_hold(k: int) -> torch.Tensor:
        a = torch.rand(E, A, generator=gen) * 2 - 1
        burst = (k // 7) % 3 == 2  # 7 steps of junk after every 14 good ones
        if burst:
            junk = torch.where(direction > 0, float("nan"), float("inf"))
            a = torch.where(torch.rand(E, A, generator=gen) < 0.5, junk * direction, a)
        return a

    def saturate(k: int) -> torch.Tensor:
        new = until <= k
        if bool(new.any()):
            draw = torch.sign(torch.rand(E, A, generator=gen) - 0.5)
            hold[new] = draw[new]
            until[new] = k + torch.randint(5, 41, (E,), generator=gen)[new]
        return hold.clone()

    return {"drift": drift, "pump": pump, "contact": contact, "nan_hold": nan_hold,
            "saturate": saturate}[name]


def run_attack(task: str, action: ActionConfig, attack: str, *, num_envs: int = 32,
               steps: int = 600, seed: int = 12345, controller: ControllerConfig | None = None,
               motion: bool = False, ramp: bool = False, control_hz: float | None = None,
               on_step: Callable[[int, torch.Tensor, torch.Tensor], None] | None = None
               ) -> AttackResult:
    """Step ``num_envs`` envs of ``task`` for ``steps`` control steps under ``attack``; the
    episodes run the whole time (no truncation). ``motion``: the motion profile of joint
    targets on, in front of the shield; ``ramp``: joint commands ramped over each step;
    ``control_hz``: another control rate than the task's. ``on_step(k, q, qd)`` sees the
    joint state after every step."""
    extra: dict[str, Any] = {} if control_hz is None else {
        "decimation": decimation_for(control_hz, make_task_config(task).physics_dt)}
    env = make_env(task, num_envs, seed=seed, action=action, controller=controller,
                   motion=MotionConfig(enabled=motion, ramp=ramp), episode_length=steps + 1,
                   **extra)
    env.reset(seed=seed)
    gen = torch.Generator().manual_seed(seed)
    policy = _policy(attack, env, gen)
    st = _State(env)
    q_excess = torch.zeros(len(st.qadr), dtype=torch.float64)
    speed = torch.zeros(len(st.qadr), dtype=torch.float64)
    ee_out = 0.0
    for k in range(steps):
        env.step(policy(k))
        q, qd = st.q(), st.qd()
        if on_step is not None:
            on_step(k, q, qd)
        beyond = torch.maximum(q - st.q_hi, st.q_lo - q).clamp_min(0.0)
        q_excess = torch.maximum(q_excess, beyond.amax(0))
        speed = torch.maximum(speed, (qd.abs() / st.qd_max).amax(0))
        ee_out = max(ee_out, float(st.ee_outside().max()))
        if not bool(torch.isfinite(q).all() & torch.isfinite(qd).all()):
            raise FloatingPointError(f"non-finite joint state at step {k} ({task}, {attack})")
    names = env.robot.joint_names
    j = int(q_excess.argmax()) if float(q_excess.max()) > 0 else int(speed.argmax())
    return AttackResult(q_excess=float(q_excess.max()), speed_ratio=float(speed.max()),
                        worst_joint=names[j], ee_excess=ee_out,
                        diverged=int(env.diverged_count.sum()), steps=steps)


def cases(tasks: tuple[str, ...], osc: bool = True) -> list[tuple[str, str, ActionConfig]]:
    """(task, space name, action config) of every task and target-based action space."""
    out = []
    for task in tasks:
        gripper = bool(getattr(make_task_config(task).action, "gripper", False))
        out += [(task, name, a) for name, a in target_spaces(gripper).items()]
        if osc:
            out += [(task, f"{name}+osc", target_spaces(gripper)[name]) for name in OSC_SPACES]
    return out


def main() -> None:
    import argparse
    import time

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", nargs="+", default=["reach", "push", "lift"])
    p.add_argument("--num-envs", type=int, default=32)
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--attacks", nargs="+", default=list(ATTACKS), choices=ATTACKS)
    p.add_argument("--no-osc", action="store_true", help="skip the OSC (torque) rows")
    p.add_argument("--motion", action="store_true",
                   help="the motion profile of joint targets on (--env.motion.enabled)")
    p.add_argument("--ramp", action="store_true",
                   help="joint commands ramped over each control step (--env.motion.ramp; "
                        "joint targets only: the OSC rows are skipped)")
    p.add_argument("--control-hz", type=float, default=None,
                   help="the control rate (default: each task's own, 50 Hz)")
    args = p.parse_args()
    print(f"{'task':6s} {'space':15s} {'attack':9s} {'q beyond hard [mrad]':>20s} "
          f"{'max |qd|/qd_max':>15s} {'joint':>7s} {'ee outside [mm]':>15s} "
          f"{'diverged':>8s}", flush=True)
    worst_q, worst_v = 0.0, 0.0
    t0 = time.perf_counter()
    for task, space, action in cases(tuple(args.tasks), osc=not (args.no_osc or args.ramp)):
        for attack in args.attacks:
            ctl = OSCConfig() if space.endswith("+osc") else None
            r = run_attack(task, action, attack, num_envs=args.num_envs, steps=args.steps,
                           seed=args.seed, controller=ctl, motion=args.motion,
                           ramp=args.ramp, control_hz=args.control_hz)
            worst_q, worst_v = max(worst_q, r.q_excess), max(worst_v, r.speed_ratio)
            print(f"{task:6s} {space:15s} {attack:9s} {r.q_excess * 1e3:20.3f} "
                  f"{r.speed_ratio:15.3f} {r.worst_joint:>7s} {r.ee_excess * 1e3:15.2f} "
                  f"{r.diverged:8d}", flush=True)
    print(f"worst: {worst_q * 1e3:.3f} mrad beyond a hard limit, {worst_v:.3f} of a speed "
          f"limit ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
