"""``robot-rl reward train | eval``: success classifiers on camera frames (HIL-SERL's reward
classifier; ``robot_rl.vision.reward_training``)."""

from __future__ import annotations

from rich.console import Console

from robot_rl.vision.configs import RewardEvalConfig, RewardTrainConfig


def train_cmd(cfg: RewardTrainConfig) -> None:
    from robot_rl.vision.reward_training import print_report, train_reward_classifier

    console = Console()
    _, report = train_reward_classifier(cfg, console)
    print_report(console, report, f"held-out episodes ({report.episodes})")
    console.print(f"saved {cfg.out}", highlight=False)


def eval_cmd(cfg: RewardEvalConfig) -> None:
    from robot_rl.data.reader import Dataset
    from robot_rl.vision.reward_classifier import load_reward_classifier
    from robot_rl.vision.reward_training import evaluate_reward_classifier, print_report

    console = Console()
    clf = load_reward_classifier(cfg.classifier)
    report = evaluate_reward_classifier(clf, Dataset(cfg.dataset), list(cfg.episodes) or None,
                                        cfg.threshold)
    print_report(console, report, f"{cfg.dataset}")
