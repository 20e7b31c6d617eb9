"""Expert styles: multimodal experts really take different ways and succeed; the human-like
style departs from its expert as configured; episode starts are noticed on auto-reset."""

from __future__ import annotations

import pytest
import torch

from robot_rl.errors import ConfigError
from robot_rl.sim import make_env
from robot_rl.sim.experts import HumanLikeConfig, make_expert


def test_push_modes_go_round_opposite_sides_of_the_puck() -> None:
    env = make_env("push", 6)
    expert = make_expert(env, "multimodal", seed=1)
    env.reset(seed=0)
    seen_side = torch.zeros(6)
    for _ in range(120):
        action = expert(env.state)
        s = env.state
        puck, ee = s.sensors["puck_pos"][:, :2], s.sensors["ee_pos"][:, :2]
        line = s.buffers["goal"][:, :2] - puck
        u = line / torch.linalg.vector_norm(line, dim=1, keepdim=True)
        lateral = ((ee - puck) * torch.stack([-u[:, 1], u[:, 0]], dim=1)).sum(dim=1)
        beside = expert.memory[:, 0] == 2  # low beside the puck, heading for the corner
        seen_side = torch.where(beside, torch.sign(lateral).float(), seen_side)
        env.step(action)
    modes = expert.mode
    assert set(modes.tolist()) == {0, 1}, "six episodes drew one mode only"
    assert (seen_side != 0).all(), "some env never went beside the puck"
    # mode 0 passes on the puck's left of the push line (+n), mode 1 on its right
    assert torch.equal(seen_side, torch.where(modes == 0, 1.0, -1.0))


@pytest.mark.slow
def test_lift_modes_grasp_across_different_faces_and_succeed() -> None:
    env = make_env("lift", 8, episode_length=200)
    expert = make_expert(env, "multimodal", seed=0)
    env.reset(seed=0)
    success = torch.zeros(8, dtype=torch.bool)
    grasp_yaw = torch.zeros(8)
    for _ in range(200):
        action = expert(env.state)
        grasp_yaw = expert.memory[:, 1].clone()
        _, _, _, _, _, info = env.step(action)
        success |= info["success"]
    assert set(expert.mode.tolist()) == {0, 1}
    assert success.float().mean() >= 0.75, f"multimodal lift success {success.tolist()}"
    assert bool(success[expert.mode == 1].any()), "no grasp of the turned mode succeeded"
    # mode 1's grasp is a quarter turn from the cube's nearest face-aligned yaw
    turned = grasp_yaw[expert.mode == 1].abs()
    assert (turned > torch.pi / 4 - 1e-4).all() and (turned < torch.pi / 2 + 1e-4).all()


def test_modes_are_redrawn_when_an_env_resets_itself() -> None:
    env = make_env("push", 8, episode_length=3)
    expert = make_expert(env, "multimodal", seed=0)
    env.reset(seed=0)
    drawn = []
    for _ in range(12):
        action = expert(env.state)
        if bool((env.state.episode_step == 0).all()):
            drawn.append(expert.mode.clone())
        env.step(action)
    assert len(drawn) == 4  # every env restarted itself after 3 steps
    assert any(not torch.equal(drawn[0], d) for d in drawn[1:])


QUIET = HumanLikeConfig(speed=(1.0, 1.0), jitter_std=0.0, pause_rate=0.0, detour_prob=0.0)


