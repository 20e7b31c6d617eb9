"""Record demonstrations in simulation: a teleoperator (or the task's scripted expert) drives
one env; every control step goes into a DatasetWriter, every episode is committed on its own.

    robot-rl record --task push --teleop keyboard --episodes 20 --out data/push
    robot-rl record --task push --teleop expert --episodes 20 --out data/push   # no person
    robot-rl record --task push --teleop expert --expert-style multimodal-human \
        --episode-length 300 --success-only --episodes 20 --out data/push-mh
    robot-rl record --task push --teleop expert --action ee-position --out data/push-ee

Each episode starts from ``env.reset(seed=s)`` with its seed ``s`` stored in the episode row, so
``robot-rl data replay`` rebuilds the same initial state and replays the actions. A person
paces the loop at the control rate; the expert runs as fast as the simulation goes.

The scripted expert's episodes end on the task's termination or its RL episode length, and
are saved. A person's episode is paced for a person, not for RL: it lasts until ``next``
(Enter: saved), until the task's success test holds (``--success-ends auto``: saved at once;
``confirm``: the status line says so and Enter saves), or until ``--episode-time`` seconds
or the task's own termination end it: saved only if it succeeded, the person labelled it
(``y``/``n``), or ``--keep-failures`` is set; otherwise dropped and recorded again. On any
device, ``rerecord`` drops the episode and records it again with a new start, ``quit``
drops it and ends the recording.

With ``--policy`` an exported policy drives and the person corrects it: a step on which the
device is moved takes the device's action and is flagged ``intervention``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from rich.console import Console
from rich.live import Live

from robot_rl.config_io import from_value, to_dict
from robot_rl.controllers import ActionConfig, EEDeltaConfig, JointDeltaConfig, MotionConfig
from robot_rl.data.format import DEFAULT_KEYFRAME_INTERVAL, DatasetSpec
from robot_rl.data.writer import DatasetWriter
from robot_rl.errors import ConfigError
from robot_rl.recording.config import ActionName, RecordConfig, TeleopKind
from robot_rl.recording.pacing import Pacing
from robot_rl.robots import get_robot
from robot_rl.sim import get_task, make_env, make_task_config
from robot_rl.sim.env import BatchedEnv
from robot_rl.sim.experts import Expert, make_expert
from robot_rl.sim.tasks.config import decimation_for


def named_action(task: str, name: ActionName, box: bool = False,
                 robot: str | None = None) -> ActionConfig | None:
    """The action space ``name`` of ``task`` with the task's gripper choice (None: the
    task's own): joint-delta, ee-delta (end-effector position and rotation offsets) or
    ee-position (position offsets; the hand keeps its home orientation). ``box``: the
    end-effector spaces clip their targets into the task's box (``TaskDef.ee_box``, laid
    out for arm7's reach: refused on an arm that lays the task out for its own; ConfigError
    for another space or a task without one)."""
    corners: dict[str, Any] = {}
    if box:
        ee_box = get_task(task).ee_box
        if not name.startswith("ee-") or ee_box is None:
            raise ConfigError(f"a target box is for the end-effector action spaces of a task "
                              f"with one (push); got action {name!r} of task {task!r}")
        if robot is not None and get_robot(robot).task_layout:
            raise ConfigError(f"--target-box is {task}'s box for arm7's reach; robot "
                              f"{robot!r} lays the task out for its own: record without it")
        corners = {"box_lo": ee_box[0], "box_hi": ee_box[1]}
    if name == "task":
        return None
    gripper = make_task_config(task).action.gripper
    if name == "joint-delta":
        return JointDeltaConfig(gripper=gripper)
    return EEDeltaConfig(rotation=name == "ee-delta", gripper=gripper, **corners)


def making_overrides(making: dict[str, Any]) -> dict[str, Any]:
    """The task-config overrides of a dataset's env making (its arm, episode length, control
    rate as a decimation, action space and motion profile; absent ones are the task's
    own)."""
    overrides: dict[str, Any] = {}
    if making.get("robot") is not None:
        overrides["robot"] = str(making["robot"])
    if making.get("episode_length") is not None:
        overrides["episode_length"] = int(making["episode_length"])
    if making.get("decimation") is not None:
        overrides["decimation"] = int(making["decimation"])
    if making.get("action") is not None:
        overrides["action"] = from_value(ActionConfig, making["action"])
    if making.get("motion") is not None:
        overrides["motion"] = from_value(MotionConfig, making["motion"])
    return overrides


def action_names(env: BatchedEnv) -> tuple[str, ...]:
    """One name per action element of the env's action space."""
    kind = getattr(env.cfg.action, "type", "action")
    arm = env.act_dim - int(env.pipeline.action_space.has_gripper)
    if kind.startswith("joint") and arm == len(env.robot.joint_names):
        names = [f"{j}.{kind.removeprefix('joint_')}" for j in env.robot.joint_names]
    else:
        names = [f"ee.{a}" for a in ("x", "y", "z", "rx", "ry", "rz")[:arm]]
        names += [f"{kind}.{i}" for i in range(len(names), arm)]
    if env.pipeline.action_space.has_gripper:
        names.append("gripper")
    return tuple(names)


