"""The MuJoCo Warp backend on Warp's CPU device (CI has no GPU): the same tasks as the CPU
backend, agreeing within float32 tolerance; resets and randomization; limits and refusals.

Warp compiles its kernels on first use into ``$ROBOT_RL_WARP_CACHE`` (default
``~/.cache/robot_rl/warp``): a cold cache adds about three minutes to this module, a warm
one seconds. The scenes are the tasks' own small ones.
"""

from __future__ import annotations

import copy

import mujoco
import numpy as np
import pytest
import torch

pytest.importorskip("mujoco_warp", reason="the warp backend comes with the gpu extra")

from robot_rl.errors import ConfigError  # noqa: E402
from robot_rl.sim import WarpOptions, make_env  # noqa: E402
from robot_rl.sim.backends.warp import CapacityError  # noqa: E402
from robot_rl.sim.backends.warp_setup import collision_pairs, scene_capacity  # noqa: E402
from robot_rl.sim.env import BatchedEnv  # noqa: E402
from tests.conftest import ALL_TASKS  # noqa: E402

# Largest |warp - cpu| allowed after 40 control steps of random actions, from one state.
# float32 rounding (~1e-7 relative) grows slowly without contacts; the contact-rich tasks
# (push: puck on the table; pusher: the arm strikes the object) amplify it through the
# contact solver, so their tolerance is looser. Rewards and observations are compared at the
# same tolerance; costs and terminations must agree exactly.
TOLERANCE = {"reach": 1e-4, "reach_hazard": 1e-4, "lift": 1e-3, "push": 2e-3, "pusher": 2e-2}
STEPS = 40


def copy_state(src: BatchedEnv, dst: BatchedEnv) -> None:
    """Give ``dst`` the simulation and task state of ``src`` (the same task)."""
    for name in ("qpos", "qvel", "ctrl", "mocap_pos"):
        getattr(dst.backend, name).copy_(getattr(src.backend, name))
    for key, value in src.state.buffers.items():
        dst.state.buffers[key].copy_(value)
    ids = torch.arange(dst.num_envs)
    dst.pipeline.reset(ids, dst.state.joint_pos)
    dst.backend.forward(ids)


# reach_hazard is reach's scene, terms and physics with a hazard added: it stands for reach
@pytest.mark.slow
@pytest.mark.parametrize("task", [t for t in ALL_TASKS if t != "reach"])
def test_warp_matches_cpu_over_40_control_steps(task):
    n, tol = 4, TOLERANCE[task]
    cpu = make_env(task, n, seed=0, episode_length=STEPS + 10)
    warp = make_env(task, n, backend="warp", device="cpu", seed=0, episode_length=STEPS + 10)
    assert warp.backend.dtype == torch.float32 and warp.obs_dim == cpu.obs_dim
    copy_state(cpu, warp)
    torch.testing.assert_close(warp.observe(noise=False), cpu.observe(noise=False),
                               atol=1e-5, rtol=0)
    gen = torch.Generator().manual_seed(1)
    worst = 0.0
    for _ in range(STEPS):
        action = 2 * torch.rand(n, cpu.act_dim, generator=gen) - 1
        ow, rw, cw, tw, uw, _ = warp.step(action)
        oc, rc, cc, tc, uc, _ = cpu.step(action)
        worst = max(worst, float((warp.state.qpos.double() - cpu.state.qpos).abs().max()))
        torch.testing.assert_close(ow, oc, atol=tol, rtol=0)
        torch.testing.assert_close(rw, rc, atol=tol, rtol=0)
        assert torch.equal(cw, cc) and torch.equal(tw, tc) and torch.equal(uw, uc)
    assert worst < tol
    assert not uw.any(), "an episode ended: the comparison must not cross a reset"


