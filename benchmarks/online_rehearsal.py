"""Rehearse robot fine-tuning in the batched simulator, faster than real time.

    python benchmarks/online_rehearsal.py --init runs/bench/reach_init      # about 5 minutes
    python benchmarks/online_rehearsal.py --init RUN --sim.kd 20 40 ... --transitions 12500
    python benchmarks/online_rehearsal.py --init runs/bench/reach_osc95 --sim.interface effort \
        --sim.frictionloss 0.85 --sim.kp None --sim.mass-scale 1 --prior-ratio 0   # OSC policy

``benchmarks/online.py --part robot`` fine-tunes on the simulated arm in real time: 15
minutes of robot time per run. This runs the same learner (``RobotFinetuneRunner``: the
init run's networks, prior data, critics-only warm-up, anchor, update-to-data ratio) on one
env of the batched simulator made to match the held-out arm (``held_out_env``), so one run
of ``--transitions`` robot-like transitions takes minutes, and it evaluates the policy's mean
every ``--eval-every`` transitions on 32 envs of the same held-out dynamics. It also reports
the init policy's zero-shot success on the held-out env at longer episode lengths, and the
share of its episodes whose joint travel the held-out arm cannot cover within the time limit
even at full speed (``travel_time``, joint_delta policies), and of their goal poses the arm
cannot even hold against gravity within its actuators' torque limits (``holding_torque``):
whether the arm is too slow or too weak for the task, which no fine-tuning fixes.
``--transitions 0`` stops after these.

A torque controller (OSC) in the batched copy gets the nominal arm's mass matrix and gravity,
as the deploy runtime computes them from the nominal model; the physics is the held-out arm's.
The match is close, not exact: the batched env applies the action once per control step as
the deploy runtime does, but draws its delay per episode in whole control steps (0 or 1 for
15 ms at 50 Hz) and runs the task's shield in its batched form. On the default held-out arm
the init policy's zero-shot success was 67% here and 60-70% on the real-time arm.
"""

from __future__ import annotations

import dataclasses
import math
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
import tyro
from rich.console import Console
from rich.table import Table

from robot_rl.algos import SAC
from robot_rl.cluster.collector import PoolCollector
from robot_rl.cluster.env_runner import EnvRunner, runner_seed
from robot_rl.cluster.rollout import Rollout
from robot_rl.controllers import JointDeltaConfig
from robot_rl.controllers.arm_model import ArmModel
from robot_rl.evaluate import EvalResult, evaluate
from robot_rl.finetune.robot.configs import RobotFinetuneConfig, robot_sac
from robot_rl.finetune.robot.learner import RobotFinetuneRunner, resolve_init
from robot_rl.hardware.configs import SimRobotConfig
from robot_rl.hardware.sim_robot import build_model
from robot_rl.robots import get_robot
from robot_rl.runner import load_agent
from robot_rl.sim import make_env
from robot_rl.sim.configs import DRConfig
from robot_rl.sim.env import BatchedEnv
from robot_rl.sim.tasks.config import TaskConfig
from robot_rl.sim.vec_env import VecEnv
from robot_rl.train_config import TrainConfig


@dataclasses.dataclass
class Args:
    init: Path
    """The sim-trained reach run to start from (as for ``online.py --part robot``)."""
    sim: SimRobotConfig = dataclasses.field(default_factory=lambda: SimRobotConfig(
        mass_scale=1.8, kp=tuple(0.3 * k for k in get_robot("arm7").kp),
        actuation_delay=0.015))
    """The held-out arm (``online.py``'s default)."""
    transitions: int = 12_500
    """Robot-like transitions (one env) to fine-tune on."""
    eval_every: int = 2_500
    """Transitions between evaluations."""
    eval_episodes: int = 64
    updates_per_step: int = 1
    prior_ratio: float = 0.3
    actor_warmup: int = 3000
    alpha_lr: float = 0.0
    anchor: float = 0.0
    awac: float = 0.0
    gate: bool = False
    """Evaluate through the safety critic's gate, as the robot's runtime acts."""
    lengths: tuple[int, ...] = (100, 150, 300)
    """Episode lengths of the zero-shot check (the task's own first)."""