def dataset_spec(env: BatchedEnv, cameras: tuple[tuple[str, int, int], ...] = (),
                 making: dict[str, Any] | None = None,
                 keyframe_interval: int | None = DEFAULT_KEYFRAME_INTERVAL) -> DatasetSpec:
    """What a dataset recorded from ``env`` holds (``making``: the arguments of
    ``make_recording_env`` that replay needs)."""
    obs_names = tuple(f"{name}.{i}" for name, w in env.obs_layout for i in range(w))
    return DatasetSpec(
        fps=1.0 / env.control_dt, robot_type=env.cfg.robot, task=env.cfg.name,
        task_text=env.task.description, obs_names=obs_names, action_names=action_names(env),
        joint_names=tuple(env.robot.joint_names), action_space=to_dict(env.cfg.action),
        cameras=cameras, env=dict(making or {}),
        keyframe_interval=keyframe_interval if cameras else None)


def make_recording_env(task: str, dr: str = "off", episode_length: int | None = None,
                       seed: int = 0, action: ActionConfig | None = None,
                       motion: bool | None = None, control_hz: float | None = None,
                       ramp: bool = False, robot: str | None = None) -> BatchedEnv:
    """One env of ``task`` as a dataset records it (``action``: None for the task's own;
    ``motion``: the motion profile on or off, None for the task's own; ``control_hz``: the
    control rate, None for the task's own; ``ramp``: ramped joint commands; ``robot``: the
    arm, None for the task's own)."""
    overrides = making_overrides({"episode_length": episode_length, "robot": robot})
    if control_hz is not None:
        overrides["decimation"] = decimation_for(control_hz,
                                                 make_task_config(task).physics_dt)
    if action is not None:
        overrides["action"] = action
    if motion is not None or ramp:
        enabled = make_task_config(task).motion.enabled if motion is None else motion
        overrides["motion"] = MotionConfig(enabled=enabled, ramp=ramp)
    return make_env(task, 1, dr=dr, seed=seed, **overrides)  # type: ignore[arg-type]


def open_teleop(kind: TeleopKind) -> Any:
    """The device for ``kind`` (not yet connected); None for the expert."""
    if kind == "expert":
        return None
    if kind == "keyboard":
        from robot_rl.hardware.teleop.keyboard import KeyboardTeleop

        return KeyboardTeleop()
    if kind == "spacemouse":
        from robot_rl.hardware.teleop.spacemouse import SpaceMouseTeleop

        return SpaceMouseTeleop()
    from robot_rl.hardware.teleop.gamepad import GamepadTeleop

    return GamepadTeleop()


