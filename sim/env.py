"""BatchedEnv: many simulations of one task, stepped together, torch in and torch out.

    env = make_env("push", num_envs=64)
    obs = env.reset(seed=0)                                   # (E, obs_dim) float32
    obs, reward, cost, terminated, truncated, info = env.step(action)   # action (E, act_dim)

Finished envs reset automatically inside ``step``; ``info["final_obs"]`` holds every env's
observation before any reset (equal to ``obs`` where the env did not finish), so off-policy
learners bootstrap time-outs correctly. ``info`` also carries per-term reward and cost
breakdowns, success flags, divergence and invalid-action flags, and episode statistics of the
envs that finished. An episode succeeds when the task's success test holds at its last step
(``robot_rl.sim.tasks.base``: one definition, also the deploy harness's and the datasets').
It is a ``robot_rl.sim.VecEnv`` (the protocol learners drive), with a ``critic``
observation group: the noise-free observation plus the task's privileged terms.
With cameras (``make_env(..., cameras=CameraConfig(...))``), ``info["images"]`` and
``info["final_images"]`` hold their images (E, C, H, W) after and before the resets, with
the visual randomization redrawn at each env's reset and, where it times frames as a camera
does (``VisualDR.frame_rate``, ``frame_latency``), each env's images a few control steps old
(``sim.frame_age``; ``images()`` renders the current state), and the policy's observation vector
keeps only the terms a robot measures (push: not the puck's, which the camera shows); the
critic group keeps every term.

Acting goes through ``self.pipeline`` (``robot_rl.controllers.ActionPipeline``), the same
object the deploy runtime acts through on the robot.

The step path has no per-env Python loop: physics runs in the backend (C threads or GPU
kernels); actions, observations, rewards, costs and resets are batched tensor operations.
"""

from __future__ import annotations

import mujoco
import numpy as np
import torch

from robot_rl.controllers import LAYERS, Targets, motion_acted
from robot_rl.controllers.arm_state import ArmState
from robot_rl.controllers.pipeline import ActionPipeline, ControlStep, make_action_pipeline
from robot_rl.controllers.servo import CommandInterface
from robot_rl.errors import ConfigError
from robot_rl.robots import RobotSpec, compile_spec, get_robot, registered_robots
from robot_rl.sim.backends import make_backend
from robot_rl.sim.cameras import SimCameras
from robot_rl.sim.configs import WarpOptions
from robot_rl.sim.delay import DelayLine, TargetDelay
from robot_rl.sim.frame_age import FrameAge
from robot_rl.sim.identified import IdentifiedDynamics
from robot_rl.sim.measurable import unmeasured_terms
from robot_rl.sim.randomization import DomainRandomizer
from robot_rl.sim.state import SimState, limits_of, slice_or_index
from robot_rl.sim.tasks import get_task
from robot_rl.sim.tasks.base import TaskDef, Term
from robot_rl.sim.tasks.config import TaskConfig
from robot_rl.sim.tasks.terms import obs_prev_action
from robot_rl.sim.vec_env import CRITIC, POLICY, layout_columns