def held_out_env(task: TaskConfig, num_envs: int, sim: SimRobotConfig, seed: int = 0,
                 exact_delay: bool = False, **overrides: Any) -> BatchedEnv:
    """A batched env of ``task`` with ``sim``'s held-out dynamics: link masses, servo
    stiffness and damping (per joint), joint damping and dry friction set in every env's
    model, the actuation delay as up to ``round(delay / control_dt)`` control steps
    (``exact_delay``: that many in every env)."""
    robot = get_robot(sim.robot)
    delay = sim.actuation_delay
    dr = DRConfig(link_mass=(sim.mass_scale, sim.mass_scale),
                  action_delay=(delay if exact_delay else 0.0, delay))
    env = make_env(dataclasses.replace(task, dr=dr, **overrides), num_envs, seed=seed)
    be, model = env.backend, env.backend.model
    acts = [model.actuator(n).id for n in robot.actuator_names]
    dofs = [int(model.joint(n).dofadr[0]) for n in robot.joint_names]
    if sim.kp is not None or sim.kd is not None:
        gain, bias = be.model_field("actuator_gainprm"), be.model_field("actuator_biasprm")
        kp, kd = (torch.as_tensor(g, dtype=gain.dtype) for g in sim.servo_gains(robot))
        gain[:, acts, 0] = kp
        bias[:, acts, 1], bias[:, acts, 2] = -kp, -kd
    friction = sim.joint_friction(robot)
    if friction.any():
        field = be.model_field("dof_frictionloss")
        field[:, dofs] += torch.as_tensor(friction, dtype=field.dtype)
    if sim.damping_scale != 1.0:
        be.model_field("dof_damping")[:, dofs] *= sim.damping_scale
    be.commit_model(torch.arange(num_envs))
    if sim.mass_scale != 1.0:
        _nominal_controller_model(env, sim.mass_scale)
    return env


def _nominal_controller_model(env: BatchedEnv, mass_scale: float) -> None:
    """Give ``env``'s torque controller the nominal arm's mass matrix and gravity, as the
    deploy runtime's controller computes them from the nominal model (``ArmModel``) on an
    arm whose links are ``mass_scale`` heavier: M_nominal = (M - A) / mass_scale + A, with A
    the joints' armature (not scaled). The physics and its actuators' gravity compensation
    stay the held-out arm's own."""
    state = env.state
    dofs = torch.as_tensor(state.joint_dofs)
    armature = torch.diag_embed(torch.as_tensor(
        env.backend.model.dof_armature[dofs.numpy()], dtype=state.dtype))
    true_arm_state = state.arm_state

    def arm_state(mass: bool = False, numpy: bool = False) -> Any:
        arm = true_arm_state(mass, numpy)
        a = armature.numpy() if isinstance(arm.mass, np.ndarray) else armature
        return dataclasses.replace(
            arm, mass=None if arm.mass is None else (arm.mass - a) / mass_scale + a,
            gravity=None if arm.gravity is None else arm.gravity / mass_scale)

    state.arm_state = arm_state  # type: ignore[method-assign]


