"""The safety shield under attack: hard-limit excess, speed and workspace per task, action
space and attack, read from MuJoCo's state (never the shield's flags).

    python benchmarks/shield_attacks.py                 # 3 tasks x 4 spaces x 5 attacks (+ OSC)
    python benchmarks/shield_attacks.py --tasks reach --attacks pump drift --no-osc
    python benchmarks/shield_attacks.py --motion --ramp --control-hz 10 --steps 200

The attacks and the table are ``robot_rl.bench.shield_attacks``; 32 envs x 600 control steps
(12 s) per case, seed 12345 (the test suite runs the same attacks on 16 envs, seed 7).
"""

from __future__ import annotations

from robot_rl.bench.shield_attacks import main

if __name__ == "__main__":
    main()