class BatchedEnv:
    """``num_envs`` simulations of one task (see module docstring)."""

    def __init__(self, cfg: TaskConfig, num_envs: int, backend: str = "cpu",
                 device: str | torch.device = "cpu", *, seed: int = 0,
                 nthread: int | None = None, warp: WarpOptions | None = None):
        if not isinstance(num_envs, int) or num_envs <= 0:
            raise ConfigError(f"num_envs must be a positive integer, got {num_envs!r}")
        cfg.validate()
        self.cfg = cfg
        self.task = get_task(cfg.name)
        unknown = set(cfg.reward_weights) - set(self.task.rewards)
        if unknown:
            raise ConfigError(f"reward_weights names unknown terms {sorted(unknown)}; "
                              f"terms of {cfg.name!r}: {sorted(self.task.rewards)}")
        self.robot: RobotSpec = get_robot(cfg.robot)
        if self.task.needs_gripper and self.robot.gripper is None:
            with_one = [n for n in registered_robots() if get_robot(n).gripper is not None]
            raise ConfigError(f"task {cfg.name!r} grasps, and robot {cfg.robot!r} has no "
                              f"gripper; arms with one: {', '.join(with_one)}")
        self.num_envs = num_envs
        self.pipeline: ActionPipeline = make_action_pipeline(cfg, self.robot)
        """Action space, controller and shield: the control path the deploy runtime shares."""
        spec = self.task.build_scene(self.robot, cfg)
        self.pipeline.configure(spec)
        self.model = compile_spec(spec, f"task {cfg.name!r} with robot {cfg.robot!r}")
        self.robot.validate(self.model)
        self.identified: IdentifiedDynamics | None = None
        """The identified dynamics the arm was given (``cfg.identified``), or None."""
        dr = cfg.dr
        if cfg.identified is not None:
            self.identified = IdentifiedDynamics.load(cfg.identified)
            self.identified.apply(self.model, self.robot)
            if cfg.identified_dr is not None:
                dr = self.identified.centred_dr(dr, cfg.identified_dr)
        self.dr = dr
        """The randomization ranges in force (``cfg.dr``, or centred on the identified
        dynamics)."""
        self.pipeline.bind(self.model)
        self._inner = self.pipeline.torque_loop

        self.backend = make_backend(backend, self.model, num_envs, device=str(device),
                                    nthread=nthread, warp=warp,
                                    what=f"task {cfg.name!r} with robot {cfg.robot!r}")
        self.device = self.backend.device
        dev, dtype = self.backend.device, self.backend.dtype
        self.numpy_control = self.device.type == "cpu"
        """The control path (shield, action space, controller) runs on numpy views of the
        state, so its compiled layers replace hundreds of small torch operations (the CPU
        backend's default; False: on torch tensors, as on a GPU). Set it before a ``reset``:
        the pipeline's per-env memory is of the kind it last acted on."""
        self.act_dim = self.pipeline.dim
        arm_ids = [self.model.actuator(n).id for n in self.robot.actuator_names]
        self.arm_actuator_ids = arm_ids
        """Actuator ids of the arm joints, in joint order."""
        self._arm_ids = torch.tensor(arm_ids, dtype=torch.long, device=dev)
        self._arm_cols = slice_or_index(arm_ids, dev)
        self._gripper_col: int | None = None
        if self.robot.gripper is not None:
            self._gripper_col = self.model.actuator(self.robot.gripper.actuator).id

        limits = limits_of(self.robot, cfg.safety, self.model, dev, dtype)
        self.state = SimState(self.backend, self.robot, limits, self.act_dim, cfg.control_dt)
        for name, width in self.task.buffers.items():
            self.state.buffers[name] = torch.zeros(num_envs, width, device=dev, dtype=dtype)
        self.randomizer = DomainRandomizer(
            dr, self.backend, robot_bodies=robot_bodies(self.model, self.robot),
            robot_dofs=self.state.joint_dofs, robot_actuators=arm_ids)

        E = num_envs
        self._arange = torch.arange(E, device=dev)
        self._actuation = TargetDelay(cfg.dr.delay_steps("action_delay", cfg.control_dt), E,
                                      dev)
        """The controller targets in flight (``dr.action_delay``)."""
        self._sensing: DelayLine | None = None
        """The policy observations in flight (``dr.sensing_delay``; made once the
        observation's width is known)."""
        self._ep_return = torch.zeros(E, device=dev)
        self._ep_cost = torch.zeros(E, device=dev)
        self.invalid_action_count = torch.zeros(E, dtype=torch.long, device=dev)
        """Per-env number of steps whose action had NaN/inf entries (the env held instead)."""
        self._shield_count_rows = torch.zeros(len(LAYERS), E, dtype=torch.long, device=dev)
        self.shield_counts = {name: self._shield_count_rows[i] for i, name in enumerate(LAYERS)}
        """Per-env number of control steps in which each shield layer intervened."""
        self._no_flag = torch.zeros(E, dtype=torch.bool, device=dev)
        self.diverged_count = torch.zeros(E, dtype=torch.long, device=dev)
        """Per-env number of physics divergences caught by the guard."""
        self._reward_names = list(self.task.rewards)
        self._reward_fns = list(self.task.rewards.values())
        self._reward_w = torch.tensor([cfg.reward_weights.get(n, 0.0) for n in self._reward_names],
                                      dtype=dtype, device=dev)[:, None]  # (R, 1)
        self._cost_names = list(self.task.costs)
        self._cost_fns = list(self.task.costs.values())
        self.observation_terms = observation_terms(self.task, cfg)
        """Name -> fn(state, cfg) of each observation term, in order: the task's, then the
        ones its config adds (``observe_prev_action``)."""
        self._obs_fns = list(self.observation_terms.values())
        self._priv_fns = list(self.task.privileged.values())
        self._current_sensors = cfg.sensor_stage == "current"
        self.gen = torch.Generator(device=dev)
        self.gen.manual_seed(seed)
        self.cameras: SimCameras | None = None
        """The policy's cameras (``cfg.cameras``), rendered into ``info["images"]``."""
        self.last_images: dict[str, torch.Tensor] = {}
        """The images of the observation ``reset`` or ``step`` last returned (what a pixel
        policy acts on next); {} without cameras."""
        self.frame_age: FrameAge | None = None
        """Ages the images ``reset`` and ``step`` return (``VisualDR.frame_rate`` and
        ``frame_latency``); None when every frame is shown as it is rendered."""
        if cfg.cameras is not None:
            self.cameras = SimCameras(self, cfg.cameras, seed=seed)
            vis = cfg.cameras.visual
            if vis.ages_frames:
                self.frame_age = FrameAge(num_envs, cfg.control_dt, vis.frame_rate,
                                          vis.frame_latency, seed=seed + 1, device=dev)
        self._reset_envs(self._arange)
        terms = [(n, int(f(self.state, cfg).shape[1])) for n, f in self.observation_terms.items()]
        # with cameras the objects are in the pixels: the policy's vector holds what the
        # robot measures
        hidden = set(unmeasured_terms(self)) if self.cameras is not None else set()
        self.obs_layout = [t for t in terms if t[0] not in hidden]
        """(name, width) of each term of the policy's observation, in order: the task's
        observation terms; with cameras only those a robot measures (``sim.measurable``)."""
        self.obs_dim = sum(w for _, w in self.obs_layout)
        self._sensing = DelayLine(cfg.dr.delay_steps("sensing_delay", cfg.control_dt), E,
                                  self.obs_dim, dev)
        self._sensing.draw(self._arange, self.gen)
        self._policy_cols = None if not hidden else torch.tensor(
            layout_columns(terms, [n for n, _ in self.obs_layout]), device=dev)
        """Columns of the policy's terms among all terms (None: all of them)."""
        self.critic_layout = terms + [
            (n, int(f(self.state, cfg).shape[1])) for n, f in self.task.privileged.items()]
        """(name, width) of each term of the ``critic`` group: all the task's observation
        terms (without observation noise), then its privileged terms."""
        self.max_episode_length = cfg.episode_length
        """Control steps after which an episode is truncated."""
        self.overtime = 0
        """Control steps an episode that has not succeeded at ``max_episode_length`` runs on
        (a training env's choice, 0 by default): it then ends at its first success or
        after this many more steps, so a learner meets more of the states its failures end
        in. The episode's ``success`` is at its last step, overtime included; evaluate with
        an env without it."""

    # -- public API ------------------------------------------------------------------------

    @property
    def control_dt(self) -> float:
        return self.cfg.control_dt

    @property
    def obs_groups(self) -> dict[str, int]:
        """Observation groups (``robot_rl.sim.vec_env``): ``policy`` (``obs_layout``, with
        the randomized noise) and ``critic`` (``critic_layout``: every observation term
        without noise, then the task's privileged terms)."""
        return {POLICY: self.obs_dim, CRITIC: sum(w for _, w in self.critic_layout)}

    @property
    def image_shapes(self) -> dict[str, tuple[int, int, int]]:
        """(C, H, W) of each image observation, by key: ``{camera}.rgb`` (uint8) and, with
        depth, ``{camera}.depth`` (float32 [m]); empty without cameras."""
        return {} if self.cfg.cameras is None else self.cfg.cameras.image_shapes()

    def images(self, env_ids: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """The image observations (``image_shapes``) of ``env_ids`` (default all), (E, C, H,
        W) each, at the current state; {} without cameras."""
        return {} if self.cameras is None else self.cameras.images(env_ids)

    def group_obs(self) -> dict[str, torch.Tensor]:
        """{"critic": (E, critic width)} at the current state."""
        return {CRITIC: self._critic_obs(self._terms())}

    def reset(self, seed: int | None = None) -> torch.Tensor:
        """Reset every env (reseeding the env's generator if ``seed`` is given); (E, obs_dim)."""
        if seed is not None:
            self.gen.manual_seed(seed)
        self._reset_envs(self._arange)
        self.last_images = self.images()
        if self.frame_age is not None:  # (only with cameras)
            self.frame_age.reset(self.last_images)
        obs = self.observe()
        self._sense_restart(self._arange, obs)
        return obs

    def step(self, action: torch.Tensor, hold: torch.Tensor | None = None
             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, dict]:
        """Advance all envs by one control step; see the module docstring for the outputs.

        ``hold`` (E,) bool, optional: those envs hold still (current joint positions, zero
        velocity) instead of acting, as the safety gate or a watchdog asks.
        """
        action = self._check_action(action)
        state, cfg = self.state, self.cfg
        # The shield and the action space act on the state now, as the deploy runtime does;
        # their targets reach the arm after the actuation delay.
        arm = state.arm_state(mass=self._inner, numpy=self.numpy_control)
        held = None if hold is None else hold.to(self.device, torch.bool)
        control = self._act(action, arm, held)
        invalid, flags = control.invalid, control.flags
        targets = self._actuation(control.targets)
        self.invalid_action_count += invalid
        if targets.gripper is not None:
            state.backend.ctrl[:, self._gripper_col] = _tensor(targets.gripper[:, 0])
        state.prev_action = state.action
        state.action = control.action
        if self._inner:
            self._step_torque(targets, arm, flags)
        else:
            # in-model laws take the joint targets; direct torques with the shield off pass
            iface: CommandInterface = "position" if self.pipeline.in_model else "effort"
            if targets.start is None:
                command = self.pipeline.command(targets, arm, iface)[0]
                state.backend.ctrl[:, self._arm_cols] = _tensor(command)
                self.backend.step(cfg.decimation, current_sensors=self._current_sensors)
            else:  # a ramped command: one value per physics step (``MotionConfig.ramp``)
                n = cfg.decimation
                for i in range(n):
                    command = self.pipeline.command(targets, arm, iface, (i + 1) / n)[0]
                    state.backend.ctrl[:, self._arm_cols] = _tensor(command)
                    self.backend.step(1, current_sensors=self._current_sensors)
        state.episode_step += 1
        safety = {name: flags.get(name, self._no_flag) for name in LAYERS}
        self._shield_count_rows += torch.stack(list(safety.values()))  # one add, all layers
        state.shield_active = motion_acted(safety, self._no_flag)

        bad = self.backend.diverged(cfg.guard_max_qvel)
        terms = self._terms()
        obs, critic = self._sensed(self._noisy(self._policy(terms))), self._critic_obs(terms)
        rewards, costs = self.reward_and_cost_terms()
        reward = rewards.sum(dim=0, dtype=torch.float32)
        cost = costs.sum(dim=0)
        success = self.task.success(state, cfg)
        terminated = success.clone() if cfg.terminate_on_success else torch.zeros_like(success)
        if self.task.terminated is not None:
            terminated |= self.task.terminated(state, cfg)
        truncated = state.episode_step >= cfg.episode_length
        if self.overtime:  # a failed episode runs on until it succeeds or its overtime ends
            truncated &= success | (state.episode_step >= cfg.episode_length + self.overtime)
        if bad is None:
            diverged = torch.zeros_like(truncated)
        else:  # unstable physics: report, zero the signals, and reset those envs below
            diverged = bad.to(self.device)
            obs = torch.nan_to_num(obs, nan=0.0, posinf=0.0, neginf=0.0)
            critic = torch.nan_to_num(critic, nan=0.0, posinf=0.0, neginf=0.0)
            reward = torch.where(diverged, 0.0, reward)
            cost = torch.where(diverged, 0.0, cost)
            terminated &= ~diverged
            truncated |= diverged
            self.diverged_count += diverged

        self._ep_return += reward
        self._ep_cost += cost
        info: dict = {
            "final_obs": obs,
            "reward_terms": dict(zip(self._reward_names, rewards.unbind(0), strict=True)),
            "cost_terms": dict(zip(self._cost_names, costs.unbind(0), strict=True)),
            "success": success,
            "diverged": diverged,
            "invalid_action": invalid,
            "applied_action": control.action.clone(),  # (E, A) after the shield, pre-reset
            "safety": safety,
            "final_obs_groups": {CRITIC: critic},
        }
        images = self.images()  # before the resets: the final images of envs that end
        if self.frame_age is not None:
            images = self.frame_age.step(images)
        if images:
            info["final_images"] = images
        done = terminated | truncated
        ids = done.nonzero().squeeze(1)  # the step's one read of the device (on a GPU)
        if len(ids):
            info["episode"] = {
                "return": self._ep_return.clone(),
                "cost": self._ep_cost.clone(),
                "length": state.episode_step.clone(),
                "success": success & ~diverged,  # at the episode's last step
                "done": done,
            }
            self._reset_envs(ids)
            terms = self._terms()
            obs = torch.where(done[:, None], self._noisy(self._policy(terms)), obs)
            self._sense_restart(ids, obs[ids])
            critic = torch.where(done[:, None], self._critic_obs(terms), critic)
            if images:  # the reset envs' first images
                first = self.images(ids)
                if self.frame_age is not None:
                    images = self.frame_age.restart(ids, first)
                else:
                    images = {k: v.clone() for k, v in images.items()}
                    for k, v in first.items():
                        images[k][ids] = v
        if images:
            info["images"] = images
        self.last_images = images
        info["obs_groups"] = {CRITIC: critic}
        return obs, reward, cost, terminated, truncated, info

    def reward_and_cost_terms(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The task's weighted reward terms (R, E) and cost terms (C, E) at the current state
        (what ``step`` sums; also used to label recordings made outside this env)."""
        state, cfg = self.state, self.cfg
        rewards = torch.stack([f(state, cfg) for f in self._reward_fns]) * self._reward_w
        costs = torch.stack([f(state, cfg) for f in self._cost_fns]).float()
        return rewards, costs

    def expert_action(self) -> torch.Tensor:
        """(E, act_dim) action of the task's scripted expert at the current state."""
        if self.task.expert is None:
            raise ConfigError(f"task {self.cfg.name!r} has no scripted expert")
        return self.task.expert(self.state, self.cfg).clamp(-1.0, 1.0)

    def random_action(self) -> torch.Tensor:
        """(E, act_dim) uniform random actions from the env's generator."""
        u = torch.rand(self.num_envs, self.act_dim, generator=self.gen, device=self.device)
        return 2.0 * u - 1.0

    # -- internals -------------------------------------------------------------------------

    def _act(self, action: torch.Tensor, arm: ArmState, held: torch.Tensor | None
             ) -> ControlStep:
        """``pipeline.act`` on the step's actions; on the CPU on numpy views of the state
        (``arm`` is numpy then), so the shield's layers run compiled (one call each, not ~150
        torch operations). The applied action and the flags come back as tensors; the
        targets stay of ``arm``'s kind, as ``pipeline.command`` takes them."""
        if not self.numpy_control:
            return self.pipeline.act(action, self.state.action, arm, held)
        c = self.pipeline.act(action.numpy(), self.state.action.numpy(), arm,
                              None if held is None else held.numpy())
        return ControlStep(_tensor(c.action), c.targets, _tensor(c.invalid), _tensor(c.held),
                           {name: _tensor(f) for name, f in c.flags.items()})

    def _step_torque(self, targets: Targets, arm: ArmState, flags: dict) -> None:
        """Run the pipeline's torque stage (controller, then the shield's torque layers) every
        ``substeps`` physics steps over one control period, OR-ing the layers' flags into
        ``flags``.

        On the CPU the law runs on numpy views of the state: the same code, with a fraction
        of torch's per-operation dispatch cost (it runs at the physics rate).
        """
        ctrl, k = self.state.backend.ctrl, self.pipeline.substeps
        cpu = self.numpy_control  # targets and arm are numpy then (``_act``)
        n = self.cfg.decimation // k
        for i in range(n):
            if i > 0:
                arm = self.state.arm_state(mass=True, numpy=cpu)
            tau, torque_flags = self.pipeline.command(targets, arm, "effort", (i + 1) / n)
            for name, flag in torque_flags.items():
                flag = _tensor(flag)
                flags[name] = flags[name] | flag if name in flags else flag
            ctrl[:, self._arm_cols] = _tensor(tau)
            last = i == n - 1
            self.backend.step(k, current_sensors=self._current_sensors or not last)

    def _check_action(self, action: torch.Tensor) -> torch.Tensor:
        if not isinstance(action, torch.Tensor):
            action = torch.as_tensor(np.asarray(action), dtype=torch.float32)
        if action.shape != (self.num_envs, self.act_dim):
            raise ConfigError(f"action must have shape ({self.num_envs}, {self.act_dim}) "
                              f"(num_envs, act_dim), got {tuple(action.shape)}")
        return action.to(device=self.device, dtype=torch.float32)

    def observe(self, noise: bool = True) -> torch.Tensor:
        """(E, obs_dim) observation of the current state: the task's terms, concatenated,
        plus the randomized observation noise unless ``noise`` is False."""
        clean = self._policy(self._terms())
        return self._noisy(clean) if noise else clean

    def _sensed(self, obs: torch.Tensor) -> torch.Tensor:
        """(E, obs_dim) what each env's policy observes now: ``obs``, or the observation of
        its sensing delay's steps ago."""
        return obs if self._sensing is None else self._sensing(obs)

    def _sense_restart(self, ids: torch.Tensor, obs: torch.Tensor) -> None:
        """The envs ``ids`` start their episodes: their sensing history is ``obs`` (n, O)."""
        if self._sensing is not None and self._sensing.active:
            self._sensing.fill(ids, obs)

    def _terms(self) -> torch.Tensor:
        """(E, width of all terms) every observation term of the task, concatenated,
        without noise."""
        return torch.cat([f(self.state, self.cfg) for f in self._obs_fns], dim=1).float()

    def _policy(self, terms: torch.Tensor) -> torch.Tensor:
        """(E, obs_dim) the policy's terms (``obs_layout``) of ``terms``."""
        return terms if self._policy_cols is None else terms[:, self._policy_cols]

    def _noisy(self, obs: torch.Tensor) -> torch.Tensor:
        std = self.cfg.dr.obs_noise_std
        if std > 0:
            obs = obs + std * torch.randn(obs.shape, generator=self.gen, device=obs.device)
        return obs

    def _critic_obs(self, terms: torch.Tensor) -> torch.Tensor:
        """(E, critic width): all observation terms without noise (``terms``), then the
        privileged terms."""
        if not self._priv_fns:
            return terms
        priv = [f(self.state, self.cfg).to(terms.dtype) for f in self._priv_fns]
        return torch.cat([terms, *priv], dim=1)

    def _reset_envs(self, ids: torch.Tensor) -> None:
        """Reset the envs ``ids`` (LongTensor): physics, parameters, robot pose, task state."""
        s, cfg, n = self.state, self.cfg, len(ids)
        self.backend.reset(ids)
        if self.cameras is not None:
            self.cameras.redraw(ids)
        self.randomizer.apply(ids, self.gen)
        lim = s.limits
        u = torch.rand((n, lim.home.shape[0]), generator=self.gen, device=s.device, dtype=s.dtype)
        q = (lim.home + cfg.init_joint_noise * (2.0 * u - 1.0)).clamp(lim.q_min, lim.q_max)
        s.set_joint_pos(ids, q)
        s.shield_active[ids] = False
        # Joint targets start at the pose (hold), torques at zero; a gripper the actions do not
        # drive stays closed, one they drive starts half open (action 0).
        arm_ctrl = q if self.pipeline.in_model else torch.zeros_like(q)
        s.backend.ctrl[ids[:, None], self._arm_ids] = arm_ctrl.to(s.dtype)
        g = self.robot.gripper
        if g is not None and self._gripper_col is not None:
            closed = not self.pipeline.action_space.has_gripper
            s.backend.ctrl[ids, self._gripper_col] = g.closed_ctrl if closed else \
                (g.closed_ctrl + g.open_ctrl) / 2
        self.task.reset(s, ids, cfg, self.gen)
        self.backend.forward(ids)
        if self.numpy_control:  # the pipeline's memory is of the kind it acts on
            self.pipeline.reset(ids.numpy(), s.joint_pos.numpy())
        else:
            self.pipeline.reset(ids, s.joint_pos)
        s.episode_step[ids] = 0
        s.action[ids] = 0.0
        s.prev_action[ids] = 0.0
        self._actuation.restart(ids)
        self._actuation.draw(ids, self.gen)
        if self._sensing is not None:
            self._sensing.draw(ids, self.gen)
        self._ep_return[ids] = 0.0
        self._ep_cost[ids] = 0.0

    def __repr__(self) -> str:
        return (f"BatchedEnv(task={self.cfg.name!r}, robot={self.cfg.robot!r}, "
                f"num_envs={self.num_envs}, obs_dim={self.obs_dim}, act_dim={self.act_dim}, "
                f"control_hz={1.0 / self.control_dt:g})")


def observation_terms(task: TaskDef, cfg: TaskConfig) -> dict[str, Term]:
    """The task's observation terms, then ``prev_action`` where the config observes it."""
    out = dict(task.observations)
    if cfg.observe_prev_action:
        out["prev_action"] = obs_prev_action
    return out


def _tensor(x: np.ndarray | torch.Tensor) -> torch.Tensor:
    """A numpy result of the control path as a tensor (zero-copy); tensors pass through."""
    return torch.from_numpy(x) if isinstance(x, np.ndarray) else x


def robot_bodies(model: mujoco.MjModel, robot: RobotSpec) -> list[int]:
    """Bodies of the robot's kinematic tree (those whose root is the robot's root body)."""
    root = model.body(robot.root_body).id
    return [b for b in range(1, model.nbody) if model.body_rootid[b] == root]
