"""Scale-out on Ray: env steps collected by env-runners, and the learner's update rate.

    python benchmarks/online.py --part scale         # about 12 minutes here
    python benchmarks/online.py --part reach         # reach to 95%: one process vs 2 runners
    python benchmarks/online.py --part robot --init RUN   # fine-tuning on the perturbed arm
    python benchmarks/online.py --part robot --init runs/bench/reach_osc95 \
        --sim.interface effort --sim.frictionloss 0.95 --sim.kp None --sim.mass-scale 1 \
        --home.rot-tolerance 0.15                         # the target's arm (about 20 min)
    python benchmarks/online.py --part faults --init RUN  # SIGKILLs mid-run (about 3 minutes)

Scale (reach, 16 envs per runner, the default SAC with its safety critic; each row trains
for ``--seconds`` of wall clock and reads the learner's totals, ``dist_stats.json``):

  one process        ``Runner``: the single-process loop (env step, act, store, learn)
  Ray, N runners     ``robot-rl train --ray local --env-runners N``: a learner actor and N
                     env-runner actors of 1 thread each on this machine
  Ray cluster        the same on a ``ray.cluster_utils.Cluster`` of two nodes (processes on
                     this machine: it shows placement and transport, not more cores)

each with collection only (``--sac.updates-per-step 0``) and with learning (1 update per
vector step of 16 envs, the config's update-to-data ratio). The learner's updates/s alone
(no actors, a filled buffer) are the reference for "with actors feeding it".

Reach: wall clock until an evaluation reaches 95% success, in one process and with 2
env-runners (same config, seed and update-to-data ratio).

Robot: ``robot-rl finetune-robot`` from a sim-trained reach policy (``--init``) on the
simulated arm in real time with held-out dynamics (``--sim.*``: heavier links, weaker servo
stiffness, actuation delay by default; joint friction, damping and the rest can be set),
the scripted corrector as the person. ``benchmarks/online_rehearsal.py`` runs the same
learner on a batched copy of that arm in minutes. Evaluation blocks of
``--eval-episodes`` episodes (the policy's mean, nobody intervening) at 0 (zero-shot) and
every ``--eval-every`` minutes of robot time, up to ``--robot-minutes``; robot time counts
everything the arm does (training and evaluation episodes, moves home), and the learner
learns from every episode. Also: the same policy zero-shot on the nominal arm (the gap's
reference), interventions per training episode over time, the loop's period error and
watchdog trips near weight swaps.

Faults: SIGKILL an env-runner, then the learner, in the middle of a simulation run (2
runners), and the learner of a robot run; after each run: the restarts, whether the last
checkpoint loads, and whether the replay buffer holds exactly the transitions the checkpoint
counted (for the robot: exactly the dataset's first ``robot_episodes`` episodes).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

import torch
import tyro
from rich.console import Console
from rich.table import Table

from robot_rl.cluster.collector import DIST_STATS
from robot_rl.hardware.configs import HomeMoveConfig, SimRobotConfig
from robot_rl.ray_options import RayOptions
from robot_rl.robots import get_robot
from robot_rl.runner import Runner
from robot_rl.train_config import TrainConfig


@dataclasses.dataclass
class Args:
    part: Literal["scale", "reach", "robot", "faults"] = "scale"
    seconds: float = 40.0
    """Scale: wall clock of each row's training [s]."""
    runners: tuple[int, ...] = (1, 2, 4)
    """Scale: env-runner counts on this machine."""
    cluster_runners: tuple[int, ...] = (2, 4)
    """Scale: env-runner counts on the two-node cluster."""
    num_envs: int = 16
    """Envs per runner (and of the single process)."""
    where: tuple[Literal["one process", "ray local", "ray 2 nodes"], ...] = (
        "one process", "ray local", "ray 2 nodes")
    """Scale: which groups of rows to run."""
    reach_budget: float = 900.0
    """Reach: wall-clock budget of each run [s]."""
    out: Path | None = None
    """Also write the rows as JSON here."""
    init: Path | None = None
    """Robot: the sim-trained reach run to start from."""
    sim: SimRobotConfig = dataclasses.field(default_factory=lambda: SimRobotConfig(
        mass_scale=1.8, kp=tuple(0.3 * k for k in get_robot("arm7").kp),
        actuation_delay=0.015))
    """Robot: the held-out arm: links 1.8x heavier, servo stiffness 0.3x (damping as
    nominal: a slow, overdamped arm), a 15 ms actuation delay; --sim.frictionloss,
    --sim.kd and the rest set other gaps."""
    robot_minutes: float = 15.0
    """Robot: minutes of robot time."""
    eval_every: float = 5.0
    """Robot: minutes of robot time between evaluation blocks."""
    eval_episodes: int = 20
    """Robot: episodes per evaluation block."""
    rate_hz: float = 250.0
    """Robot: the deploy loop's rate."""
    updates_per_step: int = 1
    """Robot: gradient updates per robot transition."""
    prior_ratio: float = 0.0
    """Robot: share of each batch from the init run's simulation transitions (0: the robot's
    own only; with 0.3 the policy got worse on the arm, and in the rehearsal)."""
    actor_warmup: int = 3000
    """Robot: robot transitions before the actor updates (the critics adapt first)."""
    alpha_lr: float = 0.0
    """Robot: the temperature's learning rate (0: kept at the sim policy's)."""
    anchor: float = 0.0
    """Robot: weight of the behaviour-cloning term towards the init policy (0: none)."""
    nominal: bool = True
    """Robot: also evaluate the init policy zero-shot on the nominal arm."""
    teleop: Literal["corrector", "none"] = "corrector"
    """Robot: the person in training episodes: the scripted corrector, or nobody."""
    home: HomeMoveConfig = dataclasses.field(default_factory=HomeMoveConfig)
    """Robot: the move home between episodes (its speeds and tolerances; on an arm with
    joint friction the OSC's wrist creeps to its orientation: --home.rot-tolerance 0.15)."""
    keep: Path | None = None
    """Robot: keep the runs' directories (robot dataset, checkpoints, TensorBoard) under
    this directory (default: a temporary one, removed at the end)."""


