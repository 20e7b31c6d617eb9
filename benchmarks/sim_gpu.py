"""GPU simulation throughput: the Warp backend vs MuJoCo Warp alone vs the CPU backend.

    python benchmarks/sim_gpu.py [--task reach] [--num-envs 1024 2048 4096 8192 16384]
    python benchmarks/sim_gpu.py --device cpu --num-envs 4 --cpu-envs 4 --seconds 0.5

Same as ``robot-rl bench sim --backend warp``; see ``robot_rl.bench.sim_gpu`` for what is
measured. Needs the gpu extra (pip install 'robot-rl[gpu]') and, for GPU figures, a CUDA GPU.
"""

from __future__ import annotations

import tyro

from robot_rl.bench.sim_gpu import BenchSimGPUConfig, run

if __name__ == "__main__":
    run(tyro.cli(BenchSimGPUConfig))
