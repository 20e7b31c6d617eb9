"""Learners that are right: push (and lift) from 20 demonstrations, every learner side by side.

    python benchmarks/learners.py                          # push: every row, then the tables
    python benchmarks/learners.py --task lift              # the same table for lift
    python benchmarks/learners.py --rows sac rlpd          # some rows (results.json keeps the rest)
    python benchmarks/learners.py --part table             # print what was measured
    python benchmarks/learners.py --action ee-position     # every learner in end-effector offsets
    python benchmarks/learners.py --control-hz 20          # every learner (and the demos) at 20 Hz
    python benchmarks/learners.py --action ee-position --sac-hz 10 --rlpd-hz 10 \
        --rlpd-mirror --bc-mirror --residual-mirror ...     # SAC and RLPD at 10 Hz, the rest at 50
    python benchmarks/learners.py --part failures          # push: where the expert and flow-BC fail

One learner at a time on this machine's two cores, each from the same 20 demonstrations
(``--style`` demos of ``--task``, recorded once with ``robot-rl record --teleop expert
--success-only``) and the same seed, each within its wall-clock budget:

  sac        SAC from scratch (no demonstrations): ``robot-rl train`` with the task's discount
  rlpd       RLPD from the demonstrations (``robot-rl finetune --method rlpd``), its compute
             fitted to 2 cores (``--rlpd-*``: critics, UTD; stated in the table)
  bc         flow-BC of the demonstrations (``robot-rl bc``; it does not see the last action:
             ``--bc-ignore-obs``), the start of the three below
  dsrl       DSRL on the flow policy's noise (``robot-rl dsrl``)
  residual   a bounded residual on the flow policy (``robot-rl residual``)
  filtered   filtered BC: the flow policy re-trained on its own successes (``bc-filtered``)
  student    the one-step student of the best chunked learner (``robot-rl distill``;
             ``--student-teacher`` picks another)

Each learner evaluates as its exported artifact acts (``eval_every`` env steps, 64
episodes); the table gives env steps and seconds to 80 / 90 / 95% in those evaluations,
then the final policy's success over ``--final-episodes`` (200) fresh episodes, its training
cost per 1,000 env steps, and the recipe. Targets (issue 47): SAC to 80% in <= 300k env
steps; RLPD to 80% in <= 1/3 of SAC's env steps; a fine-tuner >= 95% within 300k env steps
and 60 minutes at a training cost no higher than SAC's; the student >= 95% of its teacher's
success, >= 10x lower latency and p99 <= 50 us.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import tyro
from rich.console import Console
from rich.table import Table

from robot_rl.bench.latency import chunk_latency
from robot_rl.bench.learning import curve_summary, push_episodes
from robot_rl.recording.config import ActionName

if TYPE_CHECKING:
    from robot_rl.sim.tasks.config import TaskConfig

Row = Literal["sac", "rlpd", "bc", "dsrl", "residual", "filtered", "student"]
EPISODE_SECONDS = {"push": 6.0, "lift": 4.0}
"""Each task's episode in seconds (300 and 200 control steps at 50 Hz)."""