@pytest.mark.slow
def test_resets_and_randomization_agree_in_distribution():
    n = 256
    envs = {b: make_env("push", n, backend=b, device="cpu", dr="strong", seed=5)
            for b in ("cpu", "warp")}
    cpu, warp = envs["cpu"], envs["warp"]

    def stats(x: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
        x = x.double().reshape(n, -1)
        return x.mean(0).numpy(), x.std(0).numpy()

    # Initial states (joint noise, puck and goal placement) and per-env parameters are draws
    # of the same distributions: means agree within 5 standard errors, spreads within 20%.
    pairs = [("qpos", cpu.state.qpos, warp.state.qpos),
             ("goal", cpu.backend.mocap_pos, warp.backend.mocap_pos)]
    for field in ("body_mass", "geom_friction", "dof_damping", "actuator_gainprm"):
        pairs.append((field, cpu.backend.model_field(field), warp.backend.model_field(field)))
    for name, a, b in pairs:
        (ma, sa), (mb, sb) = stats(a), stats(b)
        moving = sa > 1e-9
        assert np.array_equal(moving, sb > 1e-9), name
        assert np.allclose(ma[~moving], mb[~moving], atol=1e-5), name
        err = np.abs(ma - mb)[moving] / (sa[moving] / np.sqrt(n))
        assert err.max() < 5, (name, err.max())
        assert np.allclose(sa[moving], sb[moving], rtol=0.2), name
    assert abs(cpu._actuation.delay.double().mean() - warp._actuation.delay.double().mean()) < 0.4

    # The constants MuJoCo derives from masses and armature (set_const) match MuJoCo's own
    # for the worlds' drawn parameters.
    import warp as wp

    wm = warp.backend._m
    for world in (0, 17, 255):
        m = _with_world_params(warp, world)
        mujoco.mj_setConst(m, mujoco.MjData(m))
        np.testing.assert_allclose(wp.to_torch(wm.body_subtreemass)[world].numpy(),
                                   m.body_subtreemass, rtol=1e-5)
        np.testing.assert_allclose(wp.to_torch(wm.dof_invweight0)[world].numpy(),
                                   m.dof_invweight0, rtol=1e-3)

    # A partial reset: the reset worlds get fresh states with current sensors, the others
    # keep theirs exactly.
    for _ in range(3):
        warp.step(warp.random_action())
    before = warp.backend.sensordata.clone()
    qpos_before = warp.state.qpos.clone()
    ids = torch.tensor([3, 100, 200])
    warp._reset_envs(ids)
    others = torch.ones(n, dtype=torch.bool)
    others[ids] = False
    assert torch.equal(warp.backend.sensordata[others], before[others])
    assert torch.equal(warp.state.qpos[others], qpos_before[others])
    data = mujoco.MjData(warp.model)
    for i in ids.tolist():
        warp.backend.write_data(i, data)  # runs mj_forward at the world's state
        np.testing.assert_allclose(warp.state.sensors["ee_pos"][i].numpy(),
                                   data.sensor("ee_pos").data, atol=1e-5)
    assert (warp.state.episode_step[ids] == 0).all()


def _with_world_params(env: BatchedEnv, world: int) -> mujoco.MjModel:
    """A copy of the env's model with one world's randomized masses, inertias, armature."""
    m = copy.copy(env.model)
    for field in ("body_mass", "body_inertia", "dof_armature"):
        values = env.backend.model_field(field)[world].double().numpy()
        getattr(m, field)[:] = values
    return m


def test_running_out_of_contact_room_is_a_clear_error():
    env = make_env("push", 2, backend="warp", device="cpu",
                   warp=WarpOptions(njmax=4, check_every=1))
    with pytest.raises(CapacityError, match=r"njmax=4 .*--warp.njmax"):
        for _ in range(5):
            env.step(env.random_action())


def test_scene_capacity_counts_collidable_pairs():
    xml = """<mujoco><worldbody>
      <geom name="floor" type="plane" size="1 1 .1"/>
      <body pos="0 0 .2"><freejoint/><geom type="box" size=".1 .1 .1"/>
        <body pos="0 0 .3"><joint/><geom type="sphere" size=".05"/></body></body>
      <body pos="1 0 .2"><freejoint/><geom type="capsule" size=".05 .1" contype="0"
        conaffinity="0"/></body>
    </worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    # floor-box (4 contacts), floor-sphere (1); box-sphere are parent and child; the capsule
    # collides with nothing.
    assert len(collision_pairs(m)) == 2
    cap = scene_capacity(m)
    assert cap.nconmax == 5
    # pyramidal cone, condim 3: 4 rows per contact
    assert cap.njmax == 5 * 4


def test_unsupported_features_are_refused_by_name():
    from robot_rl.sim.backends.warp import WarpBackend

    xml = '<mujoco><option solver="PGS"/><worldbody><body><freejoint/><geom size=".1"/>' \
          '</body></worldbody></mujoco>'
    with pytest.raises(ConfigError, match="mjSOL_PGS"):
        WarpBackend(mujoco.MjModel.from_xml_string(xml), 2, device="cpu", what="a PGS scene")


def test_device_errors_name_the_fix():
    with pytest.raises(ConfigError, match="no device 'cuda:3'"):
        make_env("reach", 2, backend="warp", device="cuda:3")
    with pytest.raises(ConfigError, match="needs backend='warp'"):
        make_env("reach", 2, backend="cpu", device="cuda")
