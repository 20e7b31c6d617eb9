"""Our SAC on gymnasium's own MuJoCo envs through ``GymVecEnv``, beside Stable-Baselines3's.

    python benchmarks/gym_sac.py                          # Reacher-v5 and Pusher-v5, ~45 min
    python benchmarks/gym_sac.py --envs Reacher-v5 --steps 10000

For each env, one after the other (never two learners at once on 2 cores), at the same env
steps and seed:

- ``sb3``: Stable-Baselines3's SAC at its defaults (``SAC("MlpPolicy", env)``: one env,
  one gradient step per env step, 100 warm-up steps, temperature from 1.0);
- ``ours utd1``: ``robot-rl train --gym ID --num-envs 1``, so one gradient step per env
  step as SB3 takes, the rest at our defaults (the safety critic on, 5,000 warm-up steps,
  observation normalization, LayerNorm critics, temperature from 0.05, discount 0.99);
- ``ours``: ``robot-rl train --gym ID`` as it ships: 16 envs, one gradient step per vector
  step (1/16 per env step).

Every learner's deterministic policy is evaluated by the same code (``evaluate`` on a
``GymVecEnv`` of the id, the same seeds) every ``--eval-every`` env steps and, with more
episodes, at the end. Wall clock is the learner's own: evaluations are left out of it.
Return is the env's own reward summed over an episode (neither env reports success).
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import torch
import tyro
from rich.console import Console
from rich.table import Table

from robot_rl.bench.markdown import table_markdown
from robot_rl.evaluate import EvalResult, evaluate, evaluate_agent
from robot_rl.interop.gymnasium_env import GymVecEnv
from robot_rl.runner import Runner
from robot_rl.sim.vec_env import VecEnv
from robot_rl.train_config import TrainConfig

LEARNERS = ("sb3", "ours utd1", "ours")


@dataclasses.dataclass(kw_only=True)
class Args:
    envs: tuple[str, ...] = ("Reacher-v5", "Pusher-v5")
    """Gymnasium ids to train on."""
    steps: tuple[int, ...] = (30_000, 60_000)
    """Env steps of every learner, one per id (one value: the same for every id)."""
    eval_every: int = 5_000
    """Env steps between evaluations."""
    eval_episodes: int = 20
    """Episodes per evaluation along the way."""
    final_episodes: int = 100
    """Episodes of the final evaluation."""
    learners: tuple[str, ...] = LEARNERS
    """Which to run: sb3, "ours utd1", ours."""
    seed: int = 0
    out: Path = Path("runs/bench/gym_sac")
    """Runs, curves (curves.json) and the table (table.md)."""


def _evaluate(policy: Any, env: VecEnv, episodes: int, seed: int) -> EvalResult:
    return evaluate(policy, env, episodes, seed=seed)


def run_ours(env_id: str, steps: int, num_envs: int, args: Args, name: str
             ) -> tuple[list[dict[str, float]], float, EvalResult]:
    """Train ours; (curve, training seconds, final evaluation)."""
    eval_seconds = 0.0

    class Timed(Runner):
        def evaluate_policy(self, env: VecEnv, episodes: int, seed: int) -> EvalResult:
            nonlocal eval_seconds
            t = time.perf_counter()
            out = super().evaluate_policy(env, episodes, seed)
            eval_seconds += time.perf_counter() - t
            return out

    cfg = TrainConfig(gym=env_id, num_envs=num_envs, total_steps=steps,
                      eval_every=args.eval_every, eval_episodes=args.eval_episodes,
                      seed=args.seed, runs_dir=args.out / env_id, run_name=name,
                      save_replay=False, checkpoint_every=1e9, progress=False)
    t0 = time.perf_counter()
    runner = Timed(cfg, eval_env=GymVecEnv(env_id, min(args.eval_episodes, 10)))
    history = runner.train()
    seconds = time.perf_counter() - t0 - eval_seconds
    curve = [{"env_steps": h["env_steps"], "return": h["return"]} for h in history]
    final_env = GymVecEnv(env_id, 10)
    final = evaluate_agent(runner.agent, final_env, args.final_episodes, seed=args.seed + 1)
    return curve, seconds, final


def run_sb3(env_id: str, steps: int, args: Args
            ) -> tuple[list[dict[str, float]], float, EvalResult]:
    """Train SB3's SAC at its defaults; (curve, training seconds, final evaluation)."""
    import gymnasium
    from stable_baselines3 import SAC as SB3SAC
    from stable_baselines3.common.callbacks import BaseCallback

    eval_env = GymVecEnv(env_id, min(args.eval_episodes, 10))
    curve: list[dict[str, float]] = []
    model = SB3SAC("MlpPolicy", gymnasium.make(env_id), seed=args.seed, verbose=0)

    def policy(obs: torch.Tensor) -> tuple[torch.Tensor, None]:
        a, _ = model.predict(obs.numpy(), deterministic=True)
        # SB3 acts in the env's bounds, GymVecEnv takes [-1, 1]
        return torch.as_tensor(model.policy.scale_action(a), dtype=torch.float32), None

    class Clock(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.eval_seconds = 0.0

        def _on_step(self) -> bool:
            n = self.num_timesteps
            if n == 1 or n % args.eval_every == 0:
                t = time.perf_counter()
                res = _evaluate(policy, eval_env, args.eval_episodes, args.seed + 10_000)
                curve.append({"env_steps": float(n), "return": res.return_mean})
                self.eval_seconds += time.perf_counter() - t
            return True

    clock = Clock()
    t0 = time.perf_counter()
    model.learn(total_timesteps=steps, callback=clock)
    seconds = time.perf_counter() - t0 - clock.eval_seconds
    final = _evaluate(policy, GymVecEnv(env_id, 10), args.final_episodes, args.seed + 1)
    return curve, seconds, final


def main(args: Args) -> None:
    console = Console(width=max(120, Console().width))
    steps = args.steps * len(args.envs) if len(args.steps) == 1 else args.steps
    if len(steps) != len(args.envs):
        raise SystemExit("--steps takes one value, or one per --envs id")
    unknown = set(args.learners) - set(LEARNERS)
    if unknown:
        raise SystemExit(f"unknown learners {sorted(unknown)}; choose from {LEARNERS}")
    torch.set_num_threads(1)  # every learner on one thread, as ours runs by default
    args.out.mkdir(parents=True, exist_ok=True)
    table = Table(title=f"SAC on gymnasium envs, seed {args.seed}, "
                        f"{args.final_episodes} final episodes")
    for col in ("env", "learner", "env steps", "final return", "train s",
                "env steps/s", "return along the way"):
        table.add_column(col)
    curves: dict[str, Any] = {}
    for env_id, n in zip(args.envs, steps, strict=True):
        for learner in args.learners:
            console.print(f"[bold]{env_id}[/bold] {learner}: {n:,} env steps ...")
            if learner == "sb3":
                curve, seconds, final = run_sb3(env_id, n, args)
            else:
                curve, seconds, final = run_ours(env_id, n, 1 if learner == "ours utd1" else 16,
                                                 args, learner.replace(" ", "_"))
            curves[f"{env_id} / {learner}"] = curve
            along = " ".join(f"{c['return']:.1f}" for c in curve)
            row = (env_id, learner, f"{n:,}",
                   f"{final.return_mean:.2f}", f"{seconds:.0f}",
                   f"{n / seconds:.0f}", along)
            table.add_row(*row)
            console.print(f"  final return {row[3]}, {seconds:.0f} s training ({row[5]} env "
                          f"steps/s); along the way: {along}")
            (args.out / "curves.json").write_text(json.dumps(curves, indent=1))
    console.print(table)
    (args.out / "table.md").write_text(table_markdown(table))
    console.print(f"table: {args.out / 'table.md'}; curves: {args.out / 'curves.json'}")


if __name__ == "__main__":
    main(tyro.cli(Args))
