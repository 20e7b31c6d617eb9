"""``robot-rl bench ...``: benchmark tables (see robot_rl.bench.sim_throughput/controllers)."""

from __future__ import annotations

from robot_rl.bench.controllers import BenchControllersConfig
from robot_rl.bench.controllers import run as run_controllers
from robot_rl.bench.sim_throughput import BenchSimConfig, run

__all__ = ["BenchControllersConfig", "BenchSimConfig", "run", "run_controllers"]