def _cfg(tmp: Path, name: str, args: Args, learn: bool, **kw: Any) -> TrainConfig:
    base = TrainConfig(task="reach", num_envs=args.num_envs, total_steps=10**9,
                       time_budget=args.seconds, eval_every=10**9, eval_episodes=4,
                       checkpoint_every=10**9, save_replay=False, runs_dir=tmp, run_name=name,
                       progress=False, dist=RayOptions(collect_steps=16))
    sac = dataclasses.replace(base.sac, updates_per_step=1 if learn else 0,
                              learning_starts=0 if not learn else base.sac.learning_starts)
    return dataclasses.replace(base, sac=sac, **kw)


def learner_alone(tmp: Path, args: Args, updates: int = 300) -> float:
    """Updates/s of the learner on a filled buffer, nothing else running."""
    runner = Runner(_cfg(tmp, "alone", args, learn=True), console=Console(quiet=True))
    n, D, A = 20_000, runner.env.obs_dim, runner.env.act_dim
    runner.buffer.add(torch.randn(n, D), torch.rand(n, A) * 2 - 1, torch.randn(n),
                      torch.zeros(n), torch.randn(n, D), torch.zeros(n))
    runner.agent.observe(torch.randn(n, D))
    for _ in range(20):
        runner.learn()
    t0 = time.perf_counter()
    for _ in range(updates):
        runner.learn()
    return updates / (time.perf_counter() - t0)


def one_process(tmp: Path, args: Args, learn: bool) -> dict[str, float]:
    runner = Runner(_cfg(tmp, f"single_{learn}", args, learn), console=Console(quiet=True))
    runner.train()
    return {"env_steps_per_second": runner.env_steps / runner.elapsed,
            "updates_per_second": runner.agent.updates / runner.elapsed}