@dataclasses.dataclass
class RecordResult:
    saved: int
    """Episodes committed by this run."""
    discarded: int
    frames: int
    """Frames committed by this run."""
    seconds: float
    """Wall time of the recording loop (without set-up)."""
    save_seconds: list[float]
    """Time each commit took."""
    quit: bool


def record(cfg: RecordConfig, teleop: Any = None, console: Console | None = None,
           on_step: Callable[[int], None] | None = None,
           policy: Callable[[np.ndarray], np.ndarray] | None = None) -> RecordResult:
    """Run the recording (see module docstring). ``teleop``: a Teleoperator to use instead
    of the one ``cfg.teleop`` names (tests pass a scripted one); ``on_step(frames)`` is called
    after every recorded step; ``policy``: obs (O,) -> action (A,) to use instead of
    ``cfg.policy``."""
    cfg.validate()
    console = console or Console()
    device = teleop if teleop is not None else open_teleop(cfg.teleop)
    expert = device is None
    pacing = None if expert else cfg.pacing()
    control_dt = make_task_config(cfg.task).control_dt if cfg.control_hz is None \
        else 1.0 / cfg.control_hz
    steps = cfg.episode_length if pacing is None else \
        pacing.steps(control_dt, cfg.episode_length)
    env = make_recording_env(cfg.task, cfg.dr, steps, cfg.seed,
                             named_action(cfg.task, cfg.action, cfg.target_box, cfg.robot),
                             cfg.motion,
                             cfg.control_hz, cfg.ramp, cfg.robot)
    h, w = cfg.camera_size
    spec = dataset_spec(env, tuple((c, h, w) for c in cfg.cameras),
                        {"dr": cfg.dr, "robot": env.cfg.robot,
                         "episode_length": env.cfg.episode_length,
                         "decimation": env.cfg.decimation,
                         "action": to_dict(env.cfg.action),
                         "motion": to_dict(env.cfg.motion),
                         **({"render_mode": cfg.render_mode} if cfg.cameras else {})},
                        cfg.keyframe_interval)
    if policy is None and cfg.policy is not None:
        from robot_rl.export import load_policy

        loaded = load_policy(cfg.policy)
        if loaded.obs_dim != env.obs_dim or loaded.act_dim != env.act_dim:
            raise ConfigError(f"the policy {cfg.policy} (obs {loaded.obs_dim}, act "
                              f"{loaded.act_dim}) is not for task {cfg.task!r} (obs "
                              f"{env.obs_dim}, act {env.act_dim})")
        policy = loaded
    if policy is not None and expert:
        raise ConfigError("--policy needs a teleop device to intervene with, not the expert")
    if expert and env.task.expert is None:
        raise ConfigError(f"task {cfg.task!r} has no scripted expert; use a teleop device")
    if not expert and cfg.expert_style != "scripted":
        raise ConfigError("--expert-style is for --teleop expert")
    scripted = make_expert(env, cfg.expert_style, seed=cfg.seed) if expert else None
    realtime = (not expert) if cfg.realtime is None else cfg.realtime
    renderers = []
    if cfg.cameras:
        from robot_rl.sim.render import EnvRenderer

        renderers = [(c, EnvRenderer(env, camera=c, width=w, height=h, mode=cfg.render_mode))
                     for c in cfg.cameras]
        for _, r in renderers:
            r.render()  # the GL context's first-frame set-up, before the clock starts
    mapper = None
    if not expert:
        from robot_rl.hardware.teleop.mapping import TeleopMapper

        mapper = TeleopMapper(env.cfg.action, env.act_dim, env.pipeline.action_space.has_gripper,
                              env.robot, env.control_dt)
    gen = torch.Generator().manual_seed(cfg.seed)
    writer = DatasetWriter(cfg.out, spec, resume=cfg.resume)
    source = ("expert" if cfg.expert_style == "scripted" else f"expert:{cfg.expert_style}") \
        if expert else getattr(device, "name", "teleop")
    if policy is not None:
        source = "policy+" + source
    view = None
    if cfg.view:
        from robot_rl.sim.view import EnvView

        view = EnvView(env, title=f"robot-rl record {cfg.task} ({source})")
    result = RecordResult(0, 0, 0, 0.0, [], False)
    default_out = cfg.out == RecordConfig.out
    console.print(f"recording {cfg.episodes} episode(s) of {cfg.task} ({source}) into "
                  f"{cfg.out}" + (" (the default; --out another folder)" if default_out
                                  else ""), soft_wrap=True, highlight=False)
    attempt = 0
    status = _Status(cfg.episodes, None if expert else env.cfg.episode_length * env.control_dt)
    t_start = time.monotonic()
    try:
        if device is not None:
            device.connect()
            if hasattr(device, "help"):
                console.print(device.help())
        live_ctx: Any = Live(status.render(), console=console, refresh_per_second=4) \
            if cfg.progress else _Quiet()
        with live_ctx as live:
            while writer.num_episodes < cfg.episodes and not result.quit:
                seed = cfg.seed * 1_000_003 + writer.num_episodes * 1_000 + attempt
                attempt += 1
                outcome = _episode(env, writer, seed, source, device, mapper, renderers,
                                   scripted, cfg, gen, realtime, status, live, on_step,
                                   policy, view, pacing)
                if outcome.kind == "save" and (outcome.success or not cfg.success_only):
                    dt = writer.save_episode(success=outcome.label)
                    result.saved += 1
                    result.frames += outcome.frames
                    result.save_seconds.append(dt)
                    status.saved(writer.num_episodes, dt, outcome.success)
                    attempt = 0
                else:
                    writer.discard_episode()
                    result.discarded += 1
                    result.quit = outcome.kind == "quit"
                    if outcome.kind == "fail":
                        status.note = ("dropped: it ended without success (label it y/n, or "
                                       "--keep-failures, to keep such an episode)")
                live.update(status.render())
        if cfg.progress and not console.is_terminal:
            console.print()  # rich's Live ends its last line without a newline off a terminal
    finally:
        writer.close()
        if device is not None:
            device.close()
        for _, r in renderers:
            r.close()
        if view is not None:
            view.close()
    result.seconds = time.monotonic() - t_start
    mean_save = float(np.mean(result.save_seconds)) if result.save_seconds else 0.0
    console.print(f"{writer.num_episodes} episodes ({writer.total_frames} frames) in {cfg.out}; "
                  f"this run saved {result.saved} and dropped {result.discarded}; mean save "
                  f"{mean_save * 1e3:.0f} ms")
    return result


