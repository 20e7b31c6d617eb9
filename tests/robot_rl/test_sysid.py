"""System identification: the excitation, the batched replay against an independent
single-simulation recording, a two-parameter fit, the parameter file."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import mujoco
import numpy as np
import pytest
import torch

from robot_rl.errors import ConfigError
from robot_rl.hardware.configs import SimRobotConfig
from robot_rl.hardware.sim_robot import build_model
from robot_rl.recording.arm_import import ArmStreams
from robot_rl.robots import RobotSpec, get_robot
from robot_rl.sim.identified import IdentifiedDynamics
from robot_rl.sysid.configs import ExcitationConfig, FitConfig, ReplayConfig
from robot_rl.sysid.excitation import excitation
from robot_rl.sysid.fit import fit, identified
from robot_rl.sysid.replay import Replay

ROBOT = get_robot("arm7")
DT = 0.002


def record(params: IdentifiedDynamics | None, t_cmd: np.ndarray, q_cmd: np.ndarray,
           delay: int, sample_every: int = 2, noise: float = 0.0, seed: int = 0,
           robot: RobotSpec = ROBOT) -> ArmStreams:
    """The arm (``params`` applied) driven by the commands, one MjData stepped by hand, with
    the simulated arm's conventions: a command sent at c acts from the first physics step
    starting at or after c + delay * dt; a reading stamped s is the state after the step
    that starts at s, with that step's actuator force as its effort."""
    m = build_model(SimRobotConfig(physics_dt=DT, robot=robot.name), robot)
    if params is not None:
        params.apply(m, robot)
    d = mujoco.MjData(m)
    qa = [int(m.joint(j).qposadr[0]) for j in robot.joint_names]
    va = [int(m.joint(j).dofadr[0]) for j in robot.joint_names]
    act = [int(m.actuator(a).id) for a in robot.actuator_names]
    d.qpos[qa] = q_cmd[0]
    d.ctrl[act] = q_cmd[0]
    if robot.gripper is not None:
        d.ctrl[m.actuator(robot.gripper.actuator).id] = robot.gripper.closed_ctrl
    mujoco.mj_forward(m, d)
    rng = np.random.default_rng(seed)
    steps = int(round(t_cmd[-1] / DT)) + 1
    js_t, q, qd, eff = [], [], [], []
    for k in range(steps):
        s = k * DT
        i = np.searchsorted(t_cmd, s - delay * DT + 1e-9, side="right") - 1
        d.ctrl[act] = q_cmd[max(i, 0)]
        mujoco.mj_step(m, d)
        if k % sample_every == 0:
            js_t.append(s)
            q.append(d.qpos[qa] + rng.normal(0.0, noise, len(qa)))
            qd.append(d.qvel[va].copy())
            eff.append(d.actuator_force[act].copy())
    return ArmStreams(js_t=np.array(js_t), q=np.array(q), qd=np.array(qd), cmd_t=t_cmd,
                      cmd=q_cmd, effort=np.array(eff))


def short_excitation(duration: float = 3.0, robot: RobotSpec = ROBOT
                     ) -> tuple[np.ndarray, np.ndarray]:
    return excitation(robot, ExcitationConfig(duration=duration, ramp=0.5, band=(0.5, 2.5),
                                              step_size=0.0))


def truth(robot: RobotSpec = ROBOT, **values: float) -> IdentifiedDynamics:
    n = robot.num_joints
    return IdentifiedDynamics(robot=robot.name, joint_names=tuple(robot.joint_names),
                              values={p: (v,) * n for p, v in values.items()})


