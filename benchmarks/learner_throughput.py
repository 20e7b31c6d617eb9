"""SAC gradient steps per second on this CPU, and how close they are to its matmul limit.

    python benchmarks/learner_throughput.py            # about 2 minutes
    python benchmarks/learner_throughput.py --threads 1 2 --updates 300

For reach's default SAC (2 critics and, with the safety critic, 2 cost critics; 256x256
networks; batch 256) it times ``SAC.update`` on a filled replay buffer at each torch thread
count, counts the update's matmul FLOPs (``torch.utils.flop_counter``), and measures what
the CPU's float32 matmul reaches at the update's largest shape (a batch of 256 through a
256x256 layer). FLOPs / that rate is the least time an update can take with these networks
and batch in float32, whatever is fused or compiled around the matmuls; the last column is
the most any such change can speed the update up. Stable-Baselines3's SAC at its defaults
(2 critics, 256x256, batch 256, no cost critic) is timed the same way, by its own ``train``.
A profile splits our update's time into matmuls and the rest (elementwise, layer norm,
optimizer).
"""

from __future__ import annotations

import dataclasses
import time

import torch
import tyro
from rich.console import Console
from rich.table import Table
from torch.utils.flop_counter import FlopCounterMode

from robot_rl.algos import SAC
from robot_rl.replay import ReplayBuffer
from robot_rl.sim import make_env
from robot_rl.train_config import TrainConfig

_MATMULS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")


@dataclasses.dataclass
class Args:
    threads: tuple[int, ...] = (1, 2)
    """torch intra-op thread counts to time."""
    updates: int = 200
    """Timed updates per row (after 30 warm-up updates)."""
    sb3: bool = True
    """Also time Stable-Baselines3's SAC (the bench extra)."""


def _agent(safety: str) -> tuple[SAC, ReplayBuffer]:
    """Reach's default SAC (``safety``: the safety critic's mode) and a filled buffer."""
    cfg = TrainConfig(task="reach", safety=safety)  # type: ignore[arg-type]
    cfg.validate()
    env = make_env(cfg.env, 1)
    d, a = env.obs_dim, env.act_dim
    agent = SAC(d, a, cfg.sac.with_gamma(env.control_dt, cfg.env.discount_horizon),
                dataclasses.replace(cfg.safety_critic, mode=cfg.safety))
    n = 20_000
    buf = ReplayBuffer(n, d, a, "cpu")
    gen = torch.Generator().manual_seed(0)
    buf.add(torch.randn(n, d, generator=gen), torch.rand(n, a, generator=gen) * 2 - 1,
            torch.randn(n, generator=gen), torch.rand(n, generator=gen),
            torch.randn(n, d, generator=gen), torch.zeros(n))
    agent.observe(torch.randn(n, d, generator=gen))
    return agent, buf


def _time_ours(agent: SAC, buf: ReplayBuffer, updates: int) -> float:
    """Seconds per ``agent.update`` (batch sampling included, as the runner does it)."""
    bs = agent.cfg.batch_size
    for _ in range(30):
        agent.update(buf.sample(bs, agent.gen))
    t0 = time.perf_counter()
    for _ in range(updates):
        agent.update(buf.sample(bs, agent.gen))
    return (time.perf_counter() - t0) / updates


def _flops(agent: SAC, buf: ReplayBuffer) -> int:
    with FlopCounterMode(display=False) as counter:
        agent.update(buf.sample(agent.cfg.batch_size, agent.gen))
    return int(counter.get_total_flops())


def _matmul_share(agent: SAC, buf: ReplayBuffer, updates: int = 30) -> float:
    """Share of the update's CPU time spent in matmuls (torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(updates):
            agent.update(buf.sample(agent.cfg.batch_size, agent.gen))
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    return sum(e.self_cpu_time_total for e in events if e.key in _MATMULS) / max(total, 1)


def matmul_rate(reps: int = 300) -> float:
    """FLOP/s of a float32 (256, 256) @ (256, 256) matmul at the current thread count."""
    a, b = torch.randn(256, 256), torch.randn(256, 256)
    for _ in range(20):
        a @ b
    t0 = time.perf_counter()
    for _ in range(reps):
        a @ b
    return 2 * 256**3 * reps / (time.perf_counter() - t0)


def _time_sb3(updates: int) -> float:
    """Seconds per gradient step of SB3's SAC at its defaults on reach (its ``train``)."""
    import gymnasium
    from stable_baselines3 import SAC as SB3SAC

    import robot_rl.gym_registration  # noqa: F401  (registers robot_rl/Reach-v0)

    model = SB3SAC("MlpPolicy", gymnasium.make("robot_rl/Reach-v0"), seed=0, verbose=0,
                   learning_starts=0)
    model.learn(total_timesteps=1_000)  # fills its buffer (1,000 steps)
    model.train(gradient_steps=30, batch_size=256)
    t0 = time.perf_counter()
    model.train(gradient_steps=updates, batch_size=256)
    return (time.perf_counter() - t0) / updates


def main() -> None:
    args = tyro.cli(Args)
    console = Console(width=max(Console().width, 120))
    t = Table(title="SAC gradient steps on this CPU (reach's default networks, batch 256)")
    for c in ("learner", "threads", "ms/update", "updates/s", "MFLOP/update", "matmul time",
              "GFLOP/s", "CPU peak GFLOP/s", "least ms", "most speed-up"):
        t.add_column(c, justify="right")
    old_threads = torch.get_num_threads()
    try:
        for threads in args.threads:
            torch.set_num_threads(threads)
            peak = matmul_rate()
            for safety, name in (("both", "ours + safety critic"), ("off", "ours")):
                agent, buf = _agent(safety)
                dt = _time_ours(agent, buf, args.updates)
                flops = _flops(agent, buf)
                share = _matmul_share(agent, buf)
                t.add_row(name, str(threads), f"{dt * 1e3:.2f}", f"{1 / dt:.0f}",
                          f"{flops / 1e6:.0f}", f"{share:.0%}", f"{flops / dt / 1e9:.0f}",
                          f"{peak / 1e9:.0f}", f"{flops / peak * 1e3:.2f}",
                          f"{dt / (flops / peak):.1f}x")
                console.print(f"  {name}, {threads} thread(s): {dt * 1e3:.2f} ms per update",
                              highlight=False)
            if args.sb3:
                dt = _time_sb3(args.updates)
                t.add_row("SB3 SAC", str(threads), f"{dt * 1e3:.2f}",
                          f"{1 / dt:.0f}", "-", "-", "-", f"{peak / 1e9:.0f}", "-", "-")
                console.print(f"  SB3 SAC, {threads} thread(s): {dt * 1e3:.2f} ms per "
                              f"gradient step", highlight=False)
    finally:
        torch.set_num_threads(old_threads)
    console.print(t)


if __name__ == "__main__":
    main()