@dataclasses.dataclass
class Args:
    part: Literal["run", "table", "failures"] = "run"
    """run: the rows, then the tables; table: the tables of what was measured; failures
    (push): where the demonstrations' expert and the bc row's flow policy fail, by the
    push's length and direction."""
    task: Literal["push", "lift"] = "push"
    rows: tuple[Row, ...] = ("sac", "rlpd", "bc", "dsrl", "residual", "filtered", "student")
    """The learners to run, in order (bc before the three that start from it)."""
    demos: int = 20
    style: str = "multimodal-human"
    """Expert style of the demonstrations."""
    action: ActionName = "task"
    """The action space every learner acts in (the demonstrations are recorded in it): the
    task's own (joint-delta), ee-delta or ee-position (``robot-rl record --action``)."""
    target_box: bool = False
    """With an end-effector action: its targets clipped into the task's box (``robot-rl
    record --target-box``), for every learner and the demonstrations."""
    control_hz: float = 50.0
    """The rate every learner (and the demonstrations) acts at [Hz]: the physics step times
    the task's decimation; each episode keeps its length in seconds."""
    sac_hz: float | None = None
    """SAC from scratch's own rate [Hz] (None: --control-hz): its row is stored under the
    table of that rate and printed beside this one's, marked with its rate."""
    rlpd_hz: float | None = None
    """RLPD's own rate [Hz] (None: --control-hz), with demonstrations recorded at it: as
    --sac-hz. SAC and RLPD meet their targets at 10 Hz, the learners from flow-BC at 50 Hz,
    where the demonstrations are imitated best (docs/performance/learners.md)."""
    motion: bool = False
    """The motion profile of joint targets on (``--env.motion.enabled``) for every learner
    and the demonstrations (``robot-rl record --motion``)."""
    ramp: bool = False
    """Joint commands ramped over each control step (``--env.motion.ramp``, ``robot-rl
    record --ramp``) for every learner and the demonstrations."""
    shield_penalty: float = 0.0
    """Weight of the ``shield`` reward term (-1 in each control step whose motion a shield
    layer reshaped: ``MOTION_LAYERS``) in every learner's env (the demonstrations keep the
    rewards they were recorded with: the task's own); 0: off, the task's default (issue 48)."""
    action_rate: float | None = None
    """Weight of the ``action_rate`` reward term (-||a_t - a_{t-1}||^2 per control step) in
    every learner's env; None: the task's own (0.01). Against a policy whose action flips by
    more than the shield's rate limit (1.0 per step; issue 48)."""
    eval_every: int = 20_000
    """Env steps between the learners' evaluations."""
    eval_episodes: int = 64
    final_episodes: int = 200
    """Fresh episodes of each final policy (the success claims of 90% and more)."""
    sac_budget: float = 2400.0
    """SAC from scratch: wall-clock budget [s] (it also stops two evaluations after 95%)."""
    sac_updates: int = 2
    """SAC: gradient steps per vector step of 16 envs."""
    sac_mirror: bool = False
    """Each of SAC's sampled transitions mirrored with probability 1/2 (``robot-rl train
    --mirror``; push and lift on arm7)."""
    rlpd_budget: float = 1500.0
    rlpd_critics: int = 10
    """RLPD's critic ensemble (its reference: 10)."""
    rlpd_utd: float = 1.0
    """RLPD's critic updates per env step (its reference: 20; see the docs for the fit)."""
    rlpd_envs: int = 4
    rlpd_init_alpha: float = 1.0
    """RLPD's initial temperature (its reference: 1.0; a deviation to measure at a CPU update
    ratio, where the temperature comes down 160x slower per env step than at UTD 20)."""
    rlpd_demo_ratio: float = 0.5
    """RLPD: share of each batch drawn from the demonstrations (its reference: 0.5)."""
    rlpd_mirror: bool = False
    """Each of RLPD's sampled transitions (demonstrations and online) mirrored with
    probability 1/2 (``robot-rl finetune --mirror``; push and lift on arm7)."""
    rlpd_freeze_normalizer: bool = True
    """RLPD: the observation normalizer frozen at the demonstrations' statistics (ours; the
    reference normalizes nothing); off: running statistics, as SAC from scratch."""
    bc_steps: int = 10_000
    bc_horizon: int = 8
    """Actions in each chunk flow-BC predicts."""
    bc_execute: int = 4
    """Steps of each chunk flow-BC executes before it plans again."""
    bc_ignore_obs: tuple[str, ...] = ("last_action",)
    """Observation terms flow-BC (and so DSRL's, the residual's and filtered BC's base, and
    the student) does not see (``robot-rl bc --policy.ignore-obs``); empty: all of them."""
    bc_drop_idle: bool = True
    """Flow-BC leaves out the demonstrations' idle frames (action 0: the human-like
    pauses; ``robot-rl bc --drop-idle``)."""
    bc_mirror: bool = False
    """Flow-BC learns from every demonstration also as its mirror image about the arm base's
    x-z plane (``robot-rl bc --mirror``; push and lift on arm7)."""
    finetune_budget: float = 1800.0
    """DSRL, residual and filtered BC: wall-clock budget each [s] (see the next two)."""
    dsrl_budget: float | None = None
    """DSRL's own wall-clock budget [s] (default: --finetune-budget)."""
    filtered_budget: float | None = None
    """Filtered BC's own wall-clock budget [s] (default: --finetune-budget)."""
    finetune_steps: int = 300_000
    """DSRL, residual and filtered BC: env steps each at most."""
    stop_at_target: bool = False
    """Stop a learner once two evaluations in a row reach 95% (on until 2026-11-29). Off,
    each trains to its budget and the final success over fresh episodes is that of the
    policy there: a pair of 64-episode evaluations stopped a residual at 140k env steps
    whose policy then had 94.5% over 200 (docs/performance/learners.md). The env steps to a success
    come from the evaluations either way."""
    keep_every: int = 0
    """SAC, RLPD, DSRL and residual: also keep the policy of every this many env steps in
    the row's run (checkpoints/step_<env steps>.pt, for robot-rl eval at that point)."""
    dsrl_updates: int = 20
    """DSRL's gradient steps per vector step of 4 envs (its reference: 20)."""
    residual_updates: int = 20
    """The residual's gradient steps per vector step of 16 decisions (``robot-rl residual
    --sac.updates-per-step``)."""
    residual_scale: float = 0.4
    """The residual's bound (``robot-rl residual --scale``)."""
    residual_every: int | None = None
    """Control steps per residual decision, the correction held between (``robot-rl
    residual --every``; default: those in 0.1 s, 5 at 50 Hz)."""
    residual_n_step: int = 1
    """The residual's rewards per TD target (``robot-rl residual --sac.n-step``)."""
    residual_explore_ramp: int = 100_000
    """Env steps of the residual's progressive exploration (``robot-rl residual
    --explore-ramp``; Policy Decorator's --prog-explore; 0: none)."""
    residual_critic_warmup: int = 0
    """The residual's critic-only gradient steps first (``robot-rl residual
    --critic-warmup``)."""
    residual_actor_lr: float = 3e-4
    """The residual actor's learning rate (``robot-rl residual --sac.actor-lr``; ResFiT:
    1e-6 at 4 updates per transition)."""
    residual_gamma: float | None = None
    """The residual's discount per decision (``robot-rl residual --sac.gamma``; default:
    from the task's horizon, push 0.994 per control step, 0.970 per decision of 5; ResFiT:
    0.99 per control step)."""
    residual_entropy: float = -0.5
    """The residual's target entropy per action dimension (``robot-rl residual
    --sac.target-entropy-per-dim``; RLPD and SERL -1/2, Policy Decorator, WSRL and Cal-QL
    -1)."""
    residual_anchor: float = 0.0
    """Pull of the residual actor's mean toward zero correction (``robot-rl residual
    --sac.anchor``; TD3+BC's normalization; no reference's default: 0)."""
    residual_anchor_steps: int | None = None
    """Env steps over which the anchor fades (``robot-rl residual --anchor-steps``; None:
    the exploration ramp's)."""
    residual_critic_action: Literal["residual", "executed"] = "residual"
    """What the residual's critics score (``robot-rl residual --critic-action``; ResFiT
    and Policy Decorator: the executed action, with a held correction the decision's
    first)."""
    residual_demo_ratio: float = 0.0
    """Fraction of the residual's batches from the demonstrations (``robot-rl residual
    --demo-ratio``, with the executed action; ResFiT: 0.5)."""
    residual_critics: int = 2
    """The residual's critics, the target a min over a random 2 (``robot-rl residual
    --sac.num-critics``; ResFiT: 10 heads, min of 2)."""
    residual_critic_hidden: tuple[int, ...] = (256, 256)
    """The residual's critics' hidden layers (``robot-rl residual --sac.critic-hidden``;
    ResFiT: heads of 1024 on a shared trunk)."""
    residual_mirror: bool = False
    """Each of the residual's sampled transitions mirrored with probability 1/2
    (``robot-rl residual --mirror``; push and lift on arm7)."""
    residual_overtime: float = 0.0
    """Seconds a failed training episode of the residual runs on (``robot-rl residual
    --overtime``; no reference: 0)."""
    filtered_rollouts: int = 64
    filtered_steps: int = 2_000
    student_teacher: Literal["best", "bc", "dsrl", "residual"] = "best"
    """The student's teacher: the run of that row, or of the row with the highest final
    success among bc, dsrl and residual (of those in the results)."""
    student_sees: Literal["teacher", "all"] = "all"
    """What the student sees (``robot-rl distill --sees``, whose default is ``teacher``):
    its teacher's observation elements, or all of them (the last action too): of the 92.0%
    residual, a per-step student kept 90.0% of its success seeing what the flow sees and
    95.0% seeing all (200 episodes each, before the clock;
    docs/performance/history/learners-3.md)."""
    student_clock: bool = True
    """A residual teacher's student sees its teacher's clock (``robot-rl distill --clock``,
    on by default there too): of the 92.0% residual, students of seeds 0, 1 and 2 kept
    99.8%, 97.6% and 96.5% of its success with it, one of seed 0 93.0% without (600 paired
    episodes each, 12,000 steps per iteration; docs/performance/history/learners-3.md)."""
    student_dr: Literal["off", "default", "strong"] = "off"
    """Domain randomization of the student's DAgger rollouts (``robot-rl distill --dr``;
    the paired evaluation is always without)."""
    student_hidden: tuple[int, ...] = (256, 256, 256)
    student_block: Literal["residual", "plain"] = "plain"
    """The student's MLP (``robot-rl distill --chunk-block``): plain hidden layers, or
    residual blocks (len(hidden) of them, each 4x a plain layer's multiply-adds)."""
    student_envs: int = 64
    """Envs of each DAgger iteration's rollouts (one episode each)."""
    student_iterations: int = 8
    """DAgger iterations of the one-step student."""
    student_grad_steps: int = 12_000
    """Gradient steps per DAgger iteration of the student (a student with a clock kept
    92.3% with 6,000, 99.8% with 12,000; docs/performance/history/learners-3.md)."""
    latency_calls: int = 10_000
    """Single chunk calls timed per artifact, in a process of its own after 1,000 calls of
    warm-up (``robot_rl.bench.latency``)."""
    threads: int | None = 1
    """CPU threads of the RL learners (torch and the physics; None: one per core). The tables
    so far were measured with 1, the runner's default, which leaves the second core idle."""
    out: Path = Path("runs/bench/learners")
    redo: bool = False
    """Run rows again even if results.json has them."""
    seed: int = 0


