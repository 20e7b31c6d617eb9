"""Any gymnasium env as a VecEnv: actions onto its bounds, true final observations on
autoreset, cost and success from its infos, and our SAC with its safety critic on it."""

from __future__ import annotations

from pathlib import Path

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from robot_rl.algos.configs import SACConfig, SafetyConfig
from robot_rl.errors import ConfigError
from robot_rl.interop.gymnasium_env import GymVecEnv
from robot_rl.sim import make_task_config
from robot_rl.sim.vec_env import check_vec_env


class Line(gymnasium.Env):
    """A point on a line, x' = x + 0.1 a with a in [-2, 2] and x starting at 0: reward
    -|x - 1|, cost 1 left of -0.5 (Safety-Gymnasium's info["cost"]), success within 0.1 of
    1 (``success_key``); 20 steps (TimeLimit)."""

    dt = 0.05

    def __init__(self, success_key: str = "is_success"):
        self.observation_space = spaces.Box(-np.inf, np.inf, (1,), np.float32)
        self.action_space = spaces.Box(-2.0, 2.0, (1,), np.float32)
        self.key = success_key
        self.x = 0.0
        self.actions: list[float] = []

    def reset(self, *, seed: int | None = None, options: dict | None = None):  # type: ignore[override]
        super().reset(seed=seed)
        self.x = 0.0
        return np.array([self.x], np.float32), {}

    def step(self, action):  # type: ignore[no-untyped-def, override]
        a = float(action[0])
        self.actions.append(a)
        self.x += 0.1 * a
        info = {"cost": float(self.x < -0.5), self.key: abs(self.x - 1.0) < 0.1}
        return np.array([self.x], np.float32), -abs(self.x - 1.0), False, False, info


def _line(key: str = "is_success") -> gymnasium.Env:
    return gymnasium.wrappers.TimeLimit(Line(key), max_episode_steps=20)


def test_actions_are_mapped_onto_the_bounds_and_hold_is_the_middle():
    env = GymVecEnv(_line, num_envs=2)
    check_vec_env(env)
    assert (env.num_envs, env.obs_dim, env.act_dim) == (2, 1, 1)
    assert env.max_episode_length == 20 and env.control_dt == pytest.approx(0.05)
    env.reset(seed=0)
    obs, *_ = env.step(torch.tensor([[1.0], [-0.5]]), hold=torch.tensor([False, True]))
    inner = [e.unwrapped for e in env.venv.envs]  # type: ignore[attr-defined]
    assert inner[0].actions == [2.0] and inner[1].actions == [0.0]  # a=1 -> 2; held -> 0
    assert obs[:, 0].tolist() == pytest.approx([0.2, 0.0])


def test_a_finished_episode_reports_its_true_final_observation_cost_and_success():
    env = GymVecEnv(lambda: _line("success"), num_envs=2)
    env.reset(seed=0)
    push = torch.tensor([[1.0], [-1.0]])  # env 0 towards the goal, env 1 into the cost
    for t in range(20):
        obs, reward, cost, terminated, truncated, info = env.step(push)
        if t < 19:
            assert "episode" not in info
    assert truncated.all() and not terminated.any()
    # the returned observation is the new episode's; the last one is in final_obs
    assert obs[:, 0].tolist() == [0.0, 0.0]
    assert info["final_obs"][:, 0].tolist() == pytest.approx([4.0, -4.0])
    ep = info["episode"]
    assert ep["done"].all() and ep["length"].tolist() == [20, 20]
    assert ep["success"].tolist() == [True, False]  # env 0 passed x = 1 on the way
    assert cost.tolist() == [0.0, 1.0]  # the final step's cost, from final_info
    assert ep["cost"][1] == 18.0  # x < -0.5 from the 3rd step on (x = -0.6)
    assert ep["return"][0] == pytest.approx(-sum(abs(0.2 * (k + 1) - 1.0) for k in range(20)),
                                            rel=1e-5)


