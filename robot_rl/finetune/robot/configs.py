"""The configs of fine-tuning on the robot (``robot-rl finetune-robot``): the robot actor's
set-up, its online loop and the learner's recipe. Plain dataclasses, importable without
torch (``--help`` reads them)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Literal

import tyro

from robot_rl.algos.configs import SACConfig
from robot_rl.errors import ConfigError
from robot_rl.hardware.configs import DeployConfig, HomeMoveConfig, SimRobotConfig
from robot_rl.train_config import TrainConfig


def robot_sac() -> SACConfig:
    """The SAC hyper-parameters ``RobotFinetuneConfig`` starts from."""
    return SACConfig(updates_per_step=2, learning_starts=200)


@dataclasses.dataclass(kw_only=True)
class OnlineLoopConfig:
    """The episode cycle on the robot."""

    episode_length: int | None = None
    """Policy steps per episode (default: the task's episode length)."""
    end_on_success: bool = True
    """End an episode at the task's success."""
    confirm_episodes: bool = False
    """Wait for the device's "next" before each episode (a person resets the scene)."""
    home: HomeMoveConfig = dataclasses.field(default_factory=HomeMoveConfig)
    """The move home: its speed, and the tolerance at which it ends..."""
    home_timeout: float = 10.0
    """...or after this long [s] (the episode then starts where the arm is, with a warning)."""
    start_timeout: float = 2.0
    """An episode's start waits this long [s] for what the runtime needs to act (fresh joint
    states, camera frames), trying at every tick, before the loop holds: a reading late by a
    few ticks at that moment (a loaded host) does not need a person."""
    restart_after_hold: float | None = None
    """After a hold (watchdog, stale camera), restart by itself this many seconds later
    (the simulated arm, unattended runs); default: wait for a person (``~/start``, or the
    robot actor's ``start``). An e-stop always waits for its reset."""


@dataclasses.dataclass(kw_only=True)
class RobotSetup:
    """What the robot actor builds on the robot's machine."""

    dataset: Path
    """The robot's dataset: every episode is committed here (appended to if it exists)."""
    robot: Literal["sim", "ros"] = "sim"
    """The arm: sim (the simulated arm in its own process, in real time), or ros (an arm
    behind ros2_control topics: policy_node's subscription, schedule and services, with the
    live policy; --robot.ros-* set its parameters, and --robot.deploy is not used)."""
    sim: SimRobotConfig = dataclasses.field(default_factory=SimRobotConfig)
    """The simulated arm (its held-out dynamics, latency and noise)."""
    deploy: DeployConfig = dataclasses.field(
        default_factory=lambda: DeployConfig(autostart=False))
    """The deploy runtime (rate, gate, watchdog)."""
    loop: OnlineLoopConfig = dataclasses.field(default_factory=OnlineLoopConfig)
    """The episode cycle."""
    ros_params_file: Path | None = None
    """ros: policy_node's parameters YAML (default: the built-in arm's)."""
    ros_overrides: dict[str, str] = dataclasses.field(default_factory=dict)
    """ros: parameters set on top of the file (rate_hz, command_topic, interface, ...)."""
    ros_domain_id: int | None = None
    """ros: the DDS domain (default: ROS_DOMAIN_ID)."""
    teleop: str = "none"
    """The person's device: none, keyboard, spacemouse, gamepad, or corrector (a scripted
    person who steers the hand to the goal when the policy strays; the simulated arm)."""
    stochastic: bool = True
    """Sample the policy's actions (exploration) rather than act with its mean."""
    learner_timeout: float = 30.0
    """Seconds without the learner after which ``on_learner_loss`` applies."""
    on_learner_loss: Literal["act", "hold"] = "act"
    """Without the learner: keep acting with the current weights, or hold until it is back."""
    seed: int = 0
    reset_fallen_arm: bool = False
    """sim: when the move home times out (an arm that has sunk where its actuators cannot
    lift it), put the simulated arm back at home, as a person would on a robot; counted
    (``summary()['arm_resets']``)."""


@dataclasses.dataclass(kw_only=True)
class RobotFinetuneConfig(TrainConfig):
    """Fine-tune a sim-trained policy on the robot (the HIL-SERL loop) with a learner and a
    robot actor on Ray.

    Example: robot-rl finetune-robot --init runs/reach__sac__0 --robot.teleop spacemouse
    """

    gym: tyro.conf.Suppress[str | None] = None
    """Not here: --gym trains robot-rl train runs."""

    init: Path
    """The sim-trained run (robot-rl train) or checkpoint the policy starts from; its task
    config (observation, action space, controller, shield) is the robot's."""
    robot: RobotSetup = dataclasses.field(
        default_factory=lambda: RobotSetup(dataset=Path("robot_data")))
    """The robot actor: the arm, the deploy runtime, the episode cycle, the person's device,
    the dataset (relative paths are inside the run directory)."""
    num_envs: int = 1
    """One robot: the update-to-data ratio is updates_per_step per robot transition."""
    ray: str | None = "local"
    eval_every: int = 10**9
    """Evaluations in simulation (the nominal task) every this many robot transitions; the
    robot's own episodes are the measure that counts (train/success_rate)."""
    eval_episodes: int = 16
    sac: SACConfig = dataclasses.field(default_factory=robot_sac)
    """SAC hyper-parameters (the network sizes come from --init)."""
    prior_ratio: float = 0.0
    """Share of each batch drawn from the init run's replay buffer (its simulation
    transitions: prior data, as RLPD uses offline data); 0: none."""
    intervention_ratio: float = 0.0
    """Share of each batch drawn from the person's intervention steps (HIL-SERL routes them
    to a demonstration buffer sampled 50/50 with the online one: 0.5); every step is also
    online experience. 0: one buffer."""
    anchor: float = 0.0
    """Weight of a behaviour-cloning term that keeps the actor's mean near the init policy's
    (TD3+BC's form, sum of squares over the action; 0: none). Sized against the critic's
    values: TD3+BC's 2.5 / mean|Q| on -Q is a weight of mean|Q| / 2.5 here."""
    awac: float = 0.0
    """With > 0, the actor learns by AWAC's advantage-weighted regression onto the robot's
    (and the prior data's) own actions, at this temperature, instead of following the
    critics' action gradient (0: SAC's update)."""
    actor_warmup: int = 2000
    """Robot transitions during which only the critics learn (the actor keeps the sim
    policy while the critics adapt to the robot's dynamics)."""

    @property
    def method_name(self) -> str:
        return "robot-sac"

    def validate(self) -> None:
        super().validate()
        if self.num_envs != 1:
            raise ConfigError("one robot: --num-envs must be 1")
        if not 0.0 <= self.intervention_ratio <= 1.0 or not 0.0 <= self.prior_ratio <= 1.0 \
                or self.intervention_ratio + self.prior_ratio > 1.0:
            raise ConfigError(f"--intervention-ratio and --prior-ratio must be in [0, 1] and "
                              f"sum to at most 1, got {self.intervention_ratio} and "
                              f"{self.prior_ratio}")