def _space(args: Args) -> list[str]:
    """The table's action space and motion profile as parts of its names (none for the
    task's own space without the profile)."""
    return (([] if args.action == "task" else [args.action])
            + (["box"] if args.target_box else [])
            + ([] if args.control_hz == 50.0 else [f"{args.control_hz:g}hz"])
            + (["motion"] if args.motion else [])
            + (["ramp"] if args.ramp else [])
            + ([f"shield{args.shield_penalty:g}"] if args.shield_penalty else [])
            + ([] if args.action_rate is None else [f"rate{args.action_rate:g}"]))


def _key(args: Args, row: str) -> str:
    return "/".join([args.task, *_space(args), args.style, str(args.demos), row])


def _row_args(args: Args, row: str) -> Args:
    """The arguments ``row`` runs with: at its own rate where --sac-hz / --rlpd-hz set one
    (its key, demonstrations and runs then those of that rate's table)."""
    hz = {"sac": args.sac_hz, "rlpd": args.rlpd_hz}.get(row)
    if hz is None or hz == args.control_hz:
        return args
    return dataclasses.replace(args, control_hz=hz, sac_hz=None, rlpd_hz=None)


def _table_name(args: Args) -> str:
    """The folder name of one table's demonstrations and runs (task, space, motion, style,
    demos): tables of another space, profile or style never share a run directory."""
    return "-".join([args.task, *_space(args), args.style, str(args.demos)])


