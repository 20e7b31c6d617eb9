"""The registry of learner kinds: every way to train is a kind, found here by the tag its
checkpoints carry or by the command that makes its runs.

    run = load_run("runs/push__residual__0__20261130-002000")    # any kind's run
    ev = run_kind(run).evaluation(run, EvalOptions(num_envs=16, seed=100))
    ev.episodes(200, seed=100)                                  # -> EvalResult

A kind is a ``robot_rl.kinds.base.Kind`` subclass in a module of its own (``KIND`` in it);
adding one is that module plus one line in ``KINDS`` (or ``register`` at run time, for a
kind that lives outside the package). The registration holds the commands' one-line
summaries, so ``robot-rl --help`` lists them without importing any learner.
"""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path
from typing import TYPE_CHECKING

from robot_rl.errors import ConfigError

if TYPE_CHECKING:
    from robot_rl.kinds.base import Kind, Run


@dataclasses.dataclass(frozen=True)
class Registration:
    """One kind: its checkpoint tag, the module that defines it (as ``KIND``) and the
    commands that make its runs, each with its one-line summary."""

    name: str
    module: str
    commands: dict[str, str]


KINDS: dict[str, Registration] = {r.name: r for r in (
    Registration("sac", "robot_rl.kinds.sac", {
        "train": "Train a policy with SAC and a safety critic in batched simulation",
        "finetune": "Fine-tune from demonstrations with RLPD or WSRL (and the safety critic)",
        "finetune-robot": "Fine-tune a sim-trained policy on the robot: HIL-SERL on Ray"}),
    Registration("pixel_sac", "robot_rl.kinds.pixel_sac", {
        "train-pixels": "Asymmetric SAC on cameras (critics on state), from scratch or a "
                        "student"}),
    Registration("bc", "robot_rl.kinds.bc", {
        "bc": "Behaviour cloning of a chunked policy (flow matching or MLP) from a dataset",
        "bc-filtered": "Re-train a BC policy on its own successful rollouts (filtered BC)"}),
    Registration("dsrl", "robot_rl.kinds.dsrl", {
        "dsrl": "Fine-tune a flow policy with DSRL: SAC chooses its noise"}),
    Registration("residual", "robot_rl.kinds.residual", {
        "residual": "Fine-tune a flow policy with a bounded residual learned by SAC"}),
)}
"""The built-in kinds, in the order ``robot-rl --help`` lists their commands."""


def register(registration: Registration) -> None:
    """Add a kind (its module must be importable); a tag or command already taken is
    refused."""
    if registration.name in KINDS:
        raise ConfigError(f"a kind {registration.name!r} is already registered")
    taken = {c for r in KINDS.values() for c in r.commands}
    if clash := sorted(taken & set(registration.commands)):
        raise ConfigError(f"command {clash[0]!r} already belongs to another kind")
    KINDS[registration.name] = registration


def kind(name: str) -> Kind:
    """The kind of a checkpoint tag."""
    return _load(_registration(name))


def command_kind(command: str) -> Kind:
    """The kind whose runs ``robot-rl COMMAND`` makes."""
    for r in KINDS.values():
        if command in r.commands:
            return _load(r)
    raise ConfigError(f"no kind makes runs with the command {command!r}")


def commands() -> dict[str, str]:
    """Every kind's commands and their summaries, in registration order."""
    return {c: s for r in KINDS.values() for c, s in r.commands.items()}


def load_run(path: str | Path) -> Run:
    """The run of a run directory or checkpoint file, whatever kind wrote it."""
    from robot_rl.kinds.base import Run

    run = Run.open(path)
    _registration(run.kind)  # an unknown tag fails here; the kind's module loads when used
    return run


def run_kind(run: Run) -> Kind:
    """The kind that wrote ``run``."""
    return kind(run.kind)


def _registration(name: str) -> Registration:
    """The registration of a checkpoint tag; one clear error naming the kinds there are."""
    if name not in KINDS:
        raise ConfigError(f"unknown kind of run {name!r}; kinds: {', '.join(KINDS)}")
    return KINDS[name]


def _load(r: Registration) -> Kind:
    from robot_rl.kinds.base import Kind

    module = importlib.import_module(r.module)
    k = getattr(module, "KIND", None)
    if not isinstance(k, Kind) or k.name != r.name:
        raise ConfigError(f"module {r.module} does not define KIND, a Kind named {r.name!r}")
    if missing := sorted(set(r.commands) - set(k.commands())):
        raise ConfigError(f"kind {r.name!r} registers commands it does not define: "
                          f"{', '.join(missing)}")
    return k