@dataclasses.dataclass
class _Outcome:
    kind: str  # "save", "fail" (ended without success: dropped), "rerecord", "quit"
    success: bool
    label: bool | None
    frames: int


class _Quiet:
    """Stands in for rich's Live when the status line is off."""

    def __enter__(self) -> _Quiet:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def update(self, _renderable: object) -> None:
        pass


class _Status:
    """The live status line."""

    def __init__(self, target: int, limit: float | None = None):
        self.target, self.done = target, 0
        self.limit = limit
        """A person's episode time limit [s] (None: the expert)."""
        self.elapsed = 0.0
        self.frame, self.rate, self.successes = 0, 0.0, 0
        self.last_save: float | None = None
        self.note = ""

    def saved(self, done: int, seconds: float, success: bool) -> None:
        self.done, self.last_save = done, seconds
        self.successes += success

    def render(self) -> str:
        save = "-" if self.last_save is None else f"{self.last_save * 1e3:.0f} ms"
        clock = "" if self.limit is None else f"{self.elapsed:5.1f}/{self.limit:g} s  "
        return (f"episode {min(self.done + 1, self.target)}/{self.target}  {clock}frame "
                f"{self.frame}  {self.rate:5.1f} Hz  successes {self.successes}  last save {save}"
                f"{'  ' + self.note if self.note else ''}")