def test_spaces_and_vector_envs_it_cannot_drive_are_refused():
    with pytest.raises(ConfigError, match="acts in a Discrete space"):
        GymVecEnv("CartPole-v1")
    with pytest.raises(ConfigError, match="autoreset_mode=AutoresetMode.SAME_STEP"):
        GymVecEnv(SyncVectorEnv([_line]))
    assert GymVecEnv(SyncVectorEnv([_line], autoreset_mode=AutoresetMode.SAME_STEP)).num_envs == 1


@pytest.mark.slow
def test_sac_and_its_safety_critic_train_on_a_gymnasium_env(tmp_path: Path):
    from robot_rl.runner import Runner
    from robot_rl.train_config import TrainConfig

    small = SACConfig(actor_hidden=(32, 32), critic_hidden=(32, 32), batch_size=32,
                      buffer_size=4_000, learning_starts=80, gamma=0.95)
    cfg = TrainConfig(task="reach", env=make_task_config("reach"), num_envs=4,
                      total_steps=800, eval_every=400, eval_episodes=4, log_every=80,
                      runs_dir=tmp_path, run_name="line", progress=False, safety="both",
                      sac=small, safety_critic=SafetyConfig(hidden=(32, 32)))
    runner = Runner(cfg, env=GymVecEnv(_line, 4), eval_env=GymVecEnv(_line, 4))
    history = runner.train()
    assert runner.env_steps == 800 and [h["env_steps"] for h in history] == [4, 404, 800]
    buf = runner.buffer
    costly = buf.cost[: len(buf)] > 0
    assert costly.any()  # the env's info["cost"] reached the replay buffer
    # the safety critic learned where the cost is: left of -0.5, pushing further left
    critic = runner.agent.cost_critic
    assert critic is not None
    with torch.no_grad():
        obs = runner.agent.normalize(torch.tensor([[-0.9], [0.5]]))
        q = critic.q(obs, torch.tensor([[-1.0], [1.0]])).mean(0)
    assert q[0] > q[1]


class LineWithoutDt(Line):
    """``Line`` as most gymnasium envs are: no ``dt`` (MuJoCo's envs have one)."""

    dt = None  # type: ignore[assignment]


gymnasium.register("robot_rl_test/Line-v0",
                   entry_point=lambda: gymnasium.wrappers.TimeLimit(LineWithoutDt(), 20))


def test_robot_rl_train_gym_trains_evaluates_and_refuses_what_it_cannot_do(tmp_path: Path, cli):
    """``robot-rl train --gym ID``: a run named after the id with gymnasium's discount (the
    env gives no dt to derive one from), its policy evaluated by ``robot-rl eval``; export and
    the task's flags refused in one line."""
    import json

    small = ["--sac.actor-hidden", "32", "32", "--sac.critic-hidden", "32", "32",
             "--safety-critic.hidden", "32", "32", "--sac.batch-size", "32",
             "--sac.learning-starts", "40"]
    r = cli("train", "--gym", "robot_rl_test/Line-v0", "--num-envs", "2", "--total-steps",
            "120", "--eval-every", "60", "--eval-episodes", "2", "--runs-dir", str(tmp_path),
            "--no-progress", *small)
    assert r.returncode == 0, r.stderr
    (run,) = tmp_path.iterdir()
    assert run.name.startswith("robot_rl_test-Line-v0__sac__0__")
    saved = json.loads((run / "config.json").read_text())
    assert saved["gym"] == "robot_rl_test/Line-v0" and saved["sac"]["gamma"] == 0.99
    assert len((run / "eval.csv").read_text().splitlines()) == 1 + 3  # steps 2, 62, 120

    r = cli("eval", str(run), "--episodes", "4")
    assert r.returncode == 0, r.stderr
    assert "robot_rl_test/Line-v0 / actor" in r.stdout

    r = cli("export", str(run))
    assert r.returncode != 0 and "gymnasium env robot_rl_test/Line-v0" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    for flags in (["--dr", "off"], ["--mirror"], ["--env.episode-length", "50"],
                  ["--task", "push"]):
        r = cli("train", "--gym", "robot_rl_test/Line-v0", *flags)
        assert r.returncode != 0 and "not for a gymnasium env" in r.stderr, (flags, r.stderr)
    r = cli("finetune", "--gym", "robot_rl_test/Line-v0", "--demos", str(tmp_path))
    assert r.returncode != 0 and "--gym" in r.stderr