def on_ray(tmp: Path, args: Args, n: int, learn: bool, where: str) -> dict[str, float]:
    from robot_rl.cluster.driver import train_on_ray

    # a fresh run directory per row (one that holds a checkpoint would be resumed)
    name = f"ray{n}_{learn}_{where.replace(' ', '_')}"
    cfg = _cfg(tmp, name, args, learn, ray="auto", env_runners=n)
    _, run_dir = train_on_ray(cfg, console=Console(quiet=True))
    return json.loads((run_dir / DIST_STATS).read_text())


def scale(args: Args, console: Console) -> list[dict[str, Any]]:
    import ray
    from ray.cluster_utils import Cluster

    rows: list[dict[str, Any]] = []
    tmp = Path(tempfile.mkdtemp(prefix="online_bench_"))

    def add(where: str, n: int | str, learn: bool, r: dict[str, float]) -> None:
        row = {"where": where, "runners": n, "learning": learn,
               "env_steps_per_second": r["env_steps_per_second"],
               "updates_per_second": r["updates_per_second"],
               "runner_env_steps_per_second": r.get("runner_env_steps_per_second"),
               "wait_seconds": r.get("wait_seconds"), "learn_seconds": r.get("learn_seconds"),
               "seconds": r.get("seconds", args.seconds)}
        rows.append(row)
        console.print(f"{where:>12} {n!s:>3} runners, learning {learn!s:5}: "
                      f"{row['env_steps_per_second']:8,.0f} env steps/s, "
                      f"{row['updates_per_second']:6.1f} updates/s", highlight=False)

    try:
        if "one process" in args.where:
            alone = learner_alone(tmp, args)
            rows.append({"where": "learner alone", "updates_per_second": alone})
            console.print(f"learner alone: {alone:.1f} updates/s", highlight=False)
            for learn in (False, True):
                add("one process", "-", learn, one_process(tmp, args, learn))
        if "ray local" in args.where:
            # Ray on this machine: as many logical CPUs as the actors reserve (sharing cores)
            need = max(args.runners) + 1
            ray.init(address="local", num_cpus=max(need, os.cpu_count() or 1),
                     include_dashboard=False, log_to_driver=False)
            for n in args.runners:
                for learn in (False, True):
                    add("ray local", n, learn, on_ray(tmp, args, n, learn, "local"))
            ray.shutdown()
        if "ray 2 nodes" not in args.where:
            return _table(rows, args, console)
        # two Ray nodes (processes on this machine), the runners spread over them
        half = max(max(args.cluster_runners) // 2, 1) + 1
        cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": half, "include_dashboard": False})
        cluster.add_node(num_cpus=half)
        ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
        cluster.wait_for_nodes()
        try:
            for n in args.cluster_runners:
                for learn in (False, True):
                    add("ray 2 nodes", n, learn, on_ray(tmp, args, n, learn, "nodes"))
        finally:
            ray.shutdown()
            cluster.shutdown()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return _table(rows, args, console)


def _table(rows: list[dict[str, Any]], args: Args, console: Console) -> list[dict[str, Any]]:
    t = Table(title=f"scale-out on Ray: reach, {args.num_envs} envs per runner, "
                    f"{args.seconds:g} s per row, {os.cpu_count()} cores")
    for c in ("where", "runners", "learning", "env steps/s", "per runner while collecting",
              "updates/s", "learner waited", "learner busy"):
        t.add_column(c, justify="right")
    for r in rows:
        if r["where"] == "learner alone":
            t.add_row("learner alone", "-", "yes", "-", "-", f"{r['updates_per_second']:.1f}",
                      "-", "-")
            continue
        per = r["runner_env_steps_per_second"]
        wait, busy = r["wait_seconds"], r["learn_seconds"]
        t.add_row(r["where"], str(r["runners"]), "yes" if r["learning"] else "no",
                  f"{r['env_steps_per_second']:,.0f}",
                  "-" if per is None else f"{per:,.0f}",
                  f"{r['updates_per_second']:.1f}",
                  "-" if wait is None else f"{wait / r['seconds']:.0%}",
                  "-" if busy is None else f"{busy / r['seconds']:.0%}")
    console.print(t)
    return rows


def reach(args: Args, console: Console) -> list[dict[str, Any]]:
    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="online_reach_"))
    try:
        for n in (0, 2):
            cfg = TrainConfig(task="reach", time_budget=args.reach_budget, target_success=0.95,
                              eval_every=20_000, runs_dir=tmp, run_name=f"reach{n}",
                              progress=False)
            t0 = time.perf_counter()
            if n == 0:
                runner = Runner(cfg)
                history = runner.train()
            else:
                from robot_rl.cluster.driver import train_on_ray

                history, _ = train_on_ray(dataclasses.replace(cfg, ray="local",
                                                              env_runners=n))
            wall = time.perf_counter() - t0
            hit = next((h for h in history if h["success_rate"] >= 0.95), None)
            rows.append({"runners": n, "reached": hit is not None,
                         "seconds": None if hit is None else hit["seconds"],
                         "env_steps": None if hit is None else hit["env_steps"],
                         "best": max(h["success_rate"] for h in history), "wall": wall})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    t = Table(title="reach to 95% success: one process vs env-runners on Ray "
                    f"({os.cpu_count()} cores)")
    for c in ("collection", "reached 95%", "training seconds", "env steps", "best", "wall"):
        t.add_column(c, justify="right")
    for r in rows:
        t.add_row("one process" if r["runners"] == 0 else f"{r['runners']} env-runners",
                  "yes" if r["reached"] else "no",
                  "-" if r["seconds"] is None else f"{r['seconds']:.0f}",
                  "-" if r["env_steps"] is None else f"{r['env_steps']:,.0f}",
                  f"{r['best']:.0%}", f"{r['wall']:.0f} s")
    console.print(t)
    return rows


