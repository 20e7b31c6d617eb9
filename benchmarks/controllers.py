"""Controller and shield cost: one-sample latency, batched overhead, shield on/off throughput.

    python benchmarks/controllers.py [--samples 20000] [--num-envs 64 1024]

Same as ``robot-rl bench controllers``; see ``robot_rl.bench.controllers`` for what is measured.
"""

from __future__ import annotations

import tyro

from robot_rl.bench.configs import BenchControllersConfig
from robot_rl.bench.controllers import run

if __name__ == "__main__":
    run(tyro.cli(BenchControllersConfig))
