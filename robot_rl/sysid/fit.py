"""Fitting an arm's dynamics to its recording: CMA-ES over batched replays.

    result = fit(Replay(streams, robot), FitConfig(params=("link_mass", "actuator_gain")))
    result.values["link_mass"]       # (n,) one scale per link

1. The command delay: at every delay 0..max_delay, a coarse CMA-ES search (``survey``
   generations, on ``survey_segments`` of the segments) with every parameter shared by all
   joints (five coordinates at most), all delays in one batch per generation; the delay
   whose search ends lowest wins. (The cost
   is rugged across delays, and a heavier or softer arm looks like a later one to a scan at
   the nominal parameters.)
2. CMA-ES (the ``cmaes`` package) over the parameters as configured (per joint, or shared)
   at that delay, with ``population`` candidates per generation: ``restarts`` runs side by
   side, the first from the survey's answer, the others from seeded random starts around
   it, all with a third of ``sigma`` as their first step, each generation one batch.
3. Every delay is evaluated again at the best parameters (reported, ``delay_costs``).
4. Uncertainty: the spread of the answers of the restarts that converged (within 1.5x of
   the best cost), and a local curvature estimate (the
   Gauss-Newton covariance of the residuals around the best, from one batch of finite
   differences); ``std`` is the larger of the two. The curvature estimate takes the
   readings' errors as independent, which a trajectory's are not, so it is a lower bound.

Parameters are searched in log scale (scales, within ``scale_bounds``) and as a fraction of
``max_friction`` times each joint's torque limit (frictionloss; shared: one value for every
joint, up to ``max_friction`` times the median torque limit).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import numpy as np
import torch
from cmaes import CMA

from robot_rl.sim.configs import PARAMS
from robot_rl.sim.identified import IdentifiedDynamics
from robot_rl.sysid.configs import FitConfig
from robot_rl.sysid.replay import Replay


@dataclasses.dataclass
class FitResult:
    """The fitted values and how well they explain the recording."""

    values: dict[str, np.ndarray]
    """(n,) per fitted parameter."""
    std: dict[str, np.ndarray]
    """(n,) their uncertainty (see module docstring)."""
    delay: int
    """Command delay [physics steps]."""
    delay_costs: list[float]
    """The cost at each delay 0..max_delay at the fitted parameters."""
    cost_nominal: float
    cost_fit: float
    rms_nominal: float
    """Joint position RMS error of the nominal arm (at its best delay) [rad]."""
    rms_fit: float
    evaluations: int
    """Replays run (candidates), over every stage."""
    seconds: float
    restarts: list[dict[str, list[float]]]
    """Each restart's best values and cost."""


class _Encoding:
    """Search vector <-> parameter values: one coordinate per fitted value."""

    def __init__(self, cfg: FitConfig, tau_max: np.ndarray):
        self.n = n = len(tau_max)
        self.tau_max = tau_max
        self.parts = [(p, p in cfg.shared) for p in PARAMS if p in cfg.params]
        self.dim = sum(1 if shared else n for _, shared in self.parts)
        lo, hi = np.log(cfg.scale_bounds[0]), np.log(cfg.scale_bounds[1])
        self.f_max = cfg.max_friction * tau_max
        self.f_shared = cfg.max_friction * float(np.median(tau_max))
        """A shared friction is one value [Nm] for every joint, searched up to this."""
        bounds = []
        for p, shared in self.parts:
            bounds += [(0.0, 1.0) if p == "frictionloss" else (lo, hi)] * (1 if shared else n)
        self.bounds = np.array(bounds)

    def encode(self, values: dict[str, np.ndarray]) -> np.ndarray:
        """The search vector of per-joint ``values`` (n,) per parameter (a shared one: the
        joints' geometric mean, or mean for friction)."""
        x: list[float] = []
        for p, shared in self.parts:
            v = np.asarray(values[p], dtype=np.float64)
            if p == "frictionloss":
                z = np.array([v.mean() / self.f_shared]) if shared else v / self.f_max
            else:
                z = np.log(v)
            x += [float(z.mean())] if shared else list(z)
        return np.clip(np.array(x), self.bounds[:, 0], self.bounds[:, 1])

    def encode_all(self, values: dict[str, torch.Tensor]) -> np.ndarray:
        """(C, dim) search vectors of C rows of values (``decode``'s output of another
        encoding)."""
        c = len(next(iter(values.values())))
        return np.stack([self.encode({p: v[i].numpy() for p, v in values.items()})
                         for i in range(c)])

    def decode(self, x: np.ndarray) -> dict[str, torch.Tensor]:
        """{param: (C, n)} of search vectors ``x`` (C, dim)."""
        x = np.atleast_2d(x)
        out, i = {}, 0
        for p, shared in self.parts:
            w = 1 if shared else self.n
            v = np.broadcast_to(x[:, i:i + w], (len(x), self.n))
            i += w
            if p == "frictionloss":
                out[p] = torch.from_numpy(v * (self.f_shared if shared else self.f_max))
            else:
                out[p] = torch.from_numpy(np.exp(v))
        return out

    def value_std(self, x: np.ndarray, x_std: np.ndarray) -> dict[str, np.ndarray]:
        """(n,) std of each parameter's values from the search vector's std (first order)."""
        vals = {p: v[0].numpy() for p, v in self.decode(x).items()}
        out, i = {}, 0
        for p, shared in self.parts:
            w = 1 if shared else self.n
            s = np.broadcast_to(x_std[i:i + w], (self.n,))
            i += w
            if p == "frictionloss":
                out[p] = s * (self.f_shared if shared else self.f_max)
            else:
                out[p] = vals[p] * s
        return out


