"""Learning on a GPU with --preset gpu, beside the CPU backend (``robot_rl.bench.gpu_learning``
says what each row measures).

    python benchmarks/gpu_learning.py --part 1      # reach, push, and the CPU backend's reach
    python benchmarks/gpu_learning.py --part 2      # lift
    python benchmarks/gpu_learning.py --part 3      # the residual from 20 demos; reach_hazard
    python benchmarks/gpu_learning.py --part all --scale cpu   # no GPU: the same table, small

On a fresh GPU machine with only torch and a driver, ``benchmarks/gpu_setup.sh`` first puts
MuJoCo, MuJoCo Warp, Warp and tyro in place from the bundle ``benchmarks/gpu_bundle.py``
makes (docs/performance/gpu-learning.md gives the calls).
"""

from __future__ import annotations

import tyro

from robot_rl.bench.gpu_learning import GPULearningConfig, run

if __name__ == "__main__":
    run(tyro.cli(GPULearningConfig))
