"""Camera render rates for policies, pixel students against their state teachers, the
success classifier's precision and recall, and a pixel student deployed through cameras.

    python benchmarks/vision.py                              # 64, 96, 128 px; push; 8 envs
    python benchmarks/vision.py --sizes 96 --warp-device cuda   # where a GPU is lent
    python benchmarks/vision.py --part students              # push: expert -> pixel student
    python benchmarks/vision.py --part reward                # lift: success classifier
    python benchmarks/vision.py --part deploy                # push student on the sim arm
    python benchmarks/vision.py --part rl                    # push student + asymmetric SAC

Renderers (``sim.cameras.SimCameras``, one camera of every env per call, after a step):

- ``default``: MuJoCo's OpenGL renderer in the video mode (its defaults: the model's shadow
  map, 4x MSAA, reflections, skybox, fine tessellation);
- ``policy``: the same renderer in the policy mode (none of those, coarser tessellation);
- ``warp``: MuJoCo Warp's batch ray tracer over all envs' worlds in one launch, on
  ``--warp-device`` (Warp's CPU device here; ``cuda`` on a GPU).

Target (issue 20): policy mode >= 8x the default mode, >= 300 frames/s at 96x96 on 2 cores.
Each cell: the median of ``--repeats`` timings of ``--seconds`` each, after a warm-up call.

``--part students``: ``robot-rl distill-pixels`` on each of ``--student-tasks`` with the
scripted expert as the state teacher (``--student`` options), then both evaluated under the
same dynamics and visual randomization, with the student's action MLP alone on the true
state (its first stage). Target: the student keeps >= 85% of the teacher's success on push.

``--part reward``: records ``--reward-episodes`` of lift with the scripted expert (the first
three quarters with little action noise, the rest with much: failures and drops) on the
``--reward-cameras`` at 96x96, trains ``robot-rl reward train`` on them (``--reward``
options) and reports precision and recall on the held-out episodes. Target: >= 0.95 / >= 0.9.

``--part deploy``: the push pixel student (``--deploy-student``; default the one ``--part
students`` saved, distilled first if missing) exported and run by the deploy runtime at
``--deploy-rate`` Hz on the simulated arm in its own process, in push's scene, seeing the
arm's simulated cameras (``--deploy-camera``: rate, latency, drops), for
``--deploy-episodes`` episodes drawn as push's resets draw them: success on the arm's ground
truth, the policy step's latency with the image encoder, the frames' age, the loop's period
error, holds.

``--part rl``: the push pixel student (``--rl-student``; default the one ``--part students``
saved, distilled first if missing) fine-tuned by ``robot-rl train-pixels`` (asymmetric SAC:
the actor on the cameras, the critics and the safety critic on the simulator's state;
``--rl`` options, ``--rl.time-budget``): the learning curve, its first row the student
before any update, evaluated as training evaluates (deterministic, ``--rl.eval-episodes``).
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import time
from pathlib import Path
from typing import Any

import tyro
from rich.console import Console
from rich.table import Table

from robot_rl.distill.configs import PixelDistillConfig
from robot_rl.hardware.configs import SimCameraConfig
from robot_rl.sim.configs import DRPreset, VisualPreset
from robot_rl.vision.configs import PixelTrainConfig, RewardTrainConfig


def _rl_defaults() -> PixelTrainConfig:
    return PixelTrainConfig(task="push", num_envs=8, time_budget=1200.0, eval_every=5_000,
                            eval_episodes=32, safety="lagrangian", runs_dir=Path("runs/bench"),
                            run_name="pixel_sac_push", progress=False)


@dataclasses.dataclass
class Args:
    part: tuple[str, ...] = ("render",)
    """render: frames/s table; students: pixel students vs their teachers; reward: the
    success classifier; deploy: the push student on the simulated arm through cameras; rl:
    the push student fine-tuned by asymmetric SAC."""
    sizes: tuple[int, ...] = (64, 96, 128)
    """Square image sizes [px]."""
    task: str = "push"
    camera: str = "front"
    num_envs: int = 8
    renderers: tuple[str, ...] = ("default", "policy", "warp")
    warp_device: str = "cpu"
    seconds: float = 2.0
    repeats: int = 3
    depth: bool = False
    """Render depth too."""
    out: Path = Path("runs/bench/vision.json")
    student_tasks: tuple[str, ...] = ("push",)
    student: PixelDistillConfig = dataclasses.field(default_factory=PixelDistillConfig)
    """Options of the distillation (its task and output are set per task)."""
    reuse_students: bool = False
    """--part students: evaluate the students a previous run saved (``pixel_student_{task}.pt``
    beside ``--out``) instead of distilling them again, under ``--student.dr``,
    ``--student.visual`` and ``--student.eval-episodes`` (e.g. ``--student.dr off`` to see
    what the visual randomization alone costs); their action MLP's success, samples and
    wall clock come from their files."""
    reward_task: str = "lift"
    reward_episodes: int = 40
    reward_cameras: tuple[str, ...] = ("front", "wrist")
    reward: RewardTrainConfig = dataclasses.field(
        default_factory=lambda: RewardTrainConfig(dataset=Path("runs/bench/reward_data"),
                                                  size=96))
    """Options of the classifier's training (its dataset is recorded here)."""
    deploy_student: Path | None = None
    """Saved pixel student to deploy (default: --part students' push student)."""
    deploy_episodes: int = 20
    deploy_rate: float = 500.0
    """The deploy loop's rate [Hz]."""
    deploy_camera: SimCameraConfig = dataclasses.field(
        default_factory=lambda: SimCameraConfig(fps=30.0, latency=0.03, drop_prob=0.02))
    """The simulated cameras (a RealSense streams 30 fps with tens of ms of latency)."""
    rl_student: Path | None = None
    """Saved pixel student to fine-tune (default: --part students' push student)."""
    rl: PixelTrainConfig = dataclasses.field(default_factory=_rl_defaults)
    """Options of the fine-tuning (its student is --rl-student; the run directory is
    replaced)."""
    rl_final_episodes: int = 128
    """Episodes on which the student and the fine-tuned policy are compared at the end (the
    same episodes for both; training's evaluations are 32 episodes each: +-8 points)."""