def _env(args: Args) -> TaskConfig:
    """The task's config as every learner (and the demonstrations) use it: at
    ``--control-hz``, each episode ``EPISODE_SECONDS`` long."""
    from robot_rl.controllers import MotionConfig
    from robot_rl.recording.record import named_action
    from robot_rl.sim import make_task_config
    from robot_rl.sim.tasks.config import decimation_for

    action = named_action(args.task, args.action, args.target_box)
    cfg = make_task_config(args.task, motion=MotionConfig(enabled=args.motion, ramp=args.ramp),
                           **({} if action is None else {"action": action}))
    cfg.decimation = decimation_for(args.control_hz, cfg.physics_dt)
    cfg.episode_length = round(EPISODE_SECONDS[args.task] / cfg.control_dt)
    if args.shield_penalty:
        cfg.reward_weights = {**cfg.reward_weights, "shield": args.shield_penalty}
    if args.action_rate is not None:
        cfg.reward_weights = {**cfg.reward_weights, "action_rate": args.action_rate}
    return cfg


def _results(args: Args) -> dict[str, Any]:
    path = args.out / "results.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def _save(args: Args, row: str, value: dict[str, Any]) -> None:
    res = _results(args)
    res[_key(args, row)] = value
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(res, indent=2) + "\n")


def dataset(args: Args, console: Console) -> Path:
    """The demonstrations (recorded once)."""
    from robot_rl.recording.config import RecordConfig
    from robot_rl.recording.record import record

    out = args.out / "data" / _table_name(args)
    if not (out / "meta" / "info.json").is_file():
        console.print(f"recording {args.demos} {args.style} demonstrations of {args.task}...")
        record(RecordConfig(task=args.task, teleop="expert", expert_style=args.style,  # type: ignore[arg-type]
                            episodes=args.demos, out=out, action=args.action,
                            target_box=args.target_box,
                            motion=args.motion, ramp=args.ramp,
                            control_hz=args.control_hz,
                            episode_length=_env(args).episode_length, success_only=True,
                            seed=args.seed, progress=False), console=Console(quiet=True))
    return out


def final_success(run: Path, episodes: int, seed: int) -> dict[str, float]:
    """The final policy's success, return and cost over fresh episodes, as ``robot-rl
    eval`` measures it (the decision its artifact makes)."""
    from robot_rl.kinds.eval_config import EvalConfig
    from robot_rl.kinds.evaluation import evaluate_path

    res = evaluate_path(EvalConfig(path=run, episodes=episodes, num_envs=32,
                                   seed=seed + 50_000)).result
    return {"final_success": res.success_rate, "final_return": res.return_mean,
            "final_cost": res.cost_mean, "final_episodes": res.episodes}


def _budget(own: float | None, args: Args) -> float:
    """A fine-tuner's wall-clock budget: its own where given, else --finetune-budget."""
    return args.finetune_budget if own is None else own


def _common(args: Args) -> dict[str, Any]:
    return dict(eval_every=args.eval_every, eval_episodes=args.eval_episodes,
                runs_dir=args.out / "runs" / _table_name(args), save_replay=False,
                checkpoint_every=1e9, keep_every=args.keep_every, progress=False,
                seed=args.seed, target_success=0.95 if args.stop_at_target else None,
                target_evals=2, threads=args.threads)


def row_sac(args: Args, console: Console) -> dict[str, Any]:
    from robot_rl.runner import Runner
    from robot_rl.train_config import TrainConfig

    cfg = TrainConfig(task=args.task, env=_env(args), time_budget=args.sac_budget,
                      mirror=args.sac_mirror, run_name="sac", **_common(args))
    cfg.sac.updates_per_step = args.sac_updates
    runner = Runner(cfg, console=Console(file=sys.stderr))
    runner.train()
    s = runner.cfg.sac
    return {**curve_summary(runner.run_dir),
            "recipe": f"16 envs, 2 LayerNorm critics 256x256, {s.updates_per_step} updates "
                      f"per 16 env steps, gamma {s.gamma:.3f}"
                      + (", half of every batch mirrored" if args.sac_mirror else "")}


def row_rlpd(args: Args, console: Console) -> dict[str, Any]:
    from robot_rl.finetune import FinetuneRunner
    from robot_rl.finetune.configs import FinetuneConfig, rlpd_sac

    env = _env(args)
    updates = max(1, round(args.rlpd_utd * args.rlpd_envs))
    sac = dataclasses.replace(rlpd_sac(), num_critics=args.rlpd_critics,
                              updates_per_step=updates, init_alpha=args.rlpd_init_alpha,
                              freeze_normalizer=args.rlpd_freeze_normalizer,
                              actor_update_every=max(1, round(args.rlpd_utd)))
    cfg = FinetuneConfig(demos=dataset(args, console), task=args.task, env=env,
                         method="rlpd", num_envs=args.rlpd_envs, sac=sac,
                         demo_ratio=args.rlpd_demo_ratio, mirror=args.rlpd_mirror,
                         time_budget=args.rlpd_budget, run_name="rlpd", **_common(args))
    runner = FinetuneRunner(cfg, console=Console(file=sys.stderr))
    runner.train()
    return {**curve_summary(runner.run_dir),
            "recipe": f"{args.rlpd_envs} envs, {args.rlpd_critics} LayerNorm critics "
                      f"256x256 (min of 2), UTD {args.rlpd_utd:g} (reference 20), actor "
                      f"every {sac.actor_update_every} critic steps, "
                      f"{args.rlpd_demo_ratio:.0%} demonstrations per batch, "
                      f"initial alpha {args.rlpd_init_alpha:g}"
                      + ("" if args.rlpd_freeze_normalizer else ", running normalizer")
                      + (", half of every batch mirrored" if args.rlpd_mirror else "")}


