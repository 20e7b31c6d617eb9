"""Reach to 80% success: skrl's SAC through our Isaac Gym VecTask adapter vs robot_rl SAC.

    python benchmarks/skrl_reach.py                    # both, 900 s budget each
    python benchmarks/skrl_reach.py --budget 600 --target 0.8

skrl 1.4 trains on ``VecTaskAdapter(make_env("reach", 16))`` wrapped by its own
``wrap_env(env, "isaacgym-preview4")``, as it would an IsaacGymEnvs task; robot_rl's SAC trains
on the same env. Both learners use the same settings: 16 envs, 256x256 MLPs (the critics with
LayerNorm after each hidden layer, the actor a tanh-squashed Gaussian), batch 256,
learning rates 3e-4, discount 0.97, Polyak 0.01, one gradient step per vector step, 5,000
random transitions first, running observation normalization; ours runs without its safety
critic (``--safety off``), like skrl's SAC. One run each, one after the other (two trainers
on two cores slow each other far more than 2x). Both are evaluated the same way: the
deterministic policy, 32 episodes of the batched reach env; ours counts its evaluation time
against itself, skrl's evaluations are off its clock.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path
from typing import Any

import torch
import tyro
from rich.console import Console
from rich.table import Table

from robot_rl.algos.configs import SACConfig
from robot_rl.evaluate import evaluate
from robot_rl.interop import VecTaskAdapter
from robot_rl.plot import plot_curves, time_to
from robot_rl.runner import Runner
from robot_rl.sim import make_env
from robot_rl.train_config import TrainConfig


@dataclasses.dataclass(kw_only=True)
class Args:
    """Wall clock to a reach success rate: skrl SAC (Isaac Gym wrapper) vs robot_rl SAC."""

    budget: float = 900.0
    """Wall-clock budget of each learner [s]."""
    target: float = 0.8
    """Success rate that stops the clock."""
    num_envs: int = 16
    """Parallel envs of both learners."""
    eval_every: float = 20.0
    """Seconds of skrl training between its evaluations."""
    eval_episodes: int = 32
    """Episodes per evaluation."""
    skip_ours: bool = False
    """Only run skrl."""
    layer_norm: bool = True
    """skrl's critics with LayerNorm after each hidden layer, as ours have."""
    out: Path = Path("runs/bench/skrl_reach")
    """Folder of our run and the figure."""
    seed: int = 0


def run_ours(args: Args) -> list[dict[str, float]]:
    sac = SACConfig(learning_starts=5_000)
    cfg = TrainConfig(task="reach", safety="off", num_envs=args.num_envs, sac=sac,
                      time_budget=args.budget, target_success=args.target, eval_every=16_000,
                      eval_episodes=args.eval_episodes, runs_dir=args.out, run_name="ours",
                      seed=args.seed, save_replay=False, checkpoint_every=1e9)
    return Runner(cfg).train()