def frames_per_second(args: Args, renderer: str, size: int) -> float:
    from robot_rl.sim import make_env
    from robot_rl.sim.cameras import SimCameras
    from robot_rl.sim.configs import CameraConfig

    backend = {"backend": "warp", "device": args.warp_device} if renderer == "warp" else {}
    env = make_env(args.task, args.num_envs, seed=0, **backend)  # type: ignore[arg-type]
    env.reset(seed=0)
    cfg = CameraConfig(names=(args.camera,), height=size, width=size, depth=args.depth,
                       mode="video" if renderer == "default" else "policy")
    rates = []
    with SimCameras(env, cfg) as cams:
        cams.render()  # warm-up: GL context, kernels, BVH
        for _ in range(args.repeats):
            n, t0 = 0, time.perf_counter()
            while time.perf_counter() - t0 < args.seconds:
                frames = cams.render()
                frames[args.camera].rgb.sum().item()  # wait for the device
                n += 1
            rates.append(n * args.num_envs / (time.perf_counter() - t0))
    return statistics.median(rates)


def students(args: Args, console: Console) -> dict[str, dict[str, float]]:
    from robot_rl.distill.pixel_eval import evaluate_student
    from robot_rl.distill.pixels import distill_pixels, make_teacher
    from robot_rl.vision.student_file import load_pixel_student

    table = Table(title="pixel students vs their state teachers (scripted experts)")
    for col in ("task", "cameras", "size", "teacher success", "action MLP on the true state",
                "student success", "student / teacher", "nominal: teacher / student",
                "samples", "wall clock"):
        table.add_column(col)
    errors = Table(title="the students' state estimates in closed loop: RMS error per term (the "
                         "terms' units: metres for positions)")
    for col in ("task", "randomized", "nominal"):
        errors.add_column(col)
    out = {}
    for task in args.student_tasks:
        path = args.out.parent / f"pixel_student_{task}.pt"
        if args.reuse_students:
            student, saved = load_pixel_student(path)
            cfg = _under(PixelDistillConfig.from_saved(saved["config"]), args.student.dagger.dr,
                         args.student.inputs.visual, args.student.dagger.eval_episodes)
            teacher, task_cfg = make_teacher(cfg)
            console.print(f"evaluating {path} ({saved.get('seconds', float('nan')):.0f} s of "
                          f"distillation)", highlight=False)
            ev = evaluate_student(student, cfg, teacher, task_cfg)
            t_res, s_res, rmse = ev.teacher, ev.student, ev.estimate_rmse
            mlp, samples, seconds = (saved.get("state_policy_success"), saved.get("samples", 0),
                                     saved.get("seconds", float("nan")))
        else:
            cfg = dataclasses.replace(args.student, task=task, out=path)
            student, r = distill_pixels(cfg, console)
            assert r.teacher is not None and r.student is not None
            teacher, task_cfg = make_teacher(cfg)
            t_res, s_res, rmse = r.teacher, r.student, r.estimate_rmse
            mlp = None if r.state_policy is None else r.state_policy.success_rate
            samples, seconds = r.samples, r.seconds
        nominal = evaluate_student(student, _under(cfg, "off", "off"), teacher, task_cfg)
        t_nom, s_nom = nominal.teacher, nominal.student
        ratio = s_res.success_rate / max(t_res.success_rate, 1e-9)
        out[task] = {"teacher": t_res.success_rate, "student": s_res.success_rate,
                     "ratio": ratio, "seconds": seconds, "samples": samples,
                     "teacher_nominal": t_nom.success_rate,
                     "student_nominal": s_nom.success_rate, "episodes": s_res.episodes,
                     "estimate_rmse": rmse, "estimate_rmse_nominal": nominal.estimate_rmse}
        if mlp is not None:
            out[task]["action_mlp_true_state"] = mlp
        table.add_row(task, " ".join(cfg.inputs.cameras), f"{cfg.inputs.size}",
                      f"{t_res.success_rate:.1%}",
                      "-" if mlp is None else f"{mlp:.1%}", f"{s_res.success_rate:.1%}",
                      f"{ratio:.2f}", f"{t_nom.success_rate:.1%} / {s_nom.success_rate:.1%}",
                      f"{samples:,}", f"{seconds:.0f} s")
        errors.add_row(task, _rms(rmse), _rms(nominal.estimate_rmse))
    console.print(table)
    console.print(errors)
    console.print(f"success under dynamics randomization {cfg.dagger.dr!r} and visual "
                  f"{cfg.inputs.visual!r}, and nominal (both off), on the same episodes for "
                  f"teacher and student", highlight=False)
    if "push" in out:
        met = out["push"]["ratio"] >= 0.85
        console.print(f"target (push student >= 85% of its teacher): {'met' if met else 'not met'}")
    return out