def fit(replay: Replay, cfg: FitConfig | None = None,
        log: Callable[[str], None] | None = None) -> FitResult:
    """Fit ``cfg.params`` to the recording ``replay`` holds (module docstring)."""
    cfg = cfg or FitConfig()
    cfg.validate()
    say = log or (lambda _: None)
    start = time.monotonic()
    enc = _Encoding(cfg, np.asarray(replay.robot.tau_max, dtype=np.float64))
    n = enc.n
    nominal = {p: replay.nominal_friction() if p == "frictionloss" else np.ones(n)
               for p in PARAMS}  # the arm as compiled
    x_nom = enc.encode(nominal)
    evaluations = 0

    def cost(x: np.ndarray, delay: int | np.ndarray, on: Replay = replay) -> np.ndarray:
        nonlocal evaluations
        x = np.atleast_2d(x)
        d = torch.as_tensor(np.broadcast_to(delay, (len(x),)).copy(), dtype=torch.long)
        evaluations += len(x)
        return on.cost(enc.decode(x), d).numpy()

    delays = np.arange(replay.cfg.max_delay + 1)
    lo, hi = enc.bounds[:, 0], enc.bounds[:, 1]
    scan0 = cost(np.tile(x_nom, (len(delays), 1)), delays)  # the nominal arm's baseline
    # 1: at every delay, a short search with every parameter shared by the joints (a few
    # coordinates: it converges in a few generations), all in one batch per generation; the
    # delay whose search ends lowest wins (the cost is rugged across delays, and a heavier
    # or softer arm looks like a later one to a scan at the nominal parameters)
    coarse = _Encoding(dataclasses.replace(cfg, shared=cfg.params), enc.tau_max)
    c_nom = coarse.encode(nominal)

    few = replay.narrowed(cfg.survey_segments)

    def coarse_cost(x: np.ndarray, delay: int | np.ndarray) -> np.ndarray:
        return cost(enc.encode_all(coarse.decode(x)), delay, few)

    survey = _cma_lockstep(coarse_cost, [c_nom] * len(delays), list(delays), cfg.sigma,
                           coarse.bounds, cfg.survey, cfg.population,
                           [cfg.seed] * len(delays))
    delay = int(np.argmin([c for c, _ in survey]))
    say("delay survey, joints sharing each parameter (" + ", ".join(
        f"{d}: {c:.3g}" for d, (c, _) in enumerate(survey)) + f"): {delay} physics steps")
    start_x = enc.encode({p: v[0].numpy() for p, v in coarse.decode(survey[delay][1]).items()})
    # 2: the restarts at that delay, in lockstep: from the survey's best and random starts
    rng = np.random.default_rng(cfg.seed)
    step = cfg.sigma / 3  # around the coarse answer, not from scratch
    means = [start_x] + [np.clip(start_x + rng.normal(0.0, step, enc.dim), lo, hi)
                         for _ in range(cfg.restarts - 1)]
    bests = _cma_lockstep(cost, means, [delay] * cfg.restarts, step, enc.bounds,
                          cfg.generations, cfg.population,
                          [cfg.seed + 1 + r for r in range(cfg.restarts)],
                          lambda g, c: say(f"generation {g}/{cfg.generations}: best cost "
                                           f"{min(c):.4g} (restarts: "
                                           + ", ".join(f"{x:.3g}" for x in c) + ")"),
                          patience=cfg.patience)
    best_cost, best_x = min(bests, key=lambda b: b[0])
    # 3: every delay at the fit (reported; a lower cost elsewhere is said)
    scan = cost(np.tile(best_x, (len(delays), 1)), delays)
    if int(np.argmin(scan)) != delay:
        say(f"note: at the fitted values delay {int(np.argmin(scan))} costs less "
            f"({scan.min():.4g} vs {scan[delay]:.4g}); kept {delay}, the survey's")
    x_std = _curvature_std(replay, enc, best_x, delay)
    evaluations += enc.dim + 1
    # the spread of the restarts that converged (within 1.5x of the best cost); one that
    # stopped far off says where the search failed, not how unsure the fit is
    converged = [x for c, x in bests if c <= 1.5 * best_cost]
    spread = np.std(converged, axis=0) if len(converged) > 1 else np.zeros(enc.dim)
    values = {p: v[0].numpy().copy() for p, v in enc.decode(best_x).items()}
    std = enc.value_std(best_x, np.maximum(x_std, spread))
    d = torch.tensor([int(np.argmin(scan0)), delay])  # the nominal arm at its best delay
    tr = replay.run(enc.decode(np.stack([x_nom, best_x])), d)
    rms = replay.rms_q(tr).numpy()
    costs = replay.cost_of(tr).numpy()
    evaluations += 2
    return FitResult(
        values=values, std=std, delay=delay, delay_costs=[float(c) for c in scan],
        cost_nominal=float(costs[0]), cost_fit=float(costs[1]), rms_nominal=float(rms[0]),
        rms_fit=float(rms[1]), evaluations=evaluations, seconds=time.monotonic() - start,
        restarts=[{"cost": [c], **{p: v[0].tolist() for p, v in enc.decode(x).items()}}
                  for c, x in bests])


