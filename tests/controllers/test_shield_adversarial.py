"""Adversarial actions against the shield, judged by an independent checker.

Two kinds. The attack classes of ``robot_rl.bench.shield_attacks`` (drift into a limit and
hold, pumping at the arm's own rhythm, full-scale flips in contact with the table, NaN bursts
held, bang-bang saturation) run on every arm task and every target-based action space with
its default controller, 16 envs for 5 s each, on seeds the benchmark does not use; joints
are checked against their hard limits with no tolerance (MuJoCo's joint-limit constraint is
soft, so a joint that reaches its limit under force passes it by a little: the shield must
keep joints off their hard limits, and the benchmark measured 0.000 mrad), and speeds against
the robot's velocity limits (the shield holds them at ``velocity_fraction`` = 0.85 of those;
the limit itself is the line a real arm's controller faults at); the end effector must stay
inside the task's workspace box.

Then hypothesis draws action schedules (uniform random, saturated, NaN/inf bursts, high-frequency
sign flips, out-of-range values, in segments); the env runs them through the task's action
space, controller and shield. The checker reads MuJoCo's state directly (qpos/qvel at the
joints' addresses in the model, the end-effector framepos sensor) -- never the shield's flags --
and asserts after every control step: no joint beyond its hard limit, no joint faster than its
velocity limit, no end effector outside the workspace box, nothing non-finite.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robot_rl.bench.shield_attacks import ATTACKS, cases, run_attack
from robot_rl.controllers import (
    ActionConfig,
    EEDeltaConfig,
    EEPoseConfig,
    JointDeltaConfig,
    JointVelocityConfig,
)
from robot_rl.sim import make_env
from tests.conftest import ARM_TASKS

NUM_ENVS = 8
ATTACK_CASES = [(task, space, action, attack) for task, space, action in cases(ARM_TASKS, osc=False)
                for attack in ATTACKS]


@pytest.mark.slow
@pytest.mark.parametrize(("task", "space", "action", "attack"), ATTACK_CASES,
                         ids=[f"{t}-{s}-{a}" for t, s, _, a in ATTACK_CASES])
def test_attack_classes_never_pass_a_hard_limit_or_a_speed_limit(task, space, action, attack):
    r = run_attack(task, action, attack, num_envs=16, steps=250, seed=7)
    assert r.q_excess == 0.0, f"{r.worst_joint} {r.q_excess * 1e3:.3f} mrad beyond its hard limit"
    assert r.speed_ratio <= 1.0, f"a joint at {r.speed_ratio:.3f} of its speed limit"
    assert r.ee_excess == 0.0, f"end effector {r.ee_excess * 1e3:.2f} mm outside the workspace"
    assert r.diverged == 0


MOTION_CASES = [(task, space, action, attack) for task, space, action in cases(ARM_TASKS, osc=False)
                if space in ("joint_delta", "ee_delta") for attack in ("drift", "pump", "saturate")]


@pytest.mark.slow
@pytest.mark.parametrize(("task", "space", "action", "attack"), MOTION_CASES,
                         ids=[f"{t}-{s}-{a}-motion" for t, s, _, a in MOTION_CASES])
def test_attacks_through_the_motion_profile_stay_within_the_limits(task, space, action, attack):
    """The profile sits in front of the shield: it shapes what reaches it, and the shield
    still holds the hard limits behind it."""
    r = run_attack(task, action, attack, num_envs=16, steps=250, seed=7, motion=True)
    assert r.q_excess == 0.0, f"{r.worst_joint} {r.q_excess * 1e3:.3f} mrad beyond its hard limit"
    assert r.speed_ratio <= 1.0, f"a joint at {r.speed_ratio:.3f} of its speed limit"
    assert r.ee_excess == 0.0, f"end effector {r.ee_excess * 1e3:.2f} mm outside the workspace"
    assert r.diverged == 0


PATTERNS = ("uniform", "saturated", "nan_burst", "sign_flip", "out_of_range")
SEGMENT = st.tuples(st.sampled_from(PATTERNS), st.integers(5, 60), st.floats(0.05, 0.5))


class Checker:
    """Reads the simulation's state through the model's own addresses."""

    def __init__(self, env) -> None:  # type: ignore[no-untyped-def]
        m, r = env.model, env.robot
        self.backend = env.backend
        self.qadr = [int(m.joint(n).qposadr[0]) for n in r.joint_names]
        self.vadr = [int(m.joint(n).dofadr[0]) for n in r.joint_names]
        s = m.sensor("ee_pos")
        self.ee = slice(int(s.adr[0]), int(s.adr[0]) + 3)
        f64 = torch.float64
        self.q_lo, self.q_hi = torch.tensor(r.q_min, dtype=f64), torch.tensor(r.q_max, dtype=f64)
        self.qd_max = torch.tensor(r.qd_max, dtype=f64)
        self.ws_lo = torch.tensor(env.cfg.safety.workspace_lo, dtype=f64)
        self.ws_hi = torch.tensor(env.cfg.safety.workspace_hi, dtype=f64)

    def __call__(self, step: int) -> None:
        b = self.backend
        assert bool(torch.isfinite(b.qpos).all() & torch.isfinite(b.qvel).all()
                    & torch.isfinite(b.ctrl).all()), f"non-finite state at step {step}"
        q, qd = b.qpos[:, self.qadr], b.qvel[:, self.vadr]
        ee = b.sensordata[:, self.ee]
        assert bool(((q >= self.q_lo) & (q <= self.q_hi)).all()), \
            f"joint beyond its hard limit at step {step}: {q}"
        assert bool((qd.abs() <= self.qd_max).all()), \
            f"joint beyond its velocity limit at step {step}: {qd / self.qd_max}"
        assert bool(((ee >= self.ws_lo) & (ee <= self.ws_hi)).all()), \
            f"end effector outside the workspace at step {step}: {ee}"


def _actions(pattern: str, step: int, prob: float, shape: tuple[int, int],
             gen: torch.Generator, prev: torch.Tensor) -> torch.Tensor:
    u = torch.rand(shape, generator=gen) * 2 - 1
    if pattern == "uniform":
        return u
    if pattern == "saturated":
        return torch.sign(u)
    if pattern == "sign_flip":  # full-scale bang-bang at the control rate
        return (1.0 if step % 2 else -1.0) * torch.sign(prev + 1e-3)
    if pattern == "out_of_range":
        return u * 50.0
    bad = torch.rand(shape, generator=gen) < prob  # nan_burst
    junk = torch.where(torch.rand(shape, generator=gen) < 0.5, float("nan"), float("inf"))
    return torch.where(bad, junk * torch.sign(u), u)


def _attack(task: str, action: ActionConfig | None, schedule: list, seed: int) -> None:
    kw = {} if action is None else {"action": action}
    env = make_env(task, NUM_ENVS, seed=seed, **kw)
    env.reset(seed=seed)
    check = Checker(env)
    gen = torch.Generator().manual_seed(seed)
    prev = torch.ones(NUM_ENVS, env.act_dim)
    step = 0
    for pattern, length, prob in schedule:
        for _ in range(length):
            a = _actions(pattern, step, prob, (NUM_ENVS, env.act_dim), gen, prev)
            env.step(a)
            prev = torch.nan_to_num(a, nan=1.0).clamp(-1, 1)
            check(step)
            step += 1
    assert int(env.diverged_count.sum()) == 0


def _schedule(min_steps: int) -> st.SearchStrategy:
    return st.lists(SEGMENT, min_size=3, max_size=12).filter(
        lambda segs: sum(n for _, n, _ in segs) >= min_steps)


# Each example runs >= 250 control steps of 8 envs; 5 examples give >= 10k env control steps.
@pytest.mark.slow
@pytest.mark.parametrize("task", ARM_TASKS)
@settings(max_examples=5, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(schedule=_schedule(250), seed=st.integers(0, 2**16))
def test_default_action_space_never_violates_the_limits(task: str, schedule: list,
                                                        seed: int) -> None:
    _attack(task, None, schedule, seed)


@pytest.mark.slow
@pytest.mark.parametrize(("task", "action"), [
    ("reach", EEDeltaConfig(gripper=False)),
    ("lift", EEPoseConfig()),
    ("push", JointVelocityConfig()),
    ("push", JointDeltaConfig(scale=0.3)),
])
@settings(max_examples=3, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(schedule=_schedule(200), seed=st.integers(0, 2**16))
def test_other_action_spaces_never_violate_the_limits(task: str, action: ActionConfig,
                                                      schedule: list, seed: int) -> None:
    _attack(task, action, schedule, seed)