def _under(cfg: PixelDistillConfig, dr: DRPreset, visual: VisualPreset,
           eval_episodes: int | None = None) -> PixelDistillConfig:
    """``cfg`` with other dynamics and visual randomization presets (and episodes)."""
    dagger = dataclasses.replace(cfg.dagger, dr=dr, eval_episodes=cfg.dagger.eval_episodes
                                 if eval_episodes is None else eval_episodes)
    return dataclasses.replace(cfg, inputs=dataclasses.replace(cfg.inputs, visual=visual),
                               dagger=dagger)


def _rms(rmse: dict[str, float]) -> str:
    return ", ".join(f"{t} {v:.4f}" for t, v in rmse.items()) or "-"


def reward(args: Args, console: Console) -> dict[str, float]:
    import shutil

    from robot_rl.recording.config import RecordConfig
    from robot_rl.recording.record import record
    from robot_rl.vision.reward_training import print_report, train_reward_classifier

    data = args.reward.dataset
    shutil.rmtree(data, ignore_errors=True)
    clean = args.reward_episodes * 3 // 4
    t0 = time.perf_counter()
    for episodes, noise, seed, resume in ((clean, 0.05, 0, False),
                                          (args.reward_episodes, 0.3, 5, True)):
        record(RecordConfig(task=args.reward_task, teleop="expert", episodes=episodes, out=data,
                            cameras=args.reward_cameras, camera_size=(96, 96),
                            expert_noise=noise, seed=seed, resume=resume, progress=False))
    recorded = time.perf_counter() - t0
    cfg = dataclasses.replace(args.reward, out=args.out.parent / "reward_classifier.pt")
    _, r = train_reward_classifier(cfg, console)
    print_report(console, r, f"held-out episodes ({r.episodes})")
    table = Table(title=f"success classifier ({args.reward_task}, cameras "
                        f"{' '.join(args.reward_cameras)} at {cfg.size}x{cfg.size}, "
                        f"{args.reward_episodes} expert episodes)")
    for col in ("precision", "recall", "accuracy", "held-out frames (success)",
                "episodes agreeing", "recording", "training"):
        table.add_column(col, justify="right")
    trained = time.perf_counter() - t0 - recorded
    table.add_row(f"{r.precision:.3f}", f"{r.recall:.3f}", f"{r.accuracy:.3f}",
                  f"{r.frames:,} ({r.positives:,})", f"{r.episodes_agree}/{r.episodes}",
                  f"{recorded:.0f} s", f"{trained:.0f} s")
    console.print(table)
    met = r.precision >= 0.95 and r.recall >= 0.9
    console.print(f"target (precision >= 0.95, recall >= 0.9): {'met' if met else 'not met'}")
    return {**r.row(), "record_s": recorded, "train_s": trained}