def test_excitation_within_limits_and_at_rest_at_both_ends() -> None:
    cfg = ExcitationConfig(duration=6.0, ramp=1.0)
    t, q = excitation(ROBOT, cfg)
    home = np.asarray(ROBOT.home)
    assert q.shape == (len(t), ROBOT.num_joints)
    np.testing.assert_allclose(np.diff(t), 1.0 / cfg.rate)
    assert np.all(np.abs(q - home) <= cfg.amplitude + 1e-9)
    assert np.all(q >= np.asarray(ROBOT.q_min) + cfg.limit_margin - 1e-9)
    assert np.all(q <= np.asarray(ROBOT.q_max) - cfg.limit_margin + 1e-9)
    speed = np.abs(np.diff(q, axis=0)).max(axis=0) * cfg.rate
    multisine = int(cfg.duration * cfg.rate)
    speed_sines = np.abs(np.diff(q[:multisine], axis=0)).max(axis=0) * cfg.rate
    assert np.all(speed_sines <= cfg.speed * np.asarray(ROBOT.qd_max) * 1.01)
    assert np.all(speed > 0)  # every joint moves
    np.testing.assert_allclose(q[0], home, atol=1e-9)
    np.testing.assert_allclose(q[multisine - 1], home, atol=1e-9)
    # then the steps: each joint up, back, down, back
    assert len(t) == multisine + round(cfg.step_hold * cfg.rate) * (1 + 4 * ROBOT.num_joints)
    with pytest.raises(ConfigError):
        excitation(ROBOT, ExcitationConfig(duration=1.0, ramp=1.0))


@pytest.mark.parametrize("name", ["arm7", "ur6", "so5"])
def test_replay_reproduces_an_independent_recording_at_the_true_parameters(name: str) -> None:
    robot = get_robot(name)  # every built-in arm: 7, 6 and 5 joints
    t, q = short_excitation(robot=robot)
    true = truth(robot, link_mass=1.3, actuator_gain=0.8)
    rec = record(true, t, q, delay=2, robot=robot)
    replay = Replay(rec, robot, ReplayConfig(segment=1.0, max_delay=4))
    n = robot.num_joints
    values = {"link_mass": torch.tensor([[1.3] * n, [1.0] * n]),
              "actuator_gain": torch.tensor([[0.8] * n, [1.0] * n])}
    tr = replay.run(values, torch.tensor([2, 2]))
    err = replay.rms_q(tr)
    # the truth replays the recording to rounding (each segment restarts from a reading,
    # which holds the positions and velocities but not the integrator's warm start)
    assert float(err[0]) < 1e-5, err
    assert float(err[1]) > 100 * float(err[0])
    np.testing.assert_array_less(replay.cost_of(tr)[0], replay.cost_of(tr)[1])
    # the wrong delay is worse than the right one
    costs = replay.cost({}, torch.arange(5)).numpy()
    truth_only = {p: v[:1] for p, v in values.items()}
    assert replay.cost(truth_only, torch.tensor([2]))[0] < costs.min()
    with pytest.raises(ConfigError):
        replay.run(values, torch.tensor([2, 9]))


@pytest.mark.slow
def test_replay_on_warps_cpu_device_agrees_with_the_cpu_backend() -> None:
    """The replay through MuJoCo Warp (its CPU device here; CUDA where a GPU is lent): the
    same trajectories within float32 rounding, the same costs at every delay."""
    pytest.importorskip("mujoco_warp")
    t, q = short_excitation()
    rec = record(truth(link_mass=1.3, actuator_gain=0.8), t, q, delay=2)
    n = ROBOT.num_joints
    values = {"link_mass": torch.tensor([[1.3] * n, [1.0] * n]),
              "actuator_gain": torch.tensor([[0.8] * n, [1.0] * n])}
    cfg = ReplayConfig(segment=1.0, max_delay=4)
    cpu = Replay(rec, ROBOT, cfg)
    warp = Replay(rec, ROBOT, cfg, backend="warp", device="cpu")
    err = warp.rms_q(warp.run(values, torch.tensor([2, 2])))
    assert float(err[0]) < 1e-6 and float(err[1]) > 1e-3, err  # the truth, to float32
    torch.testing.assert_close(err[1], cpu.rms_q(cpu.run(values, torch.tensor([2, 2])))[1],
                               rtol=1e-4, atol=0)
    torch.testing.assert_close(warp.cost({}, torch.arange(5)), cpu.cost({}, torch.arange(5)),
                               rtol=1e-3, atol=1e-6)