def row_bc(args: Args, console: Console) -> dict[str, Any]:
    from robot_rl.bc import BCRunner
    from robot_rl.bc.config import BCConfig
    from robot_rl.policies import PolicyConfig

    cfg = BCConfig(demos=dataset(args, console), algo="bc-flow",
                   policy=PolicyConfig(horizon=args.bc_horizon, execute=args.bc_execute,
                                       width=256, blocks=2, ignore_obs=args.bc_ignore_obs),
                   drop_idle=args.bc_drop_idle, mirror=args.bc_mirror,
                   steps=args.bc_steps, eval_every=args.bc_steps,
                   eval_episodes=args.eval_episodes, seed=args.seed,
                   runs_dir=args.out / "runs" / _table_name(args), run_name="bc-flow",
                   progress=False, checkpoint_every=1e9)
    runner = BCRunner(cfg, console=Console(file=sys.stderr))
    t0 = time.perf_counter()
    runner.train()
    return {"env_steps": 0, "seconds": time.perf_counter() - t0, "run": str(runner.run_dir),
            "first_success": runner.history[-1]["success_rate"], "train_cost": 0.0,
            "cost_per_1k_steps": 0.0,
            "recipe": f"flow matching, H {args.bc_horizon} / K {args.bc_execute}, 256 x 2 "
                      f"blocks, "
                      f"{args.bc_steps:,} steps"
                      + (f", not seen: {', '.join(args.bc_ignore_obs)}"
                         if runner.policy.unseen_note() else "")
                      + (f", {runner.demos.idle_dropped:,} idle frames left out"
                         if runner.demos.idle_dropped else "")
                      + (f", {runner.demos.mirrored} episodes also mirrored"
                         if runner.demos.mirrored else "")}


def _bc_run(args: Args) -> Path:
    bc = _results(args).get(_key(args, "bc"))
    if bc is None:
        raise SystemExit("run the bc row first (the flow policy the fine-tuners start from)")
    return Path(bc["run"])


def row_dsrl(args: Args, console: Console) -> dict[str, Any]:
    from robot_rl.finetune import DSRLRunner
    from robot_rl.finetune.configs import DSRLConfig, dsrl_sac

    sac = dataclasses.replace(dsrl_sac(), updates_per_step=args.dsrl_updates)
    runner = DSRLRunner(DSRLConfig(policy=_bc_run(args), sac=sac,
                                   time_budget=_budget(args.dsrl_budget, args),
                                   total_steps=args.finetune_steps, run_name="dsrl",
                                   **_common(args)), console=Console(file=sys.stderr))
    runner.train()
    return {**curve_summary(runner.run_dir),
            "recipe": f"4 envs, noise of the {runner.env.noise_steps} executed steps, tanh + "
                      f"LayerNorm 3x256, {args.dsrl_updates} updates per vector step, "
                      f"gamma {runner.cfg.sac.gamma:.3f} per chunk"}