def deploy(args: Args, console: Console) -> dict[str, float]:
    import torch

    from robot_rl.distill.pixels import distill_pixels
    from robot_rl.export import load_policy
    from robot_rl.hardware.configs import DeployConfig, SimRobotConfig
    from robot_rl.hardware.observation import task_config_from_meta
    from robot_rl.hardware.runtime import DeployRuntime
    from robot_rl.hardware.sim_robot_process import SimRobotProcess
    from robot_rl.hardware.sim_task import SimTaskEpisodes, run_episodes
    from robot_rl.vision.export import export_pixel_student

    path = args.deploy_student or args.out.parent / "pixel_student_push.pt"
    if not path.is_file():
        console.print(f"{path} missing: distilling the push pixel student first")
        distill_pixels(dataclasses.replace(args.student, task="push", out=path), console)
    # one sample per step: torch's worker threads would only spin beside the loop (the
    # observer's and the judge's one-env terms run in torch)
    torch.set_num_threads(1)
    art = export_pixel_student(path, path.with_suffix(""))
    policy = load_policy(art)
    task_cfg = task_config_from_meta(policy.meta)
    cams, cam = task_cfg.cameras, args.deploy_camera
    assert cams is not None
    with SimRobotProcess(SimRobotConfig(), scene=task_cfg, cameras=cams,
                         camera_cfg=cam) as robot:
        runtime = DeployRuntime(policy, robot, DeployConfig(rate_hz=args.deploy_rate),
                                cameras=robot.camera_dict(), log=lambda m: None)
        results = run_episodes(
            runtime, robot, SimTaskEpisodes(task_cfg, seed=1), args.deploy_episodes, seed=1,
            restart=True, on_episode=lambda i, r: console.print(
                f"episode {i + 1}/{args.deploy_episodes}: "
                f"{'success' if r.success else 'failure'} after {r.seconds:.1f} s"
                + (f", {r.holds} hold(s)" if r.holds else ""), highlight=False))
        s = runtime.summary()
    floor = _os_floor(policy, args.deploy_rate, 10.0)
    n = len(results)
    sim = policy.meta.get("provenance", {}).get("student_success")  # its eval in the env
    out = {"episodes": n, "success": sum(r.success for r in results) / n,
           "started": sum(r.started for r in results),
           "sim_success": float("nan") if sim is None else float(sim),
           "inference_p50_us": s["inference_us"][0], "inference_p99_us": s["inference_us"][1],
           "frame_age_p50_ms": s["frame_age_ms"][0], "frame_age_p99_ms": s["frame_age_ms"][1],
           "period_error_p99_us": s["period_error_us"][1], "overruns": s["overruns"],
           "ticks": s["ticks"], "camera_holds": s["camera_holds"],
           "watchdog_trips": s["watchdog_trips"], "policy_waits": s["policy_waits"],
           "os_floor_p99_us": floor}
    table = Table(title=f"push pixel student on the simulated arm through its cameras "
                        f"({' '.join(cams.names)} at {cams.width}x{cams.height}, {cam.fps:g} "
                        f"fps, latency {cam.latency * 1e3:g} ms, drops {cam.drop_prob:.0%}; "
                        f"loop {args.deploy_rate:g} Hz)")
    for col in ("episodes", "success (arm)", "success (sim eval)", "policy step p50 / p99",
                "frame age p50 / p99", "period error p99 (host floor)", "overruns / ticks",
                "holds (camera / watchdog)"):
        table.add_column(col, justify="right")
    table.add_row(f"{n}", f"{out['success']:.0%}", f"{out['sim_success']:.0%}",
                  f"{out['inference_p50_us']:.0f} / {out['inference_p99_us']:.0f} µs",
                  f"{out['frame_age_p50_ms']:.0f} / {out['frame_age_p99_ms']:.0f} ms",
                  f"{out['period_error_p99_us']:.0f} µs ({floor:.0f})",
                  f"{s['overruns']} / {s['ticks']}",
                  f"{s['camera_holds']} / {s['watchdog_trips']}")
    console.print(table)
    return out