@pytest.mark.slow
def test_human_style_pauses_jitters_and_is_seeded() -> None:
    human = HumanLikeConfig(pause_rate=10.0, detour_prob=1.0)

    def run(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        env = make_env("push", 4)
        expert = make_expert(env, "human", seed=seed, human=human)
        ref = make_expert(env, "human", seed=seed, human=QUIET)  # the same expert, unhumanized
        env.reset(seed=0)
        actions, plain = [], []
        for _ in range(40):
            plain.append(ref(env.state))
            actions.append(expert(env.state))
            env.step(actions[-1])
        return torch.stack(actions), torch.stack(plain)

    a, plain = run(0)
    assert torch.equal(a, run(0)[0]), "the same seed must give the same demonstrations"
    assert not torch.equal(a, run(1)[0])
    paused = (a == 0).all(dim=2)
    assert bool(paused.any()), "no pause in 40 steps at 20% per step"
    moving = ~paused
    assert float((a - plain)[moving].abs().mean()) > 0.02, "no jitter or detour"


def test_the_human_style_keeps_its_times_in_seconds_at_any_control_rate() -> None:
    """A pause of 0.2 s is 10 control steps at 50 Hz and 4 at 20 Hz (decimation 25); the
    jitter's correlation over one step is 0.9 at 50 Hz and 0.9 ** 2.5 at 20 Hz."""
    human = HumanLikeConfig(pause_rate=1e6, pause_time=(0.2, 0.2), detour_prob=0.0)
    for decimation, steps, rho in ((10, 10, 0.9), (25, 4, 0.9 ** 2.5)):
        env = make_env("push", 2, decimation=decimation)
        expert = make_expert(env, "human", seed=0, human=human)
        env.reset(seed=0)
        assert bool((expert(env.state) == 0).all()), "a pause starts at once at this rate"
        # the pause counter is decremented on the step that starts it
        assert expert.pause_left.tolist() == [steps - 1] * 2
        assert human.jitter_corr ** (expert.dt / 0.02) == pytest.approx(rho)


def test_styles_a_task_lacks_are_refused() -> None:
    with pytest.raises(ConfigError, match="no multimodal expert"):
        make_expert(make_env("reach", 1), "multimodal")
    with pytest.raises(ConfigError, match="no scripted expert"):
        make_expert(make_env("pusher", 1), "human")
    with pytest.raises(ConfigError, match="unknown expert style"):
        make_expert(make_env("reach", 1), "sloppy")  # type: ignore[arg-type]


def test_reach_human_style_uses_the_scripted_expert() -> None:
    env = make_env("reach", 2)
    expert = make_expert(env, "human", human=QUIET)
    env.reset(seed=0)
    for _ in range(5):
        assert torch.allclose(expert(env.state), env.expert_action())
        env.step(env.expert_action())


@pytest.mark.slow
def test_push_expert_acts_in_end_effector_position_offsets() -> None:
    """In ee-delta (position only) the expert's action is the wanted move over the space's
    scale: it points from the hand to its waypoint, and the scripted push succeeds."""
    from robot_rl.controllers import EEDeltaConfig

    env = make_env("push", 6, episode_length=300,
                   action=EEDeltaConfig(rotation=False, gripper=False))
    expert = make_expert(env, "scripted")
    env.reset(seed=0)
    first = expert(env.state)
    assert first.shape == (6, 3) and float(first.abs().max()) <= 1.0
    # at home the hand is high above the table: the first move is down toward push height
    assert (first[:, 2] < 0).all()
    success = torch.zeros(6, dtype=torch.bool)
    for _ in range(300):
        _, _, _, _, _, info = env.step(expert(env.state))
        success |= info["success"]
    assert success.all(), f"scripted push in ee-position: {success.tolist()}"


def test_experts_refuse_action_spaces_they_cannot_act_in() -> None:
    from robot_rl.controllers import JointTorqueConfig

    env = make_env("push", 2, action=JointTorqueConfig())
    env.reset(seed=0)
    with pytest.raises(ConfigError, match="joint_delta or ee_delta, not joint_torque"):
        make_expert(env, "scripted")(env.state)


def test_the_experts_come_down_slowly_near_the_table() -> None:
    from robot_rl.sim.tasks.expert_motion import eased_down

    z_push = 0.028  # the expert's push height; the slow zone is 3 cm above it, steps 1.2 cm
    ee = torch.tensor([[0.5, 0.0, z_push + 0.10], [0.5, 0.0, z_push + 0.02],
                       [0.5, 0.0, z_push + 0.005], [0.5, 0.0, z_push]])
    target = torch.tensor([[0.6, 0.1, z_push], [0.5, 0.0, z_push], [0.5, 0.0, z_push],
                           [0.5, 0.0, z_push + 0.06]])
    err = eased_down(target, ee, z_push)
    assert torch.allclose(err[:, :2], (target - ee)[:, :2])  # sideways as asked
    # fast down to the zone's top; then 1.2 cm below the hand at most; up as asked
    assert torch.allclose(err[:, 2], torch.tensor([-0.07, -0.012, -0.005, 0.06]), atol=1e-6)


@pytest.mark.slow
def test_the_scripted_push_expert_leaves_the_shield_idle_with_the_motion_profile() -> None:
    from robot_rl.bench.behaviour import expert_policy, measure

    b = measure(*expert_policy("push", "scripted", motion=True, num_envs=16, seed=0),
                rounds=1, seed=0)
    # without the slow last centimetres the floor layer acted on about 7% of the steps
    assert b.any_layer <= 0.05 and b.layers.get("table_floor", 0.0) <= 0.03, b