def _robot_run(args: Args, tmp: Path, name: str, sim: SimRobotConfig, learn: bool,
               console: Console) -> dict[str, Any]:
    """One robot run: evaluation blocks at 0 and every eval_every minutes of robot time
    (``learn=False``: the init policy, one block, no updates)."""
    import ray

    from robot_rl.cluster.driver import RayTraining
    from robot_rl.finetune.robot.configs import (
        OnlineLoopConfig,
        RobotFinetuneConfig,
        RobotSetup,
        robot_sac,
    )
    from robot_rl.finetune.robot.learner import RobotFinetuneRunner
    from robot_rl.finetune.robot.pool import ROBOT
    from robot_rl.hardware.configs import DeployConfig

    assert args.init is not None
    sac = dataclasses.replace(robot_sac(), updates_per_step=args.updates_per_step,
                              learning_starts=200 if learn else 10**9,
                              alpha_lr=args.alpha_lr)
    cfg = RobotFinetuneConfig(
        init=args.init, runs_dir=tmp, run_name=name, progress=False, total_steps=10**9,
        checkpoint_every=60.0, sac=sac, ray="local", prior_ratio=args.prior_ratio,
        actor_warmup=args.actor_warmup, anchor=args.anchor,
        robot=RobotSetup(dataset=Path("robot_data"), sim=sim,
                         teleop=args.teleop if learn else "none",
                         deploy=DeployConfig(rate_hz=args.rate_hz, autostart=False),
                         loop=OnlineLoopConfig(restart_after_hold=1.0, home=args.home),
                         reset_fallen_arm=True),
        dist=RayOptions(runner_cpus=1.0, learner_cpus=1.0))
    marks = [0.0] + ([m * 60 for m in _marks(args)] if learn else [])
    training = RayTraining(cfg, RobotFinetuneRunner, ROBOT, Console(quiet=True)).start()
    robot = training.runners[0]
    blocks: list[dict[str, Any]] = []
    try:
        ray.get(robot.set_evaluation.remote(True))
        run = training.learner.train.remote(training.runners)
        block_start, evaluating, mark = 0, True, 0
        while True:
            ready, _ = ray.wait([run], timeout=1.0)
            if ready:
                ray.get(run)  # the learner stopped by itself: an error
                raise RuntimeError("the learner stopped before the benchmark's end")
            log = ray.get(robot.episode_log.remote())
            now = ray.get(robot.robot_time.remote())
            if evaluating:
                done = [e for e in log[block_start:] if e["evaluation"]]
                if len(done) >= args.eval_episodes:
                    done = done[:args.eval_episodes]
                    gate = ray.get(robot.summary.remote())
                    blocks.append({"minutes": marks[mark] / 60, "robot_time": now,
                                   "success": sum(e["success"] for e in done) / len(done),
                                   "episodes": len(done),
                                   "version": max(e["version"] for e in done),
                                   "gate_rejections": gate.get("gate_rejections", 0),
                                   "gate_holds": gate.get("gate_holds", 0)})
                    console.print(f"{name}: evaluation at {marks[mark] / 60:g} min of robot "
                                  f"time: {blocks[-1]['success']:.0%} of {len(done)} (gate "
                                  f"so far: {blocks[-1]['gate_rejections']} rejections, "
                                  f"{blocks[-1]['gate_holds']} holds)", highlight=False)
                    mark += 1
                    if mark >= len(marks):
                        break
                    ray.get(robot.set_evaluation.remote(False))
                    evaluating = False
            elif now >= marks[mark]:
                ray.get(robot.set_evaluation.remote(True))
                block_start, evaluating = len(log), True
        summary = ray.get(robot.summary.remote())
        swaps, trips, near = ray.get(robot.swap_trips.remote())
        log = ray.get(robot.episode_log.remote())
    finally:
        training.stop()
    return {"name": name, "blocks": blocks, "episodes": log, "swaps": swaps, "trips": trips,
            "trips_after_swaps": near, "period_error_us": summary.get("period_error_us"),
            "overruns": summary.get("overruns"), "robot_time": now,
            "arm_resets": summary.get("arm_resets", 0)}