def run_skrl(args: Args, console: Console) -> list[dict[str, float]]:
    from skrl.agents.torch.sac import SAC, SAC_DEFAULT_CONFIG
    from skrl.envs.wrappers.torch import wrap_env
    from skrl.memories.torch import RandomMemory
    from skrl.models.torch import DeterministicMixin, Model
    from skrl.resources.preprocessors.torch import RunningStandardScaler

    logging.getLogger("skrl").setLevel(logging.WARNING)
    torch.manual_seed(args.seed)

    def mlp(n_in: int, n_out: int, layer_norm: bool = False) -> torch.nn.Module:
        """256x256 ReLU, LayerNorm after each hidden layer for the critics (as ours)."""
        layers: list[torch.nn.Module] = []
        for d_in in (n_in, 256):
            layers.append(torch.nn.Linear(d_in, 256))
            if layer_norm:
                layers.append(torch.nn.LayerNorm(256))
            layers.append(torch.nn.ReLU())
        return torch.nn.Sequential(*layers, torch.nn.Linear(256, n_out))

    class Actor(Model):
        """A tanh-squashed Gaussian with a state-dependent std, as ours (and SB3's, CleanRL's):
        skrl 1.4's GaussianMixin clips samples instead, which on a bounded action space
        leaves the actor's gradient zero wherever a sample lands beyond the bounds (or, left
        unclipped, lets the critic learn over actions the env clips anyway)."""

        def __init__(self, obs: Any, act: Any, device: Any) -> None:
            Model.__init__(self, obs, act, device)
            self.net = mlp(self.num_observations, 2 * self.num_actions)

        def act(self, inputs: dict, role: str = "") -> tuple:
            mean, log_std = self.net(inputs["states"]).chunk(2, dim=-1)
            log_std = log_std.clamp(-5.0, 2.0)
            u = mean + log_std.exp() * torch.randn_like(mean)
            a = torch.tanh(u)
            log_prob = (torch.distributions.Normal(mean, log_std.exp()).log_prob(u)
                        - torch.log1p(-a * a + 1e-6)).sum(-1, keepdim=True)
            return a, log_prob, {"mean_actions": torch.tanh(mean)}

    class Critic(DeterministicMixin, Model):
        def __init__(self, obs: Any, act: Any, device: Any) -> None:
            Model.__init__(self, obs, act, device)
            DeterministicMixin.__init__(self)
            self.net = mlp(self.num_observations + self.num_actions, 1,
                           layer_norm=args.layer_norm)

        def compute(self, inputs: dict, role: str) -> tuple:
            return self.net(torch.cat([inputs["states"], inputs["taken_actions"]], 1)), {}

    env = wrap_env(VecTaskAdapter(make_env("reach", args.num_envs, seed=args.seed)),
                   wrapper="isaacgym-preview4", verbose=False)
    o, a, dev = env.observation_space, env.action_space, env.device
    models = {"policy": Actor(o, a, dev), "critic_1": Critic(o, a, dev),
              "critic_2": Critic(o, a, dev), "target_critic_1": Critic(o, a, dev),
              "target_critic_2": Critic(o, a, dev)}
    cfg = dict(SAC_DEFAULT_CONFIG)
    starts = 5_000 // args.num_envs
    cfg.update(gradient_steps=1, batch_size=256, discount_factor=0.97, polyak=0.01,
               actor_learning_rate=3e-4, critic_learning_rate=3e-4, random_timesteps=starts,
               learning_starts=starts, learn_entropy=True, initial_entropy_value=0.05,
               state_preprocessor=RunningStandardScaler,
               state_preprocessor_kwargs={"size": o, "device": dev},
               experiment={"write_interval": 0, "checkpoint_interval": 0})
    memory = RandomMemory(memory_size=500_000 // args.num_envs, num_envs=args.num_envs,
                          device=dev)
    agent = SAC(models=models, memory=memory, cfg=cfg, observation_space=o, action_space=a,
                device=dev)
    agent.init()
    eval_env = make_env("reach", min(args.eval_episodes, 32), seed=args.seed + 10_000)

    def policy(obs: torch.Tensor) -> tuple[torch.Tensor, None]:
        with torch.no_grad():
            x = agent._state_preprocessor(obs)
            mean = models["policy"].act({"states": x}, role="policy")[2]["mean_actions"]
        return mean.clamp(-1.0, 1.0), None

    history: list[dict[str, float]] = []
    states, infos = env.reset()
    train_time, next_eval, t = 0.0, 0.0, 0
    while train_time < args.budget:
        mark = time.perf_counter()
        for _ in range(50):  # skrl's SequentialTrainer loop, one vector step at a time
            agent.pre_interaction(timestep=t, timesteps=10**9)
            with torch.no_grad():
                actions = agent.act(states, timestep=t, timesteps=10**9)[0]
                next_states, rewards, terminated, truncated, infos = env.step(actions)
                agent.record_transition(states=states, actions=actions, rewards=rewards,
                                        next_states=next_states, terminated=terminated,
                                        truncated=truncated, infos=infos, timestep=t,
                                        timesteps=10**9)
            agent.post_interaction(timestep=t, timesteps=10**9)
            states = next_states
            t += 1
        train_time += time.perf_counter() - mark
        if train_time >= next_eval:
            next_eval = train_time + args.eval_every
            res = evaluate(policy, eval_env, args.eval_episodes, seed=args.seed + 10_000)
            history.append({"env_steps": float(t * args.num_envs), "seconds": train_time,
                            "success_rate": res.success_rate, "return": res.return_mean,
                            "episode_cost": res.cost_mean})
            console.print(f"  skrl {train_time:6.0f} s  {t * args.num_envs:>8,} steps  "
                          f"success {res.success_rate:.0%}  return {res.return_mean:.1f}")
            if res.success_rate >= args.target:
                break
    return history


def main(args: Args) -> None:
    console = Console(width=max(120, Console().width))
    console.print(f"[bold]reach: wall clock to {args.target:.0%} success, skrl vs robot_rl"
                  f"[/bold] (budget {args.budget:g} s each, {args.num_envs} envs, "
                  f"{torch.get_num_threads()} torch threads)")
    rows = []
    if not args.skip_ours:
        rows.append(("robot_rl SAC (safety off)", run_ours(args)))
    rows.append(("skrl 1.4 SAC (Isaac Gym preview 4 wrapper)", run_skrl(args, console)))
    png = plot_curves(args.out / "skrl_reach.png", rows, title="reach: eval success")
    table = Table(title=f"reach to {args.target:.0%} success, same settings, one run each",
                  title_justify="left")
    for col in ("learner", "time to target", "env steps", "final success", "evals"):
        table.add_column(col, justify="left" if col == "learner" else "right")
    for name, hist in rows:
        hit = time_to(hist, args.target)
        table.add_row(name, f"{hit[0]:.0f} s" if hit else f"> {hist[-1]['seconds']:.0f} s",
                      f"{hit[1]:,.0f}" if hit else f"> {hist[-1]['env_steps']:,.0f}",
                      f"{hist[-1]['success_rate']:.0%}", str(len(hist)))
    console.print(table)
    console.print(f"curves: {png}")


if __name__ == "__main__":
    main(tyro.cli(Args))
