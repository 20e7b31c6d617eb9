"""``robot-rl sim info`` and ``robot-rl sim rollout``."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any, Literal

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from robot_rl.errors import ConfigError
from robot_rl.sim.configs import DRPreset, ExpertStyle
from robot_rl.video import VIDEO_SIZE


@dataclasses.dataclass(kw_only=True)
class SimInfoConfig:
    """Show the robots, the tasks (observation/action sizes, rates, terms) and versions.

    Example: robot-rl sim info --robot arm7
    """

    robot: str = "arm7"
    """Robot whose joints and limits are listed."""
    tasks: bool = True
    """Build each task once (one env) to report its sizes and terms."""


@dataclasses.dataclass(kw_only=True)
class SimRolloutConfig:
    """Run a policy in the batched simulation; report success, return and safety cost.

    Example: robot-rl sim rollout --task push --policy expert --num-envs 4 --video push.mp4
    """

    task: str = "push"
    """Task name (robot-rl sim info lists them)."""
    robot: str | None = None
    """The arm (robot-rl sim info lists them; default: the task's own, arm7)."""
    policy: Literal["expert", "random", "zero"] = "expert"
    """expert: the task's scripted policy; random: uniform actions; zero: hold still."""
    expert_style: ExpertStyle = "scripted"
    """How the expert drives (scripted, multimodal, human, multimodal-human): watch the
    styles robot-rl record --expert-style records."""
    num_envs: int = 4
    """Parallel simulations."""
    episodes: int = 4
    """Finished episodes to collect before stopping."""
    seed: int = 0
    """Seed of resets, randomization and random actions."""
    dr: DRPreset | None = None
    """Domain-randomization preset (default: the task's own setting, off)."""
    action: Literal["joint_delta", "joint_velocity", "ee_delta", "ee_pose",
                    "joint_torque"] | None = None
    """Action space (default: the task's own); ee_* spaces run the OSC controller."""
    shield: bool = True
    """Safety shield on (--no-shield: only the NaN guard and action bounds)."""
    video: Path | None = None
    """Write an mp4 of the rollout here (25 frames a second at most: at 50 Hz every second
    control step)."""
    video_envs: tuple[int, ...] = (0,)
    """Env indices shown side by side in the video."""
    camera: str = "corner"
    """Scene camera for the video (corner, front, side)."""
    width: int = VIDEO_SIZE[0]
    """Video width per env [px]."""
    height: int = VIDEO_SIZE[1]
    """Video height [px]."""
    view: bool = False
    """Watch env 0 in MuJoCo's viewer (with the shield's workspace box), the rollout paced
    at the control rate (needs a display: a desktop or xvfb-run)."""


def info(cfg: SimInfoConfig) -> None:
    import mujoco
    import torch

    import robot_rl
    from robot_rl.sim import get_robot, get_task, list_robots, list_tasks, make_env
    from robot_rl.sim.backends import BACKENDS

    r = get_robot(cfg.robot)  # fail on an unknown name before printing anything
    console = Console()
    console.print(f"robot-rl {robot_rl.__version__}  mujoco {mujoco.__version__}  "
                  f"torch {torch.__version__}  backends: {', '.join(BACKENDS)}")

    robots = Table(title="Robots", title_justify="left")
    for col in ("name", "joints", "gripper", "ee site", "MJCF"):
        robots.add_column(col)
    for name in list_robots():
        other = get_robot(name)
        robots.add_row(name, str(other.num_joints), "yes" if other.gripper else "no",
                       other.ee_site, str(other.mjcf))
    console.print(robots)

    joints = Table(title=f"{r.name}: joints and limits", title_justify="left")
    for col in ("joint", "q min", "q max", "home", "qd max", "tau max", "kp", "kd"):
        joints.add_column(col, justify="right" if col != "joint" else "left")
    for i, j in enumerate(r.joint_names):
        joints.add_row(j, *(f"{v[i]:.3f}" if k < 3 else f"{v[i]:g}"
                            for k, v in enumerate((r.q_min, r.q_max, r.home, r.qd_max,
                                                   r.tau_max, r.kp, r.kd))))
    console.print(joints)

    tasks = Table(title="Tasks", title_justify="left")
    for col in ("task", "robot", "obs", "act", "control", "steps", "expert", "description"):
        tasks.add_column(col, overflow="fold")
    for name in list_tasks():
        task = get_task(name)
        c = task.make_config()
        dims = ("", "")
        if cfg.tasks:
            env = make_env(name, 1, nthread=1)
            dims = (str(env.obs_dim), str(env.act_dim))
        tasks.add_row(name, c.robot, *dims, f"{1 / c.control_dt:g} Hz", str(c.episode_length),
                      "yes" if task.expert is not None else "no", task.description)
    console.print(tasks)
    for name in list_tasks():
        task = get_task(name)
        console.print(f"[bold]{name}[/bold]  rewards: {', '.join(task.rewards)}  |  "
                      f"costs: {', '.join(task.costs)}  |  obs: {', '.join(task.observations)}")


def rollout(cfg: SimRolloutConfig) -> None:
    import torch

    from robot_rl.sim import make_env
    from robot_rl.sim.experts import make_expert
    from robot_rl.sim.render import EnvRenderer, VideoWriter

    if cfg.episodes < 1:
        raise ConfigError(f"--episodes must be >= 1, got {cfg.episodes}")
    from robot_rl.controllers import ShieldConfig

    overrides: dict[str, Any] = {} if cfg.shield else {"shield": ShieldConfig(enabled=False)}
    if cfg.action is not None:
        overrides["action"] = _action_config(cfg.action, cfg.task)
    env = make_env(cfg.task, cfg.num_envs, dr=cfg.dr, seed=cfg.seed, robot=cfg.robot,
                   **overrides)
    if cfg.policy == "expert" and env.task.expert is None:
        raise ConfigError(f"task {cfg.task!r} has no scripted expert; use --policy random")
    if cfg.policy == "expert" and cfg.action not in (None, "joint_delta"):
        raise ConfigError("the scripted experts act in joint_delta; use --policy random or "
                          "zero with other action spaces")
    expert = make_expert(env, cfg.expert_style, seed=cfg.seed) if cfg.policy == "expert" \
        else None
    console = Console()
    console.print(f"{env}  policy={cfg.policy}"
                  f"{f' ({cfg.expert_style})' if expert is not None else ''}")

    renderer = writer = view = None
    if cfg.video is not None:
        renderer = EnvRenderer(env, cfg.video_envs, camera=cfg.camera, width=cfg.width,
                               height=cfg.height)
        writer = VideoWriter.of_steps(cfg.video, env.control_dt)
    if cfg.view:
        from robot_rl.sim.view import EnvView

        view = EnvView(env, title=f"robot-rl sim rollout {cfg.task} ({cfg.policy})")
        view.watch(realtime=True)

    returns: list[float] = []
    costs: list[float] = []
    lengths: list[int] = []
    successes: list[bool] = []
    cost_steps = {name: 0.0 for name in env.task.costs}
    steps = 0
    env.reset(seed=cfg.seed)
    start = time.perf_counter()
    columns = (TextColumn("[bold]{task.description}"), BarColumn(),
               TextColumn("{task.completed}/{task.total} episodes"), TimeElapsedColumn(),
               TimeRemainingColumn(), TextColumn("{task.fields[status]}"))
    try:
        with Progress(*columns, console=console, transient=True) as progress:
            bar = progress.add_task("rollout", total=cfg.episodes, status="")
            while len(returns) < cfg.episodes:
                if expert is not None:
                    action = expert(env.state)
                elif cfg.policy == "random":
                    action = env.random_action()
                else:
                    action = torch.zeros(env.num_envs, env.act_dim)
                _, _, _, _, _, info = env.step(action)
                steps += 1
                for name, value in info["cost_terms"].items():
                    cost_steps[name] += float(value.sum())
                if writer is not None and renderer is not None:
                    writer.add(renderer.render)
                if "episode" in info:
                    ep = info["episode"]
                    for i in ep["done"].nonzero().squeeze(1).tolist():
                        if len(returns) < cfg.episodes:
                            returns.append(float(ep["return"][i]))
                            costs.append(float(ep["cost"][i]))
                            lengths.append(int(ep["length"][i]))
                            successes.append(bool(ep["success"][i]))
                    rate = sum(successes) / len(successes)
                    progress.update(bar, completed=len(returns), status=f"success {rate:.0%}")
    finally:
        if writer is not None:
            writer.close()
        if renderer is not None:
            renderer.close()
        if view is not None:
            view.close()
    elapsed = time.perf_counter() - start

    table = Table(title=f"{cfg.task} / {cfg.policy}: {len(returns)} episodes",
                  title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    r = torch.tensor(returns)
    table.add_row("success rate", f"{sum(successes) / len(successes):.0%}")
    table.add_row("return (mean ± std)", f"{r.mean():.2f} ± {r.std(correction=0):.2f}")
    table.add_row("episode cost (mean)", f"{sum(costs) / len(costs):.2f}")
    table.add_row("episode length (mean)", f"{sum(lengths) / len(lengths):.1f}")
    for name, n in cost_steps.items():
        table.add_row(f"cost/{name} (steps)", f"{n:g}")
    for name, count in env.shield_counts.items():
        table.add_row(f"safety/{name} (steps)", f"{int(count.sum())}")
    table.add_row("diverged / invalid actions",
                  f"{int(env.diverged_count.sum())} / {int(env.invalid_action_count.sum())}")
    table.add_row("env steps / s (incl. video)", f"{steps * env.num_envs / elapsed:,.0f}")
    if writer is not None:
        table.add_row("video", f"{cfg.video} ({writer.frames} frames)")
    console.print(table)


def _action_config(name: str, task: str) -> Any:
    """The action-space config ``name``, with the gripper action as the task has it."""
    from robot_rl.controllers import (
        EEDeltaConfig,
        EEPoseConfig,
        JointDeltaConfig,
        JointTorqueConfig,
        JointVelocityConfig,
    )
    from robot_rl.sim import make_task_config

    gripper = bool(getattr(make_task_config(task).action, "gripper", False))
    configs = {"joint_delta": JointDeltaConfig, "joint_velocity": JointVelocityConfig,
               "ee_delta": EEDeltaConfig, "ee_pose": EEPoseConfig,
               "joint_torque": JointTorqueConfig}
    return configs[name](gripper=gripper)