def _os_floor(policy: Any, rate: float, seconds: float) -> float:
    """Period error p99 [µs] of a bare deadline loop at ``rate`` doing one call of the policy
    (on blank images) per tick: what this host's timer and caches allow right now (the
    deploy loop benchmark's "OS floor" row)."""
    import numpy as np

    from robot_rl.hardware.timing import Rate

    obs = np.zeros(policy.obs_dim, np.float32)
    images = {k: np.zeros(shape, dtype) for k, shape, dtype in policy.images}
    rate_ = Rate(rate)
    err, prev, end = [], time.monotonic(), time.monotonic() + seconds
    while time.monotonic() < end:
        rate_.sleep()
        now = time.monotonic()
        err.append(abs(now - prev - 1.0 / rate))
        prev = now
        policy(obs, images)
    return float(np.percentile(err[1:], 99) * 1e6)


def rl(args: Args, console: Console) -> dict[str, float]:
    """Fine-tune the push pixel student with asymmetric SAC; its learning curve."""
    import shutil

    from robot_rl.distill.pixels import distill_pixels
    from robot_rl.vision.pixel_runner import PixelRunner

    path = args.rl_student or args.out.parent / "pixel_student_push.pt"
    if not path.is_file():
        console.print(f"{path} missing: distilling the push pixel student first")
        distill_pixels(dataclasses.replace(args.student, task="push", out=path), console)
    cfg = dataclasses.replace(args.rl, student=path)
    assert cfg.run_name is not None
    shutil.rmtree(cfg.runs_dir / cfg.run_name, ignore_errors=True)
    runner = PixelRunner(cfg, console)
    history = runner.train()
    table = Table(title=f"push pixel student ({path.name}) fine-tuned by asymmetric SAC "
                        f"({cfg.num_envs} envs, safety {cfg.safety}, critics alone for the "
                        f"first {cfg.critic_warmup:,} updates; {cfg.eval_episodes} episodes "
                        f"per row)")
    for col in ("env steps", "wall clock", "success", "episode cost"):
        table.add_column(col, justify="right")
    for row in history:
        table.add_row(f"{row['env_steps']:,.0f}", f"{row['seconds']:.0f} s",
                      f"{row['success_rate']:.1%}", f"{row['episode_cost']:.2f}")
    console.print(table)
    before, after = _compare(runner, path, args.rl_final_episodes, cfg.seed + 50_000)
    table = Table(title=f"the same {args.rl_final_episodes} push episodes (dynamics and visual "
                        f"randomization as trained), deterministic actions")
    for col in ("policy", "success", "return", "episode cost"):
        table.add_column(col, justify="right")
    for name, r in (("student (distill-pixels)", before), ("fine-tuned (train-pixels)", after)):
        table.add_row(name, f"{r.success_rate:.1%}", f"{r.return_mean:.1f}",
                      f"{r.cost_mean:.2f}")
    console.print(table)
    last = history[-1]
    console.print(f"student {before.success_rate:.1%} -> {after.success_rate:.1%} after "
                  f"{last['env_steps']:,.0f} env steps and {runner.agent.updates:,} updates "
                  f"({last['seconds']:.0f} s of training); pixel policy: "
                  f"{runner.run_dir / 'pixel_policy.pt'}", highlight=False)
    return {"student": before.success_rate, "fine_tuned": after.success_rate,
            "episodes": float(args.rl_final_episodes), "env_steps": last["env_steps"],
            "updates": float(runner.agent.updates), "seconds": last["seconds"]}


