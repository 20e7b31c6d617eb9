"""``robot-rl train --ray`` / ``robot-rl finetune --ray`` and ``robot-rl finetune-robot``:
training with actors and a learner on Ray (``robot_rl.dist``).

    robot-rl train --task reach --ray auto --env-runners 4
    robot-rl finetune-robot --init runs/reach__sac__0__<time> --robot.teleop spacemouse
"""

from __future__ import annotations

from typing import Any

from rich.console import Console

from robot_rl.errors import ConfigError


def train_on_ray_cmd(cfg: Any) -> None:
    """``robot-rl train --ray ...`` / ``robot-rl finetune --ray ...``: a learner actor and
    env-runner actors on Ray."""
    from robot_rl.finetune import FinetuneConfig
    from robot_rl.plot import plot_curves
    from robot_rl.runner import TrainConfig

    if type(cfg) not in (TrainConfig, FinetuneConfig):
        raise ConfigError("--ray trains robot-rl train and robot-rl finetune runs (state-based "
                          "SAC, RLPD, WSRL); dsrl and train-pixels run in one process")
    try:
        from robot_rl.dist.cluster import train_on_ray
    except ImportError as e:
        raise ConfigError(f"--ray needs Ray: pip install -e '.[dist]' ({e})") from None
    history, run_dir = train_on_ray(cfg)
    label = f"{cfg.task} / " + (cfg.method if isinstance(cfg, FinetuneConfig) else
                                f"safety {cfg.safety}") + f", {cfg.env_runners} env-runners"
    png = plot_curves(run_dir / "learning_curve.png", [(label, history)], title=run_dir.name)
    Console().print(f"learning curve: {png}")


def finetune_robot_cmd(cfg: Any) -> None:
    """``robot-rl finetune-robot``: the learner and the robot actor on Ray; prints the
    robot's episodes as they come, then the loop's timing."""
    try:
        from robot_rl.dist.cluster import RayTraining
    except ImportError as e:
        raise ConfigError(f"finetune-robot needs Ray: pip install -e '.[dist]' ({e})") from None
    from robot_rl.cli.deploy import print_summary

    training = RayTraining(cfg)
    try:
        training.start().run()
        summary = training.robot_summary()
    finally:
        training.stop()
    console = Console()
    if summary.get("ticks"):
        print_summary(console, summary)
        console.print(f"robot episodes {summary['robot_episodes']}, intervention steps "
                      f"{sum(summary['interventions'])}, weight swaps {summary['swaps']} "
                      f"(policy v{summary['policy_version']})")
    console.print(f"run: {training.run_dir}; robot dataset: {training.robot_dataset}")