def _cma_lockstep(cost: Callable[[np.ndarray, np.ndarray], np.ndarray],
                  means: list[np.ndarray], delays: list[int], sigma: float,
                  bounds: np.ndarray, generations: int, population: int, seeds: list[int],
                  progress: Callable[[int, list[float]], None] | None = None,
                  patience: int | None = None) -> list[tuple[float, np.ndarray]]:
    """Several CMA-ES runs side by side, run i from ``means[i]`` at ``delays[i]``, their
    candidates of a generation replayed in one batch; each run's (best cost, best vector).
    A run that has converged (``should_stop``, or its best fell by less than 0.1% over
    ``patience`` generations) leaves the batch."""
    opts = [CMA(mean=m.copy(), sigma=sigma, bounds=bounds, seed=s, population_size=population)
            for m, s in zip(means, seeds, strict=True)]
    start = cost(np.stack(means), np.asarray(delays))
    best = [(float(c), m.copy()) for c, m in zip(start, means, strict=True)]
    active = list(range(len(opts)))
    history: list[list[float]] = [[b[0]] for b in best]
    for g in range(1, generations + 1):
        xs = [np.stack([opts[i].ask() for _ in range(population)]) for i in active]
        d = np.repeat([delays[i] for i in active], population)
        js = cost(np.concatenate(xs), d).reshape(len(active), population)
        for i, x, j in zip(active, xs, js, strict=True):
            opts[i].tell(list(zip(x, j, strict=True)))
            k = int(np.argmin(j))
            if j[k] < best[i][0]:
                best[i] = (float(j[k]), x[k].copy())
        for i in active:
            history[i].append(best[i][0])
        stalled = {i for i in active if patience is not None and len(history[i]) > patience
                   and history[i][-1] > (1 - 1e-3) * history[i][-1 - patience]}
        active = [i for i in active if not opts[i].should_stop() and i not in stalled]
        if progress is not None and (g % 10 == 0 or g == generations or not active):
            progress(g, [b[0] for b in best])
        if not active:
            break
    return best


def _curvature_std(replay: Replay, enc: _Encoding, x: np.ndarray, delay: int,
                   h: float = 1e-3) -> np.ndarray:
    """(dim,) std of the search vector from the Gauss-Newton covariance of the replay's
    residuals at ``x`` (forward differences of step ``h``, one batch)."""
    xs = np.tile(x, (enc.dim + 1, 1))
    step = np.where(x + h <= enc.bounds[:, 1], h, -h)
    xs[1:] += np.diag(step)
    tr = replay.run(enc.decode(xs), torch.full((len(xs),), delay, dtype=torch.long))
    r = replay.residuals(tr).numpy()  # (dim + 1, N)
    jac = (r[1:] - r[0]).T / step  # (N, dim)
    dof = max(r.shape[1] - enc.dim, 1)
    sigma2 = float(r[0] @ r[0]) / dof
    info = jac.T @ jac
    try:
        cov = sigma2 * np.linalg.pinv(info)
    except np.linalg.LinAlgError:
        return np.full(enc.dim, np.inf)
    return np.sqrt(np.clip(np.diag(cov), 0.0, None))


def identified(result: FitResult, replay: Replay, *, sensing_latency: float = 0.0,
               source: dict | None = None) -> IdentifiedDynamics:
    """The fit as the parameter file ``make_env`` and ``robot-rl train`` take."""
    r = replay.robot
    return IdentifiedDynamics(
        robot=r.name, joint_names=tuple(r.joint_names),
        values={p: tuple(float(x) for x in v) for p, v in result.values.items()},
        std={p: tuple(float(x) for x in v) for p, v in result.std.items()},
        action_delay=result.delay * replay.cfg.physics_dt, sensing_latency=sensing_latency,
        fit={"delay_steps": result.delay, "physics_dt": replay.cfg.physics_dt,
             "rms_nominal": result.rms_nominal, "rms_fit": result.rms_fit,
             "cost_nominal": result.cost_nominal, "cost_fit": result.cost_fit,
             "evaluations": result.evaluations, "seconds": result.seconds,
             "restarts": result.restarts, **(source or {})})
