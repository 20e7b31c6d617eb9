"""Learning on a GPU with --preset gpu, beside the CPU backend on the same machine.

    python benchmarks/gpu_learning.py --part 1      # reach, push, and the CPU backend's reach
    python benchmarks/gpu_learning.py --part 2      # lift
    python benchmarks/gpu_learning.py --part 3      # the residual from 20 demos; reach_hazard
    python benchmarks/gpu_learning.py --part all --scale cpu   # no GPU: the same table, small

On a fresh GPU machine with only torch and a driver, ``benchmarks/gpu_setup.sh`` first puts
MuJoCo, MuJoCo Warp, Warp and tyro in place from the bundle ``benchmarks/gpu_bundle.py``
makes (docs/performance/gpu-learning.md gives the calls).

Each row is one training run (one seed) of a task with a time budget, stopped early once two
evaluations in a row reach its target. What a row reports:

  start-up s     building the runner: the envs (on a fresh machine, Warp's first kernel
                 build, counted here and not in the training time), the agent, the replay
  compile s      the compiled gradient step's first calls (tracing, inductor, CUDA graphs):
                 inside the training time, as the time to a target counts it
  env steps/s    env steps per second of training, evaluations left out (the same rate
                 with them is in the results file)
  updates/s      gradient steps per second of training, the same way
  s to 80 / 95   seconds of training (compile and evaluations included) until an
                 evaluation first reached 80% / 95% success; "-" where none did
  final          the last evaluation's success

The parts, each sized to fit one command on a fresh GPU machine with its set-up
(``benchmarks/gpu_setup.sh``):

  1  reach from scratch (throughput; to 95%), push from scratch (to 80%), and make demo's
     CPU recipe of reach on this machine's CPU cores for the same budget as reach's
  2  lift from scratch (to 80%)
  3  the residual on push from ``demos`` scripted demonstrations (recorded and flow-BC
     trained first, or ``--flow`` brought along; to 95%), and the safety critic's
     cumulative training cost on reach_hazard against unconstrained SAC's

``scale``: gpu runs ``--preset gpu`` as it is (4,096 worlds on CUDA); cpu runs the same
rows at a small scale on the CPU (64 envs, batches of 1,024, 256-unit networks): the
table's every column, at CPU speed. auto picks gpu where CUDA is available.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any, Literal

import torch
import tyro
from rich.console import Console
from rich.table import Table

from robot_rl.bench.learning import curve_summary
from robot_rl.train_config import TrainConfig, with_preset

Part = Literal["1", "2", "3", "all"]


@dataclasses.dataclass(kw_only=True)
class GPULearningConfig:
    """Learning on a GPU with --preset gpu, beside the CPU backend (module docstring).

    Example: python benchmarks/gpu_learning.py --part 1
    """

    part: Part = "1"
    """Which rows to run (module docstring): 1, 2, 3 or all."""
    scale: Literal["auto", "gpu", "cpu"] = "auto"
    """gpu: --preset gpu as it is; cpu: the same rows small, on the CPU; auto: gpu where
    CUDA is available."""
    reach_budget: float = 60.0
    """Reach from scratch: training budget [s] (the CPU backend's row gets the same)."""
    push_budget: float = 180.0
    """Push from scratch: training budget [s]."""
    lift_budget: float = 360.0
    """Lift from scratch: training budget [s]."""
    residual_budget: float = 180.0
    """The residual on push: training budget [s] (recording and flow-BC before it)."""
    hazard_budget: float = 60.0
    """reach_hazard: training budget of each of the two runs [s]."""
    demos: int = 20
    """Scripted demonstrations the residual's flow policy learns from."""
    bc_steps: int = 10_000
    """Gradient steps of flow-BC (benchmarks/learners.py's recipe)."""
    flow: Path | None = None
    """A flow-BC run of push to start the residual from (skips recording and BC)."""
    seed: int = 0
    """Seed of every run."""
    out: Path = Path("runs/bench/gpu_learning")
    """Folder of the runs, results.json and table.md."""

    def resolved_scale(self) -> Literal["gpu", "cpu"]:
        if self.scale == "auto":
            return "gpu" if torch.cuda.is_available() else "cpu"
        return self.scale


CPU_SCALE: dict[str, int] = dict(num_envs=64, batch_size=1024, hidden=256,
                                 buffer_size=300_000)
"""The small scale of ``scale cpu``."""


def preset_config(cfg: GPULearningConfig, base: Any, name: str, budget: float,
                  target: float | None) -> Any:
    """``base`` (a TrainConfig or a fine-tuning config) with --preset gpu, at the scale of
    ``cfg``, stopping at ``target`` success twice in a row (None: never) or after
    ``budget`` seconds."""
    run = with_preset(base, "gpu")
    if cfg.resolved_scale() == "cpu":
        s, h = CPU_SCALE, CPU_SCALE["hidden"]
        small: dict[str, Any] = dict(batch_size=s["batch_size"], buffer_size=s["buffer_size"],
                                     learning_starts=10 * s["num_envs"], bf16=False)
        if run.sac.critic_hidden == with_preset(TrainConfig(), "gpu").sac.critic_hidden:
            small |= dict(critic_hidden=(h, h), actor_hidden=(h, h))
        run = dataclasses.replace(run, num_envs=s["num_envs"], backend="cpu", device="cpu",
                                  sac=dataclasses.replace(run.sac, **small),
                                  log_every=20 * s["num_envs"], eval_every=40 * s["num_envs"])
    return dataclasses.replace(run, time_budget=budget, target_success=target,
                               target_evals=2, seed=cfg.seed, runs_dir=cfg.out / "runs",
                               run_name=name, save_replay=False, checkpoint_every=1e9,
                               progress=False)


def train_row(name: str, run_cfg: Any, console: Console, runner_cls: Any = None
              ) -> dict[str, Any]:
    """Train one row's run and read its figures (module docstring)."""
    from robot_rl.runner import Runner

    console.print(f"[bold]{name}[/bold]: {run_cfg.task}, {run_cfg.num_envs:,} envs on "
                  f"{run_cfg.backend}/{run_cfg.device}, {run_cfg.time_budget:g} s budget")
    t0 = time.perf_counter()
    runner = (runner_cls or Runner)(run_cfg, console=Console(file=sys.stderr))
    startup = time.perf_counter() - t0
    eval_seconds = [0.0]
    evaluate = runner.evaluate_policy

    def timed(*args: Any, **kwargs: Any) -> Any:
        t = time.perf_counter()
        try:
            return evaluate(*args, **kwargs)
        finally:
            eval_seconds[0] += time.perf_counter() - t

    runner.evaluate_policy = timed  # type: ignore[method-assign]
    runner.train()
    compiled = runner.agent.compiled
    compile_s = sum(compiled.compile_seconds.values()) if compiled is not None else 0.0
    train_s = max(runner.elapsed - eval_seconds[0], 1e-9)
    curve = curve_summary(runner.run_dir, (80, 95))
    row = {**curve, "row": name, "task": run_cfg.task, "envs": run_cfg.num_envs,
           "where": f"{run_cfg.backend}/{run_cfg.device}", "startup_s": startup,
           "compile_s": compile_s, "env_steps": runner.env_steps,
           "env_steps_per_s": runner.env_steps / train_s,
           "env_steps_per_s_with_evals": runner.env_steps / max(runner.elapsed, 1e-9),
           "updates": runner.agent.updates, "updates_per_s": runner.agent.updates / train_s,
           "eval_s": eval_seconds[0]}
    console.print(f"  {_line(row)}", highlight=False)
    return row


def _line(row: dict[str, Any]) -> str:
    def s(v: float | None) -> str:
        return "-" if v is None else f"{v:.0f}"

    return (f"{row['env_steps']:,} env steps; {row['env_steps_per_s']:,.0f} env steps/s, "
            f"{row['updates_per_s']:,.1f} updates/s; to 80%: {s(row['seconds_to_80'])} s, to "
            f"95%: {s(row['seconds_to_95'])} s; final {row['final_success']:.1%}; start-up "
            f"{row['startup_s']:.0f} s, compile {row['compile_s']:.0f} s")


def cpu_row(cfg: GPULearningConfig, console: Console) -> dict[str, Any]:
    """make demo's recipe of reach on this machine's CPU cores (the CPU backend beside)."""
    from robot_rl.algos.configs import SACConfig, SafetyConfig

    demo_sac = SACConfig(actor_hidden=(128, 128), critic_hidden=(128, 128),
                         updates_per_step=2, actor_lr=1e-3, critic_lr=1e-3)
    run = TrainConfig(task="reach", threads=None, sac=demo_sac,
                      safety_critic=SafetyConfig(hidden=(128, 128)), eval_every=10_000,
                      eval_episodes=64, time_budget=cfg.reach_budget, target_success=0.95,
                      target_evals=2, seed=cfg.seed, runs_dir=cfg.out / "runs",
                      run_name="reach-cpu", save_replay=False, checkpoint_every=1e9,
                      progress=False)
    return train_row("reach, CPU (demo recipe)", run, console)


def flow_run(cfg: GPULearningConfig, console: Console) -> Path:
    """The residual's base: ``--flow``, or flow-BC of ``demos`` recorded push episodes."""
    if cfg.flow is not None:
        return cfg.flow
    from robot_rl.bc import BCRunner
    from robot_rl.bc.config import BCConfig
    from robot_rl.policies import PolicyConfig
    from robot_rl.recording.config import RecordConfig
    from robot_rl.recording.record import record

    data = cfg.out / "demos"
    t0 = time.perf_counter()
    if not (data / "meta" / "info.json").is_file():
        record(RecordConfig(task="push", teleop="expert", expert_style="multimodal-human",
                            episodes=cfg.demos, out=data, episode_length=300,
                            success_only=True, seed=cfg.seed, progress=False),
               console=Console(quiet=True))
    small = cfg.resolved_scale() == "cpu"
    steps = min(cfg.bc_steps, 2_000) if small else cfg.bc_steps
    bc = BCRunner(BCConfig(demos=data, algo="bc-flow",
                           policy=PolicyConfig(horizon=8, execute=4, width=256, blocks=2,
                                               ignore_obs=("last_action",)),
                           steps=steps, eval_every=steps, eval_episodes=32, seed=cfg.seed,
                           runs_dir=cfg.out / "runs", run_name="bc-flow", progress=False,
                           checkpoint_every=1e9), console=Console(file=sys.stderr))
    bc.train()
    console.print(f"flow-BC on {cfg.demos} demonstrations: {bc.history[-1]['success_rate']:.1%}"
                  f" success, {time.perf_counter() - t0:.0f} s with the recording")
    return bc.run_dir


def rows(cfg: GPULearningConfig, console: Console) -> list[dict[str, Any]]:
    """The part's rows, each printed as it is measured."""
    from robot_rl.finetune.configs import ResidualConfig
    from robot_rl.finetune.residual import ResidualRunner

    part = cfg.part
    out: list[dict[str, Any]] = []
    if part in ("1", "all"):
        out.append(train_row("reach", preset_config(cfg, TrainConfig(task="reach"), "reach",
                                                    cfg.reach_budget, 0.95), console))
        out.append(train_row("push", preset_config(cfg, TrainConfig(task="push"), "push",
                                                   cfg.push_budget, 0.8), console))
        out.append(cpu_row(cfg, console))
    if part in ("2", "all"):
        out.append(train_row("lift", preset_config(cfg, TrainConfig(task="lift"), "lift",
                                                   cfg.lift_budget, 0.8), console))
    if part in ("3", "all"):
        base = ResidualConfig(policy=flow_run(cfg, console))
        out.append(train_row(f"residual, push, {cfg.demos} demos",
                             preset_config(cfg, base, "residual", cfg.residual_budget, 0.95),
                             console, ResidualRunner))
        for mode in ("both", "off"):
            hazard = TrainConfig(task="reach_hazard", safety=mode)  # type: ignore[arg-type]
            out.append(train_row(f"reach_hazard {mode}",
                                 preset_config(cfg, hazard, f"hazard-{mode}",
                                               cfg.hazard_budget, None), console))
    return out


COLUMNS = ("row", "envs", "where", "start-up s", "compile s", "env steps", "env steps/s",
           "updates/s", "s to 80%", "s to 95%", "final", "training cost")


def cells(row: dict[str, Any]) -> list[str]:
    def s(v: float | None) -> str:
        return "-" if v is None else f"{v:.0f}"

    return [row["row"], f"{row['envs']:,}", row["where"], f"{row['startup_s']:.0f}",
            f"{row['compile_s']:.0f}", f"{row['env_steps']:,}",
            f"{row['env_steps_per_s']:,.0f}", f"{row['updates_per_s']:,.1f}",
            s(row["seconds_to_80"]), s(row["seconds_to_95"]), f"{row['final_success']:.1%}",
            f"{row['train_cost']:,.0f}"]


def hazard_ratio(results: list[dict[str, Any]]) -> str | None:
    """The safety critic's cumulative training cost over unconstrained SAC's on
    reach_hazard, with both final successes (None without both rows)."""
    by = {r["row"]: r for r in results}
    safe, off = by.get("reach_hazard both"), by.get("reach_hazard off")
    if safe is None or off is None:
        return None
    ratio = safe["train_cost"] / max(off["train_cost"], 1e-9)
    return (f"reach_hazard: cumulative training cost with the safety critic "
            f"{ratio:.2f}x unconstrained SAC's ({safe['train_cost']:,.0f} / "
            f"{off['train_cost']:,.0f}) at {safe['final_success']:.1%} / "
            f"{off['final_success']:.1%} final success")


def machine() -> str:
    """The machine in a line: the GPU (or none) and torch's version."""
    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"
    import os

    return f"{gpu}, {os.cpu_count()} CPU cores, torch {torch.__version__}"


def run(cfg: GPULearningConfig) -> list[dict[str, Any]]:
    console = Console(width=max(120, Console().width))
    console.print(f"gpu_learning part {cfg.part}, scale {cfg.resolved_scale()}: {machine()}")
    cfg.out.mkdir(parents=True, exist_ok=True)
    results = rows(cfg, console)
    table = Table(title=f"Learning with --preset gpu (scale {cfg.resolved_scale()}), part "
                        f"{cfg.part}; {machine()}", title_justify="left")
    for col in COLUMNS:
        table.add_column(col, justify="left" if col in ("row", "where") else "right")
    for row in results:
        table.add_row(*cells(row))
    console.print(table)
    ratio = hazard_ratio(results)
    if ratio:
        console.print(ratio)
    md = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    md += ["| " + " | ".join(cells(r)) + " |" for r in results]
    (cfg.out / f"table-part{cfg.part}.md").write_text(
        f"{machine()}; scale {cfg.resolved_scale()}\n\n" + "\n".join(md) + "\n"
        + (f"\n{ratio}\n" if ratio else ""))
    (cfg.out / f"results-part{cfg.part}.json").write_text(json.dumps(results, indent=1))
    return results


if __name__ == "__main__":
    run(tyro.cli(GPULearningConfig))