def _episode(env: BatchedEnv, writer: DatasetWriter, seed: int, source: str, device: Any,
             mapper: Any, renderers: list, expert: Expert | None, cfg: RecordConfig,
             gen: torch.Generator, realtime: bool, status: _Status, live: Any,
             on_step: Callable[[int], None] | None,
             policy: Callable[[np.ndarray], np.ndarray] | None, view: Any = None,
             pacing: Pacing | None = None) -> _Outcome:
    """One episode; ``pacing``: how a person's episode ends (None: the expert's)."""
    obs = env.reset(seed=seed)
    if mapper is not None:
        mapper.reset()
    if policy is not None and hasattr(policy, "reset"):
        policy.reset()  # a chunked policy starts the episode with a fresh chunk
    writer.begin_episode(seed=seed, source=source)
    label: bool | None = None
    reached = False  # the task's test held at some step (the "confirm" prompt)
    success = False  # ... at the latest step: the episode's success if it ends there
    period = env.control_dt
    t0 = next_t = time.monotonic()
    n = 0
    while True:
        events: frozenset[str] = frozenset()
        intervention = False
        if expert is not None:
            action = expert(env.state)
            if cfg.expert_noise > 0:
                action = (action + cfg.expert_noise * torch.randn(action.shape, generator=gen)
                          ).clamp(-1.0, 1.0)
        else:
            cmd = device.read()
            events = cmd.events
            if policy is not None and not cmd.moving:
                a = np.asarray(policy(obs[0].numpy()), dtype=np.float32)
            else:  # the person acts (with a policy running: an intervention)
                a = mapper(cmd, env.state.arm_state().numpy())
                intervention = policy is not None
                if policy is not None and hasattr(policy, "reset"):
                    policy.reset()  # the policy resumes with a fresh chunk
            action = torch.as_tensor(a, dtype=torch.float32)[None]
        if "quit" in events:
            return _Outcome("quit", success, label, n)
        if "rerecord" in events:
            status.note = "re-recording"
            return _Outcome("rerecord", success, label, n)
        if "success" in events:
            label = True
        if "failure" in events:
            label = False
        images = {c: r.render() for c, r in renderers}
        q = env.state.joint_pos[0].numpy().copy()
        qd = env.state.joint_vel[0].numpy().copy()
        next_obs, reward, cost, terminated, truncated, info = env.step(action)
        success = bool(info["success"][0])
        reached = reached or success
        writer.add_frame(obs=obs[0].numpy(), joint_pos=q, joint_vel=qd,
                         action=action[0].numpy(), next_obs=info["final_obs"][0].numpy(),
                         applied_action=info["applied_action"][0].numpy(),
                         reward=float(reward[0]), cost=float(cost[0]),
                         terminated=bool(terminated[0]), truncated=bool(truncated[0]),
                         success=success, intervention=intervention,
                         images=images)
        obs = next_obs
        n += 1
        status.frame = n
        if view is not None and view.view.due():
            view.view.status = status.render()
            view.update()
        now = time.monotonic()
        status.rate = n / max(now - t0, 1e-9)
        if n % 10 == 0:
            status.note = ""
            live.update(status.render())
        if on_step is not None:
            on_step(writer.frames_in_episode)
        ended = bool(terminated[0] | truncated[0])
        if pacing is None:
            if ended:
                return _Outcome("save", success, label, n)
        else:
            status.elapsed = now - t0
            outcome = _person_outcome(pacing, events, ended, success, label, n)
            if outcome is not None:
                return outcome
            if reached and pacing.success_ends == "confirm" and not status.note:
                status.note = "success: Enter saves the episode"
                live.update(status.render())
        if realtime:
            next_t += period
            delay = next_t - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            elif delay < -period:
                next_t = time.monotonic()


def _person_outcome(pacing: Pacing, events: frozenset[str], ended: bool, success_now: bool,
                    label: bool | None, n: int) -> _Outcome | None:
    """How a person's episode ends after this step (None: it goes on); see ``Pacing``."""
    got = pacing.outcome("next" in events, ended, success_now, label)
    return None if got is None else _Outcome(got[0], got[1], label, n)