@pytest.mark.slow
def test_two_parameter_fit_finds_mass_and_gain_within_a_few_percent() -> None:
    t, q = short_excitation(3.0)
    true = truth(link_mass=1.25, actuator_gain=0.8)
    rec = record(true, t, q, delay=2, noise=1e-4)
    replay = Replay(rec, ROBOT, ReplayConfig(segment=1.0, max_delay=4))
    lines: list[str] = []
    result = fit(replay, FitConfig(params=("link_mass", "actuator_gain"),
                                   shared=("link_mass", "actuator_gain"), population=8,
                                   generations=25, survey=8, restarts=1, seed=0),
                 log=lines.append)
    assert result.delay == 2
    mass, gain = float(result.values["link_mass"][0]), float(result.values["actuator_gain"][0])
    assert abs(mass / 1.25 - 1) < 0.03 and abs(gain / 0.8 - 1) < 0.03, (mass, gain)
    assert result.rms_fit * 5 < result.rms_nominal
    assert all(np.isfinite(s).all() for s in result.std.values())
    assert any("generation" in line for line in lines)
    params = identified(result, replay)
    assert params.action_delay == pytest.approx(2 * DT)
    assert params.fit["rms_fit"] == result.rms_fit


def test_parameter_file_round_trip_and_refusals(tmp_path) -> None:  # type: ignore[no-untyped-def]
    p = truth(link_mass=1.2, frictionloss=0.5)
    p = dataclasses.replace(p, action_delay=0.004, std={"link_mass": (0.01,) * 7})
    p.save(tmp_path / "arm.json")
    back = IdentifiedDynamics.load(tmp_path / "arm.json")
    assert back == p
    m0 = build_model(SimRobotConfig(), ROBOT)
    m = build_model(SimRobotConfig(), ROBOT)
    back.apply(m, ROBOT)
    b = m.joint(ROBOT.joint_names[2]).bodyid[0]
    assert m.body_mass[b] == pytest.approx(1.2 * m0.body_mass[b])
    dof = m.joint(ROBOT.joint_names[0]).dofadr[0]
    assert m.dof_frictionloss[dof] == pytest.approx(0.5)
    assert m.body_mass[0] == m0.body_mass[0]  # the world is no link
    with pytest.raises(ConfigError, match="unknown dynamics parameter"):
        IdentifiedDynamics(robot="arm7", joint_names=p.joint_names,
                           values={"link_scale": (1.0,) * 7})
    with pytest.raises(ConfigError, match="7 finite"):
        IdentifiedDynamics(robot="arm7", joint_names=p.joint_names,
                           values={"link_mass": (1.0,) * 6})
    other = dataclasses.replace(p, joint_names=tuple(reversed(p.joint_names)))
    with pytest.raises(ConfigError, match="joints"):
        other.apply(m, ROBOT)
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ConfigError, match="not an identified"):
        IdentifiedDynamics.load(tmp_path / "bad.json")