def row_residual(args: Args, console: Console) -> dict[str, Any]:
    from robot_rl.finetune.configs import ResidualConfig, residual_sac
    from robot_rl.finetune.residual import ResidualRunner

    sac = dataclasses.replace(residual_sac(), updates_per_step=args.residual_updates,
                              n_step=args.residual_n_step, actor_lr=args.residual_actor_lr,
                              gamma=args.residual_gamma, anchor=args.residual_anchor,
                              target_entropy_per_dim=args.residual_entropy,
                              num_critics=args.residual_critics,
                              critic_hidden=args.residual_critic_hidden)
    runner = ResidualRunner(ResidualConfig(policy=_bc_run(args), sac=sac,
                                           scale=args.residual_scale,
                                           every=args.residual_every,
                                           critic_warmup=args.residual_critic_warmup,
                                           explore_ramp=args.residual_explore_ramp,
                                           anchor_steps=args.residual_anchor_steps,
                                           critic_action=args.residual_critic_action,
                                           demo_ratio=args.residual_demo_ratio,
                                           overtime=args.residual_overtime,
                                           mirror=args.residual_mirror,
                                           time_budget=args.finetune_budget,
                                           total_steps=args.finetune_steps,
                                           run_name="residual", **_common(args)),
                            console=Console(file=sys.stderr))
    runner.train()
    return {**curve_summary(runner.run_dir),
            "recipe": f"16 envs, residual x {args.residual_scale}, {args.residual_critics} "
                      f"LayerNorm critics"
                      + (" (min of a random 2)" if args.residual_critics > 2 else "")
                      + f" {'x'.join(map(str, args.residual_critic_hidden))}, "
                        f"{args.residual_updates} updates per 16 decisions"
                      + (f", a decision every {runner.cfg.every} control steps"
                         if runner.cfg.every != 1 else "")
                      + (f", {args.residual_n_step}-step returns"
                         if args.residual_n_step > 1 else "")
                      + (f", progressive exploration over {args.residual_explore_ramp:,} "
                         f"env steps" if args.residual_explore_ramp else "")
                      + (f", {args.residual_critic_warmup:,} critic-only updates first"
                         if args.residual_critic_warmup else "")
                      + (f", actor lr {args.residual_actor_lr:g}"
                         if args.residual_actor_lr != 3e-4 else "")
                      + (f", gamma {args.residual_gamma:g}" if args.residual_gamma else "")
                      + (f", target entropy {args.residual_entropy:g} per dimension"
                         if args.residual_entropy != -0.5 else "")
                      + (f", the actor's mean anchored at zero correction (w "
                         f"{args.residual_anchor:g}{_fade(runner.cfg)})"
                         if args.residual_anchor else "")
                      + (", critics on the executed action"
                         if args.residual_critic_action == "executed" else "")
                      + (f", {args.residual_demo_ratio:.0%} of every batch from the "
                         f"demonstrations" if args.residual_demo_ratio else "")
                      + (f", failed training episodes {args.residual_overtime:g} s longer"
                         if args.residual_overtime else "")
                      + (", half of every batch mirrored" if args.residual_mirror else "")}


def _fade(cfg: Any) -> str:
    """How the residual's anchor fades, for its recipe."""
    steps = cfg.anchor_fade()
    return f", fading over {steps:,} env steps" if steps else ""


def row_filtered(args: Args, console: Console) -> dict[str, Any]:
    from robot_rl.bc.config import FilteredBCConfig
    from robot_rl.bc.filtered import FilteredBC

    fb = FilteredBC(FilteredBCConfig(
        policy=_bc_run(args), rounds=1000, rollouts=args.filtered_rollouts,
        steps=args.filtered_steps, total_steps=args.finetune_steps,
        time_budget=_budget(args.filtered_budget, args),
        eval_episodes=args.eval_episodes, seed=args.seed,
        runs_dir=args.out / "runs" / _table_name(args), run_name="filtered"),
        console=Console(file=sys.stderr))
    fb.train()
    return {**curve_summary(fb.run_dir),
            "recipe": f"{args.filtered_rollouts} rollouts then {args.filtered_steps:,} BC "
                      f"steps per round"}


def _student_teacher(args: Args) -> Path:
    """The run the student learns from (``Args.student_teacher``)."""
    res = _results(args)
    rows: tuple[Row, ...] = ("bc", "dsrl", "residual") if args.student_teacher == "best" \
        else (args.student_teacher,)
    done = [res[_key(args, r)] for r in rows if _key(args, r) in res]
    if not done:
        raise SystemExit(f"run the {' or '.join(rows)} row first (the student's teacher)")
    return Path(max(done, key=lambda r: r["final_success"])["run"])


def row_student(args: Args, console: Console) -> dict[str, Any]:
    from robot_rl.distill.chunked import distill_chunked
    from robot_rl.distill.configs import DaggerConfig, DistillConfig
    from robot_rl.kinds.base import ExportConfig
    from robot_rl.kinds.export import export_path

    run = _student_teacher(args)
    dagger = DaggerConfig(iterations=args.student_iterations, num_envs=args.student_envs,
                          grad_steps=args.student_grad_steps, batch_size=256,
                          dr=args.student_dr, eval_episodes=0, seed=args.seed, progress=False)
    student, _ = distill_chunked(DistillConfig(run=run, hidden=args.student_hidden,
                                               chunk_block=args.student_block,
                                               sees=args.student_sees, clock=args.student_clock,
                                               dagger=dagger), Console(file=sys.stderr))
    lat = {}
    for which in ("teacher", "student"):
        out = args.out / "artifacts" / args.task / which
        export_path(ExportConfig(run=run, policy=which, out=out))  # type: ignore[arg-type]
        lat[which] = chunk_latency(out, args.latency_calls)
    paired = {which: final_success(args.out / "artifacts" / args.task / which,
                                   args.final_episodes, args.seed)
              for which in ("teacher", "student")}
    return {"teacher": str(run), "teacher_success": paired["teacher"]["final_success"],
            "student_success": paired["student"]["final_success"],
            "teacher_return": paired["teacher"]["final_return"],
            "student_return": paired["student"]["final_return"],
            "recipe": f"{args.student_iterations} DAgger iterations x {args.student_envs} envs, "
                      f"{args.student_grad_steps:,} steps each, {args.student_block} "
                      f"{'x'.join(map(str, args.student_hidden))}"
                      + (", sees every observation element" if args.student_sees == "all"
                         else "")
                      + (f", sees its teacher's clock {student.cfg.clock}"
                         if student.cfg.clock else "")
                      + (f", rollouts under {args.student_dr} randomization"
                         if args.student_dr != "off" else ""),
            "teacher_p50_us": lat["teacher"][0],
            "teacher_p99_us": lat["teacher"][1], "student_p50_us": lat["student"][0],
            "student_p99_us": lat["student"][1]}


