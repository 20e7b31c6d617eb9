"""``robot-rl bench sim``: the simulation throughput table (see robot_rl.bench.sim_throughput)."""

from __future__ import annotations

from robot_rl.bench.sim_throughput import BenchSim, run

__all__ = ["BenchSim", "run"]