def test_make_env_takes_the_identified_arm_and_centres_randomization(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from robot_rl.sim import make_env

    p = dataclasses.replace(truth(link_mass=1.4, actuator_gain=0.9),
                            std={"link_mass": (0.035,) * 7, "actuator_gain": (0.009,) * 7})
    p.save(tmp_path / "arm.json")
    nominal = make_env("reach", 2, dr="default")
    env = make_env("reach", 2, dr="default", identified=str(tmp_path / "arm.json"))
    b = env.model.joint(ROBOT.joint_names[3]).bodyid[0]
    assert env.model.body_mass[b] == pytest.approx(1.4 * nominal.model.body_mass[b])
    a = env.model.actuator(ROBOT.actuator_names[0]).id
    assert env.model.actuator_gainprm[a, 0] == pytest.approx(
        0.9 * nominal.model.actuator_gainprm[a, 0])
    # ranges: 1 +- 2 relative stds (0.035 of 1.4 -> 0.05; 0.009 of 0.9 -> 0.02), no wider
    # than the preset's (+-10%: a std of 0.7 gives +-0.1, +-0.95 without a preset range);
    # the rest as given
    assert env.dr.link_mass == pytest.approx((0.95, 1.05))
    assert env.dr.actuator_gain == pytest.approx((0.98, 1.02))
    wide = dataclasses.replace(p, std={"link_mass": (0.7,) * 7})
    assert wide.centred_dr(nominal.dr, 2.0).link_mass == pytest.approx((0.9, 1.1))
    from robot_rl.sim.configs import DRConfig

    assert wide.centred_dr(DRConfig(), 2.0).link_mass == pytest.approx((0.05, 1.95))
    assert env.dr.joint_damping == nominal.dr.joint_damping
    # and the randomized masses scatter around the identified ones
    masses = env.backend.model_field("body_mass")[:, b]
    assert torch.all((masses > 0.94 * 1.4 * nominal.model.body_mass[b])
                     & (masses < 1.06 * 1.4 * nominal.model.body_mass[b]))
    keep = make_env("reach", 2, dr="default", identified=str(tmp_path / "arm.json"),
                    identified_dr=None)
    assert keep.dr.link_mass == nominal.dr.link_mass
    with pytest.raises(ConfigError, match="no identified-dynamics file"):
        make_env("reach", 1, identified=str(tmp_path / "missing.json"))


def test_a_relative_identified_path_is_kept_absolute(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A run saved with ``--env.identified arm.json`` loads from another directory."""
    from robot_rl.config_io import from_dict, to_dict
    from robot_rl.sim import make_env, make_task_config
    from robot_rl.sim.tasks.config import TaskConfig

    truth(link_mass=1.4).save(tmp_path / "arm.json")
    monkeypatch.chdir(tmp_path)
    saved = to_dict(make_task_config("reach", identified="arm.json"))
    assert saved["identified"] == str(tmp_path / "arm.json")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    env = make_env(from_dict(TaskConfig, saved), 1)
    assert env.identified is not None


def _recording(streams: ArmStreams, rate: float = 250.0):  # type: ignore[no-untyped-def]
    from robot_rl.sysid.record import Recording

    return Recording(robot="arm7", joint_names=tuple(ROBOT.joint_names), rate=rate,
                     streams=streams, reading_age=np.full(len(streams.js_t), 0.001),
                     shield_moved=0, late_ticks=0, seconds=float(streams.cmd_t[-1]))


def test_recording_dataset_round_trip_and_refusals(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from robot_rl.data.format import DatasetError
    from robot_rl.sysid.dataset import load_recordings, save_recording

    t, q = short_excitation(2.0)
    rec = record(None, t, q, delay=1)
    # one reading per command tick, as the recorder logs them (the newest at each tick)
    save_recording(_recording(rec), tmp_path / "rec")
    save_recording(_recording(rec), tmp_path / "rec")  # a second episode appends
    streams, age = load_recordings(tmp_path / "rec", ROBOT)
    assert len(streams) == 2 and age == pytest.approx(0.001, abs=1e-6)
    s = streams[0]
    # every reading that had arrived by the last command (the last one arrives 1 ms after)
    k = len(s.js_t)
    assert k == len(rec.js_t) - 1
    np.testing.assert_allclose(s.js_t, rec.js_t[:k], atol=1e-5)
    np.testing.assert_allclose(s.q, rec.q[:k], atol=1e-6)
    np.testing.assert_allclose(s.cmd, rec.cmd, atol=1e-6)
    np.testing.assert_allclose(s.cmd_t, rec.cmd_t, atol=1e-5)
    assert s.effort is not None
    # another robot's joints
    other = dataclasses.replace(ROBOT, joint_names=tuple(reversed(ROBOT.joint_names)))
    with pytest.raises(DatasetError, match="joints"):
        load_recordings(tmp_path / "rec", other)
    # joint readings too slow for the servo's dynamics (every 25th of 250 Hz: 10 Hz)
    slow = dataclasses.replace(rec, js_t=rec.js_t[::25], q=rec.q[::25], qd=rec.qd[::25],
                               effort=rec.effort[::25])
    save_recording(_recording(slow), tmp_path / "slow")
    with pytest.raises(DatasetError, match="10.0 Hz"):
        load_recordings(tmp_path / "slow", ROBOT)
    # a dataset of another task is no recording
    with pytest.raises(DatasetError, match="not an excitation recording"):
        from robot_rl.data.format import DatasetSpec
        from robot_rl.data.writer import DatasetWriter

        spec = DatasetSpec(fps=50, robot_type="arm7", task="reach", task_text="reach",
                           obs_names=("a",), action_names=("b",),
                           joint_names=tuple(ROBOT.joint_names), action_space={})
        with DatasetWriter(tmp_path / "reach", spec) as w:
            w.begin_episode()
            w.add_frame(obs=np.zeros(1), joint_pos=np.zeros(7), joint_vel=np.zeros(7),
                        action=np.zeros(1), next_obs=np.zeros(1), reward=0.0, cost=0.0,
                        terminated=False, truncated=True, success=False)
            w.save_episode()
        load_recordings(tmp_path / "reach", ROBOT)


def fit_shared_mass(data: Path, out: Path) -> dict:
    """robot-rl sysid fit of one mass scale shared by every link, on a small budget; the
    parameter file it wrote."""
    import json
    import subprocess
    import sys

    fitted = subprocess.run(
        [sys.executable, "-m", "robot_rl.cli", "sysid", "fit", str(data), "--out", str(out),
         "--fit.params", "link_mass", "--fit.shared", "link_mass", "--fit.population", "8",
         "--fit.generations", "15", "--fit.survey", "5", "--fit.restarts", "1",
         "--replay.segment", "1.0", "--replay.max-delay", "4"],
        capture_output=True, text=True, timeout=300)
    assert fitted.returncode == 0, fitted.stderr
    assert "identified dynamics" in fitted.stdout and "delay survey" in fitted.stdout
    return json.loads(out.read_text())


@pytest.mark.slow
def test_cli_records_the_simulated_arm_and_fits_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """robot-rl sysid record on the real-time simulated arm (its own process, masses x1.3,
    4 ms actuation delay), then robot-rl sysid fit of the shared mass scale."""
    import subprocess
    import sys

    cli = [sys.executable, "-m", "robot_rl.cli"]
    rec = subprocess.run(
        [*cli, "sysid", "record", "--out", str(tmp_path / "rec"),
         "--record.excitation.duration", "3", "--record.excitation.step-size", "0",
         "--sim.mass-scale", "1.3", "--sim.actuation-delay", "0.004"],
        capture_output=True, text=True, timeout=120)
    assert rec.returncode == 0, rec.stderr
    assert "recorded episode 0" in rec.stdout
    params = fit_shared_mass(tmp_path / "rec", tmp_path / "arm.json")
    # The recording is of a real-time process: its timing jitter moves the small-budget fit
    # (12 runs of this record and fit, 2026-11-30: mass 1.279-1.356, nominal / fitted RMS
    # from 0.8 to 30). The fit's precision is the deterministic test's above; here the
    # command line's path, and the mass in its neighbourhood.
    assert abs(params["values"]["link_mass"][0] / 1.3 - 1) < 0.08, params["values"]
    assert params["fit"]["rms_fit"] > 0 and params["fit"]["rms_nominal"] > 0
    bad = subprocess.run([*cli, "sysid", "fit", str(tmp_path / "nothing")],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "no recording at" in bad.stderr


def test_a_recording_whose_readings_came_late_is_made_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """record_steady: 100 readings at 250 Hz; 5 of the 99 intervals are 12 ms (over two
    periods, 8 ms: 5.1% > 0.5%), then a clean recording is kept; one that stays late is kept
    after the last try, with the reason said."""
    from robot_rl.sysid import record as rec_mod

    def recording(late: int) -> rec_mod.Recording:
        dt = np.full(99, 0.004)
        dt[:late] = 0.012
        t = np.concatenate([[0.0], np.cumsum(dt)])
        streams = ArmStreams(js_t=t, q=np.zeros((100, 7)), qd=np.zeros((100, 7)),
                             cmd_t=t, cmd=np.zeros((100, 7)), effort=None)
        return rec_mod.Recording(robot="arm7", joint_names=tuple(f"j{i}" for i in range(7)),
                                 rate=250.0, streams=streams, reading_age=np.zeros(100),
                                 shield_moved=0, late_ticks=late, seconds=float(t[-1]))

    assert recording(5).gaps == 5 and recording(0).gaps == 0
    made = iter([recording(5), recording(0)])
    monkeypatch.setattr(rec_mod, "record_excitation", lambda *a, **k: next(made))
    said: list[str] = []
    got = rec_mod.record_steady(object(), rec_mod.RecordConfig(), log=said.append)  # type: ignore[arg-type]
    assert got.gaps == 0
    assert len(said) == 1 and "5 of 99 readings came more than 8 ms" in said[0]
    assert "5.1%" in said[0] and "recording again (2 of 3)" in said[0]
    monkeypatch.setattr(rec_mod, "record_excitation", lambda *a, **k: recording(1))
    assert rec_mod.record_steady(object(), rec_mod.RecordConfig(max_gaps=0.0, tries=2),  # type: ignore[arg-type]
                                 log=said.append).gaps == 1
    assert "recording again (2 of 2)" in said[1] and "kept after 2 tries" in said[2]
    with pytest.raises(ConfigError, match="tries >= 1"):
        rec_mod.RecordConfig(tries=0).validate()