ROWS = {"sac": row_sac, "rlpd": row_rlpd, "bc": row_bc, "dsrl": row_dsrl,
        "residual": row_residual, "filtered": row_filtered, "student": row_student}
LABELS = {"sac": "SAC from scratch", "rlpd": "RLPD", "bc": "flow-BC",
          "dsrl": "flow-BC + DSRL", "residual": "flow-BC + residual",
          "filtered": "flow-BC + filtered BC"}


def run(args: Args, console: Console) -> None:
    for row in args.rows:
        at = _row_args(args, row)
        if _key(at, row) in _results(args) and not args.redo:
            continue
        console.print(f"[bold]{_key(at, row)}[/bold]")
        t0 = time.perf_counter()
        value = ROWS[row](at, console)
        if row != "student":
            value.update(final_success(Path(value["run"]), args.final_episodes, args.seed))
        value["wall_seconds"] = time.perf_counter() - t0
        if row in ("sac", "rlpd", "dsrl", "residual"):
            value["recipe"] += f", {args.threads or 'all'} thread(s)"
        _save(at, row, value)
        console.print(f"  done in {value['wall_seconds']:.0f} s")
    table(args, console)


def table(args: Args, console: Console) -> None:
    res = _results(args)
    space: str = "the task's action space" if args.action == "task" else args.action
    space += f" at {args.control_hz:g} Hz"
    space += ", motion profile on" if args.motion else ""
    space += ", ramped commands" if args.ramp else ""
    t = Table(title=f"{args.task} in {space}, {args.demos} {args.style} demonstrations: env "
                    f"steps (s) to success in {args.eval_episodes}-episode evaluations; "
                    f"final success over fresh episodes", title_justify="left")
    for col in ("learner", "start", "to 80%", "to 90%", "to 95%", "best", "final",
                "env steps", "seconds", "cost / 1k steps", "recipe"):
        t.add_column(col, justify="left" if col in ("learner", "recipe") else "right")

    def to(v: dict[str, Any], pct: int) -> str:
        n = v.get(f"env_steps_to_{pct}")
        if n is None:
            return "-" if "env_steps_to_80" not in v else f"> {v['env_steps']:,.0f}"
        return f"{n:,.0f} ({v[f'seconds_to_{pct}']:.0f} s)"

    total = 0.0
    for row, label in LABELS.items():
        at = _row_args(args, row)
        v = res.get(_key(at, row))
        if v is None:
            continue
        if at is not args:
            label += f" at {at.control_hz:g} Hz"
        total += v.get("wall_seconds", 0.0)
        final = f"{v['final_success']:.1%} ({v['final_episodes']})" if "final_success" in v \
            else "-"
        best = f"{v['best_success']:.0%}" if "best_success" in v else "-"
        t.add_row(label, f"{v['first_success']:.0%}", to(v, 80), to(v, 90), to(v, 95), best,
                  final, f"{v['env_steps']:,.0f}", f"{v['seconds']:.0f}",
                  f"{v['cost_per_1k_steps']:.2f}", v["recipe"])
    console.print(t)
    _targets(args, res, console)
    s = res.get(_key(args, "student"))
    if s is not None:
        total += s.get("wall_seconds", 0.0)
        st = Table(title="one-step student vs its teacher (exported; success over "
                         f"{args.final_episodes} paired episodes; one chunk call, onnxruntime, "
                         "1 thread)", title_justify="left")
        for col in ("teacher", "teacher", "student", "kept", "return teacher / student",
                    "teacher p50 / p99 [us]", "student p50 / p99 [us]", "speed-up (p50)"):
            st.add_column(col, justify="right")
        st.add_row(Path(s["teacher"]).name, f"{s['teacher_success']:.1%}",
                   f"{s['student_success']:.1%}",
                   f"{s['student_success'] / s['teacher_success']:.1%}"
                   if s["teacher_success"] > 0 else "-",
                   f"{s['teacher_return']:.1f} / {s['student_return']:.1f}"
                   if "teacher_return" in s else "-",
                   f"{s['teacher_p50_us']:.0f} / {s['teacher_p99_us']:.0f}",
                   f"{s['student_p50_us']:.1f} / {s['student_p99_us']:.1f}",
                   f"{s['teacher_p50_us'] / s['student_p50_us']:.1f}x")
        console.print(st)
    console.print(f"wall clock of the rows above: {total / 60:.0f} min")