def _compare(runner: Any, student_path: Path, episodes: int, seed: int) -> tuple[Any, Any]:
    """The student and the fine-tuned policy evaluated on the same episodes (ungated: the
    comparison is of the policies)."""
    import torch

    from robot_rl.evaluate import evaluate
    from robot_rl.vision.pixel_runner import evaluate_pixel_agent, pixel_train_env
    from robot_rl.vision.student_file import load_pixel_student

    student, _ = load_pixel_student(student_path)
    cols = runner.proprio_cols
    env = pixel_train_env(runner.cfg, min(episodes, 32), seed)

    @torch.no_grad()
    def act(obs: Any) -> Any:
        return student(obs[:, cols], env.last_images), None

    before = evaluate(act, env, episodes, seed=seed)
    after = evaluate_pixel_agent(runner.pixel_agent, env, episodes, cols, seed=seed,
                                 gate=False)
    return before, after


def main(args: Args) -> None:
    console = Console(width=max(Console().width, 150))  # the tables, also in a log
    results: dict[str, dict[str, float]] = {}
    if "students" in args.part:
        results["students"] = students(args, console)  # type: ignore[assignment]
    if "reward" in args.part:
        results["reward"] = reward(args, console)
    if "deploy" in args.part:
        results["deploy"] = deploy(args, console)
    if "rl" in args.part:
        results["rl"] = rl(args, console)
    if "render" not in args.part:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        path = args.out.with_name("vision_learning.json")  # the parts run before are kept
        saved = json.loads(path.read_text()) if path.is_file() else {}
        path.write_text(json.dumps(saved | results, indent=2))
        return
    for size in args.sizes:
        for r in args.renderers:
            fps = frames_per_second(args, r, size)
            results.setdefault(str(size), {})[r] = fps
            console.print(f"{size}x{size} {r}: {fps:,.0f} frames/s", highlight=False)
    table = Table(title=f"camera frames/s per image ({args.task}, camera {args.camera}, "
                        f"{args.num_envs} envs{', with depth' if args.depth else ''}; "
                        f"warp on {args.warp_device})")
    table.add_column("size")
    for r in args.renderers:
        table.add_column(r, justify="right")
    if {"default", "policy"} <= set(args.renderers):
        table.add_column("policy / default", justify="right")
    for size, row in results.items():
        cells = [f"{row[r]:,.0f}" for r in args.renderers]
        if "default" in row and "policy" in row:
            cells.append(f"{row['policy'] / row['default']:.1f}x")
        table.add_row(f"{size}x{size}", *cells)
    console.print(table)
    target = results.get("96", {})
    if "policy" in target and "default" in target:
        met = target["policy"] >= 300 and target["policy"] >= 8 * target["default"]
        console.print(f"target (policy >= 300 frames/s and >= 8x default at 96x96): "
                      f"{'met' if met else 'not met'}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    console.print(f"results: {args.out}")


if __name__ == "__main__":
    main(tyro.cli(Args))
