"""The SAC kind: ``robot-rl train`` (SAC with a safety critic), ``robot-rl finetune``
(RLPD / WSRL from demonstrations) and ``robot-rl finetune-robot`` (HIL-SERL on Ray). Their
runs hold a SAC agent; the decision that ships is its deterministic actor behind the gate,
or the MLP student that ``robot-rl distill`` fits to it."""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

from rich.console import Console

from robot_rl.errors import ConfigError
from robot_rl.kinds.base import EvalOptions, Evaluation, ExportConfig, Exported, Kind, Run
from robot_rl.kinds.command import Command
from robot_rl.kinds.training import train_runner

_CONFIGS = {"train": ("robot_rl.train_config", "TrainConfig"),
            "finetune": ("robot_rl.finetune.configs", "FinetuneConfig"),
            "finetune-robot": ("robot_rl.finetune.robot.configs", "RobotFinetuneConfig")}
"""Where each command's config is (``command`` imports the one asked for alone)."""


class SACKind(Kind):
    name = "sac"

    def commands(self) -> dict[str, Command]:
        return {name: self.command(name) for name in _CONFIGS}

    def command(self, name: str) -> Command:
        module, config = _CONFIGS[name]
        run = {"train": train, "finetune": finetune, "finetune-robot": finetune_robot}[name]
        return Command(getattr(importlib.import_module(module), config), run)

    def evaluation(self, run: Run, opts: EvalOptions) -> Evaluation:
        from robot_rl.evaluate import evaluate, evaluate_agent, module_policy
        from robot_rl.runner import load_agent, make_train_env

        agent, cfg, _ = load_agent(run.checkpoint)
        env = make_train_env(cfg, opts.num_envs, opts.seed, dr=opts.dr)
        if opts.student:
            from robot_rl.distill import load_student

            policy = module_policy(load_student(run.dir))
            return Evaluation(env, f"{cfg.env_name} / student",
                              lambda n, **kw: evaluate(policy, env, n, **kw))
        if opts.gate is not None and opts.gate != agent.safety_cfg.gate:
            agent.safety_cfg = dataclasses.replace(agent.safety_cfg,
                                                   mode="gate" if opts.gate else "off")
        return Evaluation(env, f"{cfg.env_name} / actor",
                          lambda n, **kw: evaluate_agent(agent, env, n, **kw))

    def export(self, run: Run, cfg: ExportConfig) -> Exported:
        from robot_rl.distill import load_student, teacher_policy
        from robot_rl.export.artifact import artifact_meta, export_artifact
        from robot_rl.export.modules import DeployCost, ObsNorm
        from robot_rl.runner import load_agent, make_train_env
        from robot_rl.sim.env import BatchedEnv

        agent, train_cfg, state = load_agent(run.checkpoint)
        if train_cfg.gym is not None:
            raise ConfigError(f"{run.dir} trained on the gymnasium env {train_cfg.gym}: an "
                              f"artifact describes a robot's observations and actions for "
                              f"deploy, which a gymnasium env does not declare; its policy "
                              f"is in {run.checkpoint} (robot_rl.runner.load_agent)")
        teacher = teacher_policy(agent)
        which = cfg.policy or "student"
        policy = load_student(run.dir) if which == "student" else teacher
        env = make_train_env(train_cfg, 1, 0)
        assert isinstance(env, BatchedEnv)  # a task's (--gym runs were refused above)
        safety = cost = None
        if agent.cost_critic is not None:
            sc = agent.safety_cfg
            noise = sc.candidate_noise if cfg.candidate_noise is None else cfg.candidate_noise
            if noise < 0:
                raise ConfigError("--candidate-noise must be >= 0")
            safety = {"mode": sc.mode, "gamma": sc.gamma, "pessimism": sc.pessimism,
                      "threshold": sc.threshold if cfg.threshold is None else cfg.threshold,
                      "candidates": sc.candidates if cfg.candidates is None else
                      cfg.candidates,
                      "candidate_noise": noise, "fallback": sc.fallback}
            norm = teacher.norm
            cost = DeployCost(ObsNorm(norm.mean, norm.std, norm.clip), agent.cost_critic.q,
                              sc.pessimism)
        meta = artifact_meta(env, policy, safety, {
            "run": str(run.dir), "checkpoint_env_steps": state["env_steps"],
            "policy": which, "safety_mode": train_cfg.safety})
        out = export_artifact(cfg.out or run.dir / "export", policy, meta, cost=cost)
        return Exported(out, f"{which} policy")

    def distill(self, run: Run, cfg: Any, console: Any) -> Any:
        from robot_rl.distill import distill

        return distill(cfg, console)[1]


def train(cfg: Any) -> None:
    """``robot-rl train``: SAC and its safety critic."""
    from robot_rl.runner import Runner

    train_runner(cfg, Runner, lambda c: f"{c.env_name} / safety {c.safety}")


def finetune(cfg: Any) -> None:
    """``robot-rl finetune``: RLPD or WSRL from demonstrations."""
    from robot_rl.finetune import FinetuneRunner

    train_runner(cfg, FinetuneRunner, lambda c: f"{c.task} / {c.method}")


def finetune_robot(cfg: Any) -> None:
    """``robot-rl finetune-robot``: the learner and the robot actor on Ray; prints the
    robot's episodes as they come, then the loop's timing."""
    try:
        from robot_rl.cluster.driver import RayTraining
        from robot_rl.finetune.robot.pool import ROBOT
    except ImportError as e:
        raise ConfigError(f"finetune-robot needs Ray: pip install -e '.[dist]' ({e})") from None
    from robot_rl.finetune.robot.learner import RobotFinetuneRunner
    from robot_rl.hardware.summary import print_summary

    training = RayTraining(cfg, RobotFinetuneRunner, ROBOT)
    try:
        training.start().run()
        summary = ROBOT.summary(training.runners)
    finally:
        training.stop()
    console = Console()
    if summary.get("ticks"):
        print_summary(console, summary)
        console.print(f"robot episodes {summary['robot_episodes']}, intervention steps "
                      f"{sum(summary['interventions'])}, weight swaps {summary['swaps']} "
                      f"(policy v{summary['policy_version']})")
    console.print(f"run: {training.run_dir}; robot dataset: {ROBOT.dataset(training.cfg)}")


KIND = SACKind()