def _targets(args: Args, res: dict[str, Any], console: Console) -> None:
    """The issue's targets, met or not, from the rows measured."""
    if args.task != "push":
        return
    sac = res.get(_key(_row_args(args, "sac"), "sac"))
    rlpd = res.get(_key(_row_args(args, "rlpd"), "rlpd"))
    lines = []
    if sac is not None:
        n = sac.get("env_steps_to_80")
        got = f"> {sac['env_steps']:,.0f}" if n is None else f"{n:,.0f}"
        lines.append(f"SAC to 80% in <= 300k env steps: "
                     f"{'met' if n is not None and n <= 300_000 else 'not met'} ({got})")
    if sac is not None and rlpd is not None:
        s80, r80 = sac.get("env_steps_to_80"), rlpd.get("env_steps_to_80")
        met = r80 is not None and s80 is not None and r80 <= s80 / 3
        lines.append(f"RLPD to 80% in <= 1/3 of SAC's env steps: {'met' if met else 'not met'}")
    for row in ("dsrl", "residual", "filtered"):
        v = res.get(_key(args, row))
        if v is None or sac is None:
            continue
        ok = v.get("final_success", 0.0) >= 0.95 and v["env_steps"] <= 300_000 and \
            v["seconds"] <= 3600 and v["cost_per_1k_steps"] <= sac["cost_per_1k_steps"]
        lines.append(f"{LABELS[row]} >= 95% within 300k env steps and 60 min, cost <= SAC's: "
                     f"{'met' if ok else 'not met'}")
    st = res.get(_key(args, "student"))
    if st is not None:
        kept = st["student_success"] / max(st["teacher_success"], 1e-9)
        n = args.final_episodes
        lines.append(f"student >= 95% of its teacher's success: "
                     f"{'met' if kept >= 0.95 else 'not met'} ({kept:.1%}: "
                     f"{st['student_success'] * n:.0f} against {st['teacher_success'] * n:.0f} "
                     f"successes in {n} paired episodes)")
        speed = st["teacher_p50_us"] / st["student_p50_us"]
        lines.append(f"student >= 10x lower latency: {'met' if speed >= 10 else 'not met'} "
                     f"({speed:.1f}x at p50)")
        lines.append(f"student p99 <= 50 us per call: "
                     f"{'met' if st['student_p99_us'] <= 50 else 'not met'} "
                     f"({st['student_p99_us']:.1f} us)")
    for line in lines:
        console.print(line)


def failures(args: Args, console: Console) -> None:
    """Where the demonstrations' expert and the bc row's flow policy fail on push."""
    import statistics

    import torch

    from robot_rl.bc import bc_env, load_bc_policy
    from robot_rl.bc.runner import chunked_policy_fn
    from robot_rl.finetune.residual import base_executor
    from robot_rl.sim import make_env
    from robot_rl.sim.experts import make_expert

    if args.task != "push":
        raise SystemExit("--part failures reads the puck: push only")
    expert_env = make_env(_env(args), 32, seed=args.seed)
    expert = make_expert(expert_env, args.style, seed=args.seed)  # type: ignore[arg-type]
    policies: dict[str, tuple[Any, Any]] = {
        f"expert ({args.style})": (lambda _: expert(expert_env.state), lambda _: None)}
    run = _bc_run(args)
    policy, bc_cfg, state = load_bc_policy(run)
    policy = policy.eval()
    gen = torch.Generator().manual_seed(args.seed)
    sampled = chunked_policy_fn(policy, gen, bc_cfg.ensemble)
    policies["flow-BC, sampled noise (as exported)"] = (sampled, sampled.reset)
    zero = base_executor(policy)
    policies["flow-BC, zero noise (the residual's base)"] = (zero, zero.reset)
    t = Table(title=f"push in {args.action}: success at the episode's end by the push's "
                    f"length and direction (0 deg: away from the robot), {8 * 32} episodes "
                    f"each; the goal reached at any step; failures by what the puck did",
              title_justify="left")
    for col in ("policy", "at the end", "reached", "first reached (median step)", "< 15 cm",
                "15-20 cm", "20-30 cm", ">= 30 cm", "away", "to +y", "to -y",
                "reached, then lost (median end distance)", "puck still", "> 10 cm off",
                "4-10 cm off"):
        t.add_column(col, justify="left" if col == "policy" else "right")

    def rate(rows: list[dict[str, float]]) -> str:
        won = sum(r["end"] for r in rows)
        return f"{won}/{len(rows)}" if rows else "-"

    flow_env = bc_env(state, run, "--part failures", 32, args.seed)
    for name, (act, start) in policies.items():
        env = expert_env if name.startswith("expert") else flow_env
        rows = push_episodes(env, act, start, 8, args.seed + 70_000)
        reached = [r for r in rows if r["first"] >= 0]
        dropped = [r for r in reached if not r["end"]]
        never = [r for r in rows if r["first"] < 0]
        t.add_row(name, f"{sum(r['end'] for r in rows) / len(rows):.1%}",
                  f"{len(reached) / len(rows):.1%}",
                  f"{statistics.median(r['first'] for r in reached):.0f}" if reached else "-",
                  *(rate([r for r in rows if lo <= r["length"] < hi])
                    for lo, hi in ((0, 0.15), (0.15, 0.2), (0.2, 0.3), (0.3, 9))),
                  *(rate([r for r in rows if lo <= r["direction"] < hi])
                    for lo, hi in ((-45, 45), (45, 180), (-180, -45))),
                  f"{len(dropped)} ({100 * statistics.median(r['final'] for r in dropped):.1f} "
                  f"cm)" if dropped else "0",
                  str(sum(r["moved"] < 0.01 for r in never)),
                  str(sum(r["moved"] >= 0.01 and r["closest"] > 0.10 for r in never)),
                  str(sum(r["moved"] >= 0.01 and r["closest"] <= 0.10 for r in never)))
    console.print(t)


def main(args: Args) -> None:
    console = Console(width=max(160, Console().width))
    {"run": run, "table": table, "failures": failures}[args.part](args, console)


if __name__ == "__main__":
    main(tyro.cli(Args))
