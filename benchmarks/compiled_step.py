"""SAC's gradient step compiled (``--sac.compile``) against the eager one, on this machine.

    python benchmarks/compiled_step.py                   # about 5 minutes on 2 cores
    python benchmarks/compiled_step.py --sizes 128x256 --updates 100

For each size (hidden units x batch) it builds reach's agent with the safety critic
(``--safety both``: 2 critics and 2 cost critics with LayerNorm, the Lagrangian term in the
actor's loss), fills a replay buffer, and times ``agent.update`` (the batch's sampling
included, as the runner does it) eagerly and compiled, in one process and interleaved in
rounds, so both see the same machine. The compile (the first compiled step: tracing and
inductor's C++ kernels, or torch's cache of them) is timed apart. 128x256 is
``make demo``'s networks and batch; 256x4096 a large batch on the default networks.
"""

from __future__ import annotations

import dataclasses
import statistics
import time

import torch
import tyro
from rich.console import Console
from rich.table import Table

from robot_rl.algos import SAC
from robot_rl.algos.configs import SACConfig, SafetyConfig
from robot_rl.replay import ReplayBuffer
from robot_rl.run_control import torch_threads

OBS, ACT = 27, 7  # reach on arm7


@dataclasses.dataclass
class Args:
    sizes: tuple[str, ...] = ("128x256", "256x4096")
    """Hidden units x batch size, each timed eagerly and compiled."""
    updates: int = 60
    """Timed updates per round (after 10 warm-up updates)."""
    rounds: int = 3
    """Rounds of eager then compiled; the table gives each one's median over rounds."""
    threads: int = 1
    """torch threads (the runner's default)."""


def _agent(hidden: int, batch: int, compile: bool) -> tuple[SAC, ReplayBuffer]:
    torch.manual_seed(0)
    sac = SACConfig(gamma=0.97, actor_hidden=(hidden, hidden), critic_hidden=(hidden, hidden),
                    batch_size=batch, compile=compile)
    agent = SAC(OBS, ACT, sac, SafetyConfig(mode="both", hidden=(hidden, hidden),
                                            lambda_init=0.1))
    n = max(20_000, 4 * batch)
    g = torch.Generator().manual_seed(0)
    buf = ReplayBuffer(n, OBS, ACT)
    buf.add(torch.randn(n, OBS, generator=g), torch.rand(n, ACT, generator=g) * 2 - 1,
            torch.randn(n, generator=g), torch.rand(n, generator=g),
            torch.randn(n, OBS, generator=g), torch.zeros(n))
    agent.observe(buf.obs)
    return agent, buf


def _time(agent: SAC, buf: ReplayBuffer, updates: int) -> float:
    """Seconds per update over ``updates`` updates."""
    bs = agent.cfg.batch_size
    t0 = time.perf_counter()
    for _ in range(updates):
        agent.update(buf.sample(bs, agent.gen))
    return (time.perf_counter() - t0) / updates


def main(args: Args) -> None:
    console = Console()
    table = Table(title=f"SAC gradient step, eager and compiled ({args.threads} torch "
                        f"thread{'s' if args.threads > 1 else ''}; reach, safety both)")
    for col in ("hidden x batch", "eager ms", "compiled ms", "compiled / eager speed-up",
                "compile s"):
        table.add_column(col, justify="right")
    with torch_threads(args.threads):
        for size in args.sizes:
            hidden, batch = (int(v) for v in size.split("x"))
            eager, ebuf = _agent(hidden, batch, False)
            compiled, cbuf = _agent(hidden, batch, True)
            _time(eager, ebuf, 10)
            t0 = time.perf_counter()
            _time(compiled, cbuf, 1)  # the compile
            compile_s = time.perf_counter() - t0
            _time(compiled, cbuf, 9)
            e_ms, c_ms = [], []
            for r in range(args.rounds):
                e_ms.append(1e3 * _time(eager, ebuf, args.updates))
                c_ms.append(1e3 * _time(compiled, cbuf, args.updates))
                console.print(f"{size} round {r + 1}/{args.rounds}: eager {e_ms[-1]:.2f} ms, "
                              f"compiled {c_ms[-1]:.2f} ms")
            e, c = statistics.median(e_ms), statistics.median(c_ms)
            table.add_row(size, f"{e:.2f}", f"{c:.2f}", f"{e / c:.2f}x", f"{compile_s:.1f}")
    console.print(table)


if __name__ == "__main__":
    main(tyro.cli(Args))
