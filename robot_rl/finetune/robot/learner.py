"""Fine-tuning on the robot: the learner of ``robot-rl finetune-robot``.

    robot-rl finetune-robot --init runs/reach_sim --robot.sim.mass-scale 1.5 --time-budget 900

The learner starts from a policy trained in simulation (``--init``: its networks, normalizer,
optimizers and temperature, and its task config: observation, action space, controller,
shield) and learns from the robot's episodes as the robot actor commits them
(``actor.py``), at ``updates_per_step`` gradient steps per robot transition; there are
no uniform random actions on a robot, and updates begin after ``learning_starts`` robot
transitions (WSRL's warm-up: the critics first see what the pre-trained policy does), and the
actor only after ``actor_warmup`` transitions: until then the critics alone adapt to the
robot's dynamics (a critic fitted to a few hundred transitions at a high update ratio
otherwise leads the actor astray: the policy got worse in its first minute on the arm).

What the robot did is in its dataset before the learner sees it, so a learner that dies loses
nothing: the restarted one resumes from its checkpoint, reads the dataset's episodes the
checkpoint had not yet seen into its replay buffer, and skips them when the robot hands them
over. The checkpoint records how many robot episodes it holds (``robot_episodes``).
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import torch
from rich.console import Console

from robot_rl.algos import SAC
from robot_rl.algos.sac import Metrics
from robot_rl.checkpoint import CHECKPOINT, REPLAY, CheckpointError, load_checkpoint
from robot_rl.cluster.collector import store_transitions
from robot_rl.cluster.rollout import Rollout
from robot_rl.data.reader import Dataset
from robot_rl.finetune.demos import transitions
from robot_rl.finetune.robot.configs import RobotFinetuneConfig
from robot_rl.nets import TanhGaussianActor, tanh_gaussian_log_prob
from robot_rl.replay import Batch, ReplayBuffer
from robot_rl.runner import Runner
from robot_rl.sim.vec_env import VecEnv
from robot_rl.train_config import TrainConfig


def resolve_init(cfg: RobotFinetuneConfig) -> RobotFinetuneConfig:
    """``cfg`` with the init run's task config, network sizes and safety critic (what its
    weights need), the dataset path made absolute inside the run directory."""
    path = Path(cfg.init)
    ckpt = path / CHECKPOINT if path.is_dir() else path
    if not ckpt.is_file():
        raise CheckpointError(f"--init {path}: no checkpoint (a robot-rl train run directory "
                              f"or its checkpoints/latest.pt)")
    saved = TrainConfig.from_saved(load_checkpoint(ckpt)["config"])
    nets = {k: getattr(saved.sac, k) for k in ("actor_hidden", "critic_hidden", "num_critics",
                                               "critic_subset", "layer_norm", "normalize_obs")}
    run_dir = Path(cfg.runs_dir) / str(cfg.run_name)
    dataset = Path(cfg.robot.dataset)
    robot = dataclasses.replace(cfg.robot, dataset=dataset if dataset.is_absolute()
                                else run_dir / dataset)
    return dataclasses.replace(cfg, init=ckpt, task=saved.task, env=saved.env,
                               sac=dataclasses.replace(cfg.sac, **nets),
                               safety=saved.safety, safety_critic=saved.safety_critic,
                               robot=robot)


class AnchoredSAC(SAC):
    """SAC whose actor loss also pulls its mean action towards a frozen ``anchor`` policy's:
    ``anchor_weight * |tanh(mu(s)) - tanh(mu_anchor(s))|^2`` on the batch's states."""

    anchor_weight = 0.0
    _anchor: tuple[TanhGaussianActor, ...] = ()  # a tuple: not a submodule (not saved)
    awac_beta = 0.0
    """With > 0: the actor update is AWAC's (advantage-weighted regression onto the batch's
    own actions, temperature ``awac_beta``) instead of SAC's reparameterized one."""

    @property
    def anchor(self) -> TanhGaussianActor | None:
        return self._anchor[0] if self._anchor else None

    def set_anchor(self, actor: TanhGaussianActor, weight: float) -> None:
        """Pull towards ``actor`` (frozen; kept out of the agent's state) with ``weight``."""
        self._anchor, self.anchor_weight = (actor.requires_grad_(False),), weight

    def _update_actor(self, batch: Batch, obs: torch.Tensor) -> Metrics:
        if self.awac_beta <= 0:
            return super()._update_actor(batch, obs)
        actor = self.gaussian_actor
        with torch.no_grad():
            q = self.critic(obs, batch.action).mean(0)
            v = self.critic(obs, actor.sample(obs)[0]).mean(0)
            w = torch.exp((q - v) / self.awac_beta).clamp(max=20.0)
        mean, log_std = actor(obs)
        u = torch.atanh(batch.action.clamp(-0.999, 0.999))
        logp = tanh_gaussian_log_prob(u, mean, log_std)
        loss = -(w * logp).mean()
        self.actor_opt.zero_grad()
        loss.backward()
        self.actor_opt.step()
        return {"losses/actor": loss.detach(), "charts/awac_weight": w.mean()}

    def eager_only(self) -> str:
        return "AWAC's actor update (--awac) is eager" if self.awac_beta > 0 else ""

    def actor_sample(self, batch: Batch, x: torch.Tensor, next_obs: bool
                     ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        a, logp, aux = super().actor_sample(batch, x, next_obs)
        if next_obs or self.anchor is None or self.anchor_weight <= 0:
            return a, logp, aux
        with torch.no_grad():
            target = self.anchor.mean_action(x)
        bc = ((self.gaussian_actor.mean_action(x) - target) ** 2).sum(-1).mean()
        bc = self.anchor_weight * bc
        return a, logp, bc if aux is None else aux + bc


class RobotFinetuneRunner(Runner):
    """The learner of robot episodes (module docstring); it trains on a ``PoolCollector``
    of the robot actor, with itself as the pool's ``RolloutHooks``."""

    cfg: RobotFinetuneConfig
    n_step_ok = False  # the robot's rollouts arrive as one-step transitions
    config_type = RobotFinetuneConfig
    collects = "robot"
    warmup = "policy"  # a robot acts with the pre-trained policy from the first step

    def __init__(self, cfg: RobotFinetuneConfig, console: Console | None = None,
                 eval_env: VecEnv | None = None):
        """``eval_env``: where ``eval_every`` evaluates (default: the nominal task)."""
        super().__init__(cfg, console, eval_env=eval_env)
        self.robot_episodes = getattr(self, "robot_episodes", 0)
        self.interventions = ReplayBuffer(self.cfg.sac.buffer_size, self.env.obs_dim,
                                          self.env.act_dim, self.cfg.device)
        """The person's intervention steps (HIL-SERL's demonstration buffer)."""
        self.prior = self._prior_data() if cfg.prior_ratio > 0 else None
        if cfg.resume is None:
            state = load_checkpoint(cfg.init)
            try:
                self.agent.load_full_state(state["agent"])
            except (RuntimeError, KeyError) as e:
                raise CheckpointError(f"--init {cfg.init} does not fit: {e}") from None
            self.console.print(f"policy from {cfg.init} ({int(state['env_steps']):,} sim "
                               f"steps)")
        self._catch_up()

    def build_agent(self) -> SAC:
        cfg = self.cfg
        safety = dataclasses.replace(cfg.safety_critic, mode=cfg.safety)
        sac = cfg.sac.with_gamma(self.env.control_dt, cfg.env.discount_horizon)
        agent = AnchoredSAC(self.env.obs_dim, self.env.act_dim, sac, safety,
                            device=cfg.device, seed=cfg.seed)
        agent.awac_beta = cfg.awac
        if cfg.anchor > 0:  # the init policy's actor, frozen
            anchor = copy.deepcopy(agent.gaussian_actor)  # the same architecture
            modules = load_checkpoint(cfg.init)["agent"]["modules"]
            anchor.load_state_dict({k[len("actor."):]: v for k, v in modules.items()
                                    if k.startswith("actor.")})
            agent.set_anchor(anchor, cfg.anchor)
        return agent

    def actor_learns(self) -> bool:
        return self.env_steps >= self.cfg.actor_warmup

    def replay_shares(self) -> list[tuple[ReplayBuffer, float]]:
        """``prior_ratio`` of every batch from the simulation's transitions and
        ``intervention_ratio`` from the person's steps (when there are any); the rest is the
        robot's transitions."""
        shares = [] if self.prior is None else [(self.prior, self.cfg.prior_ratio)]
        return shares + [(self.interventions, self.cfg.intervention_ratio)]

    def _prior_data(self) -> ReplayBuffer:
        """The init run's replay buffer (checkpoints/replay.pt beside its checkpoint)."""
        path = Path(self.cfg.init).parent / REPLAY.name
        if not path.is_file():
            raise CheckpointError(f"--prior-ratio needs the init run's replay buffer; "
                                  f"{path} is missing (train it with --save-replay)")
        state = torch.load(path, weights_only=False)
        buf = ReplayBuffer(int(state["capacity"]), self.env.obs_dim, self.env.act_dim,
                           self.cfg.device)
        buf.load_state_dict(state)
        self.console.print(f"prior data: {len(buf):,} simulation transitions from {path}")
        return buf

    def extra_state(self) -> dict[str, Any]:
        return {"robot_episodes": self.robot_episodes}

    def load_extra_state(self, state: dict[str, Any]) -> None:
        self.robot_episodes = int(state.get("robot_episodes", 0))

    def _catch_up(self) -> None:
        """Read the robot dataset's episodes this learner has not seen into the replay, and
        the intervention steps of those it has (not in the checkpoint) into their buffer."""
        root = Path(self.cfg.robot.dataset)
        if not (root / "meta" / "info.json").is_file():
            return
        ds = Dataset(root)
        seen = list(range(min(self.robot_episodes, ds.num_episodes)))
        if seen:
            old = transitions(ds, self.cfg.device, seen)
            self._add_interventions(old, old["intervention"])
        new = list(range(len(seen), ds.num_episodes))
        if not new:
            return
        tr = transitions(ds, self.cfg.device, new)
        store_transitions(self, tr)
        self._add_interventions(tr, tr["intervention"])
        self.env_steps += int(tr["obs"].shape[0])
        self.robot_episodes = ds.num_episodes
        self.console.print(f"robot dataset {root}: {len(new)} episodes "
                           f"({int(tr['obs'].shape[0]):,} transitions) the checkpoint had "
                           f"not seen, now in the replay buffer")

    def accepts(self, ro: Rollout) -> bool:
        # an episode the dataset already gave this learner (after a restart) is skipped
        return ro.episode_index < 0 or ro.episode_index >= self.robot_episodes

    def stored(self, ro: Rollout, tr: dict[str, torch.Tensor]) -> None:
        if ro.intervention is not None and len(ro):
            self._add_interventions(tr, torch.from_numpy(ro.intervention).to(self.cfg.device))
        if ro.episode_index >= 0:
            self.robot_episodes = ro.episode_index + 1

    def _add_interventions(self, tr: dict[str, torch.Tensor], mask: torch.Tensor) -> None:
        if bool(mask.any()):
            self.interventions.add(tr["obs"], tr["action"], tr["reward"], tr["cost"],
                                   tr["next_obs"], tr["terminated"], mask=mask)
