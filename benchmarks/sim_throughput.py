"""Simulation throughput table: ours vs EnvPool vs gymnasium vs the physical limit.

    python benchmarks/sim_throughput.py [--num-envs 16 64 256] [--seconds 2]

Same as ``robot-rl bench sim``; see ``robot_rl.bench.sim_throughput`` for what is measured.
"""

from __future__ import annotations

import tyro

from robot_rl.bench.configs import BenchSimConfig
from robot_rl.bench.sim_throughput import run

if __name__ == "__main__":
    run(tyro.cli(BenchSimConfig))