def _mean_action(agent: Any, gate: bool = False) -> Any:
    """The policy's mean: what the robot's evaluation blocks run; with ``gate``, screened by
    the safety critic as the robot's runtime screens it (the policy's own action while its
    estimated cost is under the threshold, else another candidate or a hold)."""
    def act(obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        with torch.no_grad():
            x = agent.normalize(obs.to(agent.device))
            dist = agent.gaussian_actor(x)
            first = torch.tanh(dist[0])
            if not gate or agent.cost_critic is None:
                return first, None
            step = agent.gate_decision(first, dist, x, by_value=False)
            return step.action, step.hold
    return act


class _Rehearsal(RobotFinetuneRunner):
    """The robot learner, evaluating the policy's mean and noting its update count then."""

    def __init__(self, cfg: RobotFinetuneConfig, eval_env: VecEnv, gate: bool = False):
        self.updates_at_eval: list[int] = []
        self.gate = gate
        super().__init__(cfg, Console(quiet=True), eval_env=eval_env)

    def evaluate_policy(self, env: VecEnv, episodes: int, seed: int) -> EvalResult:
        result = evaluate(_mean_action(self.agent, self.gate), env, episodes, seed=seed)
        self.updates_at_eval.append(self.agent.updates)
        return result


class _ReplicaPool:
    """One env-runner stepping the held-out env in this process (the learner's pool)."""

    size = 1

    def __init__(self, cfg: RobotFinetuneConfig, sim: SimRobotConfig):
        self.runner = EnvRunner(cfg, env=held_out_env(cfg.env, 1, sim,
                                                      seed=runner_seed(cfg, 0)))
        self.pending: list[tuple[int, bool]] = []

    def publish(self, state: dict, version: int) -> None:
        self.runner.set_weights(state, version)

    def submit(self, index: int, steps: int, uniform: bool) -> None:
        self.pending.append((steps, uniform))

    def next(self) -> Rollout:
        steps, uniform = self.pending.pop(0)
        return self.runner.collect(steps, uniform)

    def cancel(self) -> None:
        self.pending.clear()


def zero_shot(args: Args, agent: SAC, cfg: TrainConfig) -> dict[int, float]:
    """The init policy (``agent``, its run's ``cfg``) on the held-out env: its success at
    each of ``args.lengths``."""
    return {n: evaluate(_mean_action(agent), held_out_env(cfg.env, 32, args.sim, seed=2,
                                                          episode_length=n),
                        args.eval_episodes, seed=cfg.seed + 10_000).success_rate
            for n in args.lengths}


def goal_configurations(agent: SAC, cfg: TrainConfig, episodes: int = 256
                        ) -> tuple[torch.Tensor, torch.Tensor]:
    """(start, goal), each (N, n): the joint positions at the start and at the first success
    of the init policy's episodes on the nominal arm that succeed within three times the
    task's episode length (``agent`` and its run's ``cfg``)."""
    env = make_env(dataclasses.replace(cfg.env, episode_length=3 * cfg.env.episode_length),
                   episodes, dr="off", seed=5)
    obs = env.reset(seed=5)
    start = env.state.joint_pos.clone()
    at_goal = torch.full_like(start, math.nan)
    for _ in range(env.cfg.episode_length):
        obs = env.step(agent.act(obs, deterministic=True, gate=False).action)[0]
        new = env.task.success(env.state, env.cfg) & at_goal[:, 0].isnan()
        at_goal[new] = env.state.joint_pos[new]
    reached = ~at_goal[:, 0].isnan()
    return start[reached], at_goal[reached]


def goal_statics(sim: SimRobotConfig, cfg: TrainConfig, goal: torch.Tensor
                 ) -> tuple[torch.Tensor, np.ndarray]:
    """(levers, gravity), each (N, n), at the goal configurations (``goal_configurations``)
    of the held-out arm standing still (its own model, ``build_model``, through
    ``ArmModel``): the end effector's speed per unit joint speed (the norm of the position
    Jacobian's column) [m/rad], and the gravity torque its servos compensate [Nm]."""
    robot = get_robot(sim.robot)
    arm = ArmModel(build_model(sim, robot, scene=cfg.env), robot)
    still = np.zeros(arm.n)
    states = [arm.state(q, still) for q in goal.double().numpy()]
    levers = np.stack([np.linalg.norm(st.jac[0, :3], axis=0) for st in states])
    gravity = np.stack([np.asarray(st.gravity)[0] for st in states])
    return torch.as_tensor(levers, dtype=goal.dtype), gravity


def travel_time(args: Args, cfg: TrainConfig, start: torch.Tensor, goal: torch.Tensor,
                levers: torch.Tensor) -> tuple[float, float]:
    """(share of episodes, median seconds): the episodes (``goal_configurations``) whose
    joint travel the held-out arm could not cover within the task's time limit even at its
    steady speed under a saturated joint_delta command, (kp * scale - friction) / kd per
    joint (the servo's torque at full command, within the actuator's limit, less the joint's
    added dry friction, over its damping; no acceleration or delay counted, and gravity taken
    as compensated, as the servos do), and the median of that least time. A joint whose
    friction the full command cannot overcome never moves. Only joints whose travel moves the
    end effector by at least the task's success radius count (``levers``, from
    ``goal_statics``, times the travel): the others need not finish. Other arm
    configurations at the goal are not searched."""
    robot = get_robot(args.sim.robot)
    kp, kd = args.sim.servo_gains(robot)
    scale = cfg.env.action.scale  # type: ignore[union-attr]  # joint_delta (checked)
    torque = np.minimum(kp * scale, robot.tau_max) - args.sim.joint_friction(robot)
    speed = torch.as_tensor(np.clip(torque, 0.0, None) / kd, dtype=start.dtype)
    travel = (goal - start).abs()
    moves_ee = travel * levers >= getattr(cfg.env, "success_radius", 0.0)
    least = (travel / speed).nan_to_num(0.0, posinf=math.inf).where(moves_ee, 0.0)
    least = least.max(1).values
    limit = cfg.env.episode_length * cfg.env.control_dt
    return float((least > limit).float().mean()), float(least.median())


def holding_torque(sim: SimRobotConfig, gravity: np.ndarray) -> tuple[float, float]:
    """(share of episodes, largest ratio): the goal configurations whose ``gravity`` (from
    ``goal_statics``) at some joint needs more torque than the joint's actuator has (the
    arm's servos compensate gravity within their torque limit, so beyond it the arm sags
    whatever the policy commands); and the largest ratio of the two over all goals and
    joints."""
    r = np.abs(gravity) / np.asarray(get_robot(sim.robot).tau_max)
    return float((r > 1.0).any(1).mean()), float(r.max())


def _cfg(args: Args, tmp: Path) -> RobotFinetuneConfig:
    sac = dataclasses.replace(robot_sac(), updates_per_step=args.updates_per_step,
                              learning_starts=200, alpha_lr=args.alpha_lr)
    return RobotFinetuneConfig(
        init=args.init, runs_dir=tmp, run_name="rehearsal", progress=False,
        total_steps=args.transitions, eval_every=args.eval_every,
        eval_episodes=args.eval_episodes, checkpoint_every=10**9, save_replay=False, sac=sac,
        ray=None, prior_ratio=args.prior_ratio, actor_warmup=args.actor_warmup,
        anchor=args.anchor, awac=args.awac)


def main() -> None:
    args = tyro.cli(Args)
    console = Console(width=max(Console().width, 110))
    tmp = Path(tempfile.mkdtemp(prefix="online_rehearsal_"))
    try:
        cfg = resolve_init(_cfg(args, tmp))
        agent, init_cfg, _ = load_agent(cfg.init)
        shots = zero_shot(args, agent, init_cfg)
        console.print("init policy on the held-out env, zero-shot: " + ", ".join(
            f"{s:.0%} in {n} steps" for n, s in shots.items()), highlight=False)
        start, goal = goal_configurations(agent, init_cfg)
        levers, gravity = goal_statics(args.sim, init_cfg, goal)
        if isinstance(init_cfg.env.action, JointDeltaConfig):
            share, median = travel_time(args, init_cfg, start, goal, levers)
            console.print(f"its episodes on the nominal arm whose joint travel the held-out "
                          f"arm cannot cover within the time limit at full speed: {share:.0%} "
                          f"(least time: median {median:.2f} s)", highlight=False)
        else:
            console.print(f"(the travel check is defined for joint_delta actions, not "
                          f"{init_cfg.env.action.type})", highlight=False)
        share, worst = holding_torque(args.sim, gravity)
        console.print(f"their goal poses where the held-out arm's gravity needs more torque "
                      f"than its actuators have: {share:.0%} (the largest need: {worst:.2f}x "
                      f"the limit)", highlight=False)
        if args.transitions <= 0:
            return
        runner = _Rehearsal(cfg, eval_env=held_out_env(cfg.env, 32, args.sim, seed=2),
                            gate=args.gate)
        t0 = time.perf_counter()
        history = runner.train(PoolCollector(runner, _ReplicaPool(cfg, args.sim),
                                             hooks=runner))
        wall = time.perf_counter() - t0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    t = Table(title=f"fine-tuning rehearsal on the batched held-out env (prior "
                    f"{args.prior_ratio:g}, actor warm-up {args.actor_warmup}, UTD "
                    f"{args.updates_per_step}, anchor {args.anchor:g}, awac {args.awac:g}); "
                    f"{wall:.0f} s")
    for c in ("robot-like transitions", "updates", "success (mean action)"):
        t.add_column(c, justify="right")
    start = runner.updates_at_eval[0] if runner.updates_at_eval else 0
    for h, u in zip(history, runner.updates_at_eval, strict=False):
        t.add_row(f"{int(h['env_steps']):,}", f"{u - start:,}", f"{h['success_rate']:.0%}")
    console.print(t)


if __name__ == "__main__":
    main()