def _marks(args: Args) -> list[float]:
    n = int(round(args.robot_minutes / args.eval_every))
    return [args.eval_every * (i + 1) for i in range(n)]


def robot(args: Args, console: Console) -> dict[str, Any]:
    if args.init is None:
        raise SystemExit("--part robot needs --init RUN (a robot-rl train reach run)")
    tmp = args.keep or Path(tempfile.mkdtemp(prefix="online_robot_"))
    out: dict[str, Any] = {}
    try:
        if args.nominal:
            nominal = SimRobotConfig(robot=args.sim.robot, interface=args.sim.interface,
                                     physics_dt=args.sim.physics_dt)  # the same interface
            out["nominal"] = _robot_run(args, tmp, "nominal", nominal, False, console)
        out["perturbed"] = _robot_run(args, tmp, "perturbed", args.sim, True, console)
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)
    run = out["perturbed"]
    t = Table(title="fine-tuning on the simulated arm with held-out dynamics "
                    f"(mass x{args.sim.mass_scale:g}, servo stiffness "
                    f"{_gain_text(args.sim, 'kp')}, damping {_gain_text(args.sim, 'kd')}, "
                    f"joint friction {_friction_text(args.sim)} Nm, actuation delay "
                    f"{args.sim.actuation_delay * 1e3:g} ms)")
    for c in ("robot time", "success (mean action, nobody intervening)", "weights"):
        t.add_column(c, justify="right")
    if "nominal" in out:
        b = out["nominal"]["blocks"][0]
        t.add_row("nominal arm, zero-shot", f"{b['success']:.0%} of {b['episodes']}", "init")
    for b in run["blocks"]:
        t.add_row(f"{b['minutes']:g} min", f"{b['success']:.0%} of {b['episodes']}",
                  f"v{b['version']}")
    console.print(t)
    train = [e for e in run["episodes"] if not e["evaluation"]]
    bins: dict[int, list[int]] = {}
    for e in train:
        bins.setdefault(int(e["ended"] // 300), []).append(e["interventions"])
    t2 = Table(title="interventions per training episode (the corrector)")
    for c in ("robot time", "episodes", "intervention steps per episode", "success"):
        t2.add_column(c, justify="right")
    for k in sorted(bins):
        eps = [e for e in train if int(e["ended"] // 300) == k]
        t2.add_row(f"{5 * k}-{5 * k + 5} min", str(len(eps)),
                   f"{sum(bins[k]) / len(bins[k]):.1f}",
                   f"{sum(e['success'] for e in eps) / len(eps):.0%}")
    console.print(t2)
    p = run["period_error_us"] or (float("nan"),) * 3
    console.print(f"loop at {args.rate_hz:g} Hz: period error p50 {p[0]:.0f} / p99 {p[1]:.0f} "
                  f"/ max {p[2]:.0f} µs; {run['swaps']} weight swaps; watchdog trips "
                  f"{run['trips']}, of them within 100 ms after a swap: "
                  f"{run['trips_after_swaps']}; the arm put back at home after a move home "
                  f"timed out: {run['arm_resets']} times", highlight=False)
    return out


def _friction_text(sim: SimRobotConfig) -> str:
    f = sim.joint_friction(get_robot(sim.robot))
    return f"{f[0]:g}" if (f == f[0]).all() else " ".join(f"{x:g}" for x in f)


def _gain_text(sim: SimRobotConfig, name: Literal["kp", "kd"]) -> str:
    value = getattr(sim, name)
    if value is None:
        return "nominal"
    return f"x{value[0] / getattr(get_robot(sim.robot), name)[0]:.2f}"


def _kill_when(cond: Any, pid: int, what: str, timeout: float = 120.0) -> float:
    """SIGKILL ``pid`` once ``cond()`` holds; returns when (perf_counter)."""
    import os
    import signal

    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting to kill the {what}")
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    return time.perf_counter()


def _load(path: Path) -> dict[str, Any] | None:
    """The checkpoint at ``path``, or None if it does not load."""
    from robot_rl.checkpoint import CheckpointError, load_checkpoint

    try:
        return load_checkpoint(path)
    except CheckpointError:
        return None


def faults(args: Args, console: Console) -> list[dict[str, Any]]:
    import threading

    import ray

    from robot_rl.checkpoint import CHECKPOINT, REPLAY, load_checkpoint
    from robot_rl.cluster.driver import RayTraining
    from robot_rl.data.reader import Dataset
    from robot_rl.finetune.robot.configs import OnlineLoopConfig, RobotFinetuneConfig, RobotSetup
    from robot_rl.finetune.robot.learner import RobotFinetuneRunner
    from robot_rl.finetune.robot.pool import ROBOT
    from robot_rl.hardware.configs import DeployConfig

    tmp = Path(tempfile.mkdtemp(prefix="online_faults_"))
    rows: list[dict[str, Any]] = []
    ray.init(address="local", num_cpus=4, include_dashboard=False, log_to_driver=False)
    try:
        # simulation: 2 env-runners; kill runner 0 after the first checkpoint, the learner
        # after the next one
        cfg = dataclasses.replace(_cfg(tmp, "sim", args, learn=True), ray="auto",
                                  env_runners=2, time_budget=60.0, checkpoint_every=5.0,
                                  save_replay=True)
        tr = RayTraining(cfg, console=Console(quiet=True)).start()
        ckpt = tr.run_dir / CHECKPOINT
        try:
            runner_pid = ray.get(tr.runners[0].where.remote())[1]
            learner_pid = ray.get(tr.learner.where.remote())[1]

            def kills() -> None:
                _kill_when(ckpt.is_file, runner_pid, "env-runner")
                first = ckpt.stat().st_mtime_ns
                _kill_when(lambda: ckpt.stat().st_mtime_ns != first, learner_pid, "learner")

            thread = threading.Thread(target=kills, daemon=True)
            thread.start()
            tr.run()
            thread.join(timeout=5)
            new_runner = ray.get(tr.runners[0].where.remote())[1]
            new_learner = ray.get(tr.learner.where.remote())[1]
        finally:
            tr.stop()
        state = _load(ckpt)
        replay = torch.load(tr.run_dir / REPLAY, weights_only=False)
        rows.append({"run": "simulation, 2 env-runners", "killed": "env-runner, then learner",
                     "restarted": new_runner != runner_pid and new_learner != learner_pid,
                     "checkpoint_loads": state is not None,
                     "counted": -1 if state is None else int(state["env_steps"]),
                     "in_replay": int(replay["size"]), "in_dataset": None})
        # the robot: kill the learner once it has checkpointed robot episodes; the robot
        # goes on, the restarted learner reads what its checkpoint missed from the dataset
        assert args.init is not None, "--part faults needs --init RUN (a reach run)"
        rcfg = RobotFinetuneConfig(
            init=args.init, runs_dir=tmp, run_name="robot", progress=False,
            total_steps=10**9, time_budget=60.0, checkpoint_every=5.0, ray="auto",
            robot=RobotSetup(dataset=Path("robot_data"), sim=args.sim, teleop="corrector",
                             deploy=DeployConfig(rate_hz=args.rate_hz, autostart=False),
                             loop=OnlineLoopConfig(restart_after_hold=1.0, home=args.home),
                             reset_fallen_arm=True),
            dist=RayOptions(runner_cpus=1.0, learner_cpus=1.0))
        tr = RayTraining(rcfg, RobotFinetuneRunner, ROBOT, Console(quiet=True)).start()
        ckpt = tr.run_dir / CHECKPOINT
        try:
            learner_pid = ray.get(tr.learner.where.remote())[1]

            def has_episodes() -> bool:
                return ckpt.is_file() and load_checkpoint(ckpt).get("robot_episodes", 0) > 0

            thread = threading.Thread(target=_kill_when, daemon=True,
                                      args=(has_episodes, learner_pid, "robot learner"))
            thread.start()
            tr.run()
            thread.join(timeout=5)
            new_learner = ray.get(tr.learner.where.remote())[1]
            summary = ROBOT.summary(tr.runners)
        finally:
            tr.stop()
        state = _load(ckpt) or {"env_steps": -1, "robot_episodes": 0}
        replay = torch.load(tr.run_dir / REPLAY, weights_only=False)
        ds = Dataset(ROBOT.dataset(tr.cfg))
        lengths = [int(r["length"]) for r in ds.episodes]
        rows.append({"run": "robot", "killed": "learner",
                     "restarted": new_learner != learner_pid,
                     "checkpoint_loads": state["env_steps"] >= 0,
                     "counted": int(state["env_steps"]), "in_replay": int(replay["size"]),
                     "in_dataset": sum(lengths[:int(state["robot_episodes"])]),
                     "robot_episodes": f"{state['robot_episodes']} of {ds.num_episodes}",
                     "robot_policy_steps": summary.get("policy_steps")})
    finally:
        ray.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
    t = Table(title="SIGKILL mid-run")
    for c in ("run", "killed", "restarted", "last checkpoint loads", "transitions counted",
              "in the replay buffer", "in the robot's dataset"):
        t.add_column(c, justify="right")
    for r in rows:
        t.add_row(r["run"], r["killed"], "yes" if r["restarted"] else "no",
                  "yes" if r["checkpoint_loads"] else "no", f"{r['counted']:,}",
                  f"{r['in_replay']:,}",
                  "-" if r["in_dataset"] is None else f"{r['in_dataset']:,} (episodes "
                  f"{r['robot_episodes']})")
    console.print(t)
    return rows


def main() -> None:
    args = tyro.cli(Args)
    console = Console(width=max(Console().width, 130))
    parts = {"scale": scale, "reach": reach, "robot": robot, "faults": faults}
    rows: Any = parts[args.part](args, console)
    if args.out is not None:
        args.out.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
