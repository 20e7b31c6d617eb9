"""The ``robot-rl`` command: ``robot-rl <group> <command> [options]``.

    robot-rl train --task reach --safety gate           train SAC with a safety critic
    robot-rl eval RUN --episodes 50 --video eval.mp4    evaluate a run, student or artifact
    robot-rl distill RUN                                DAgger a small student
    robot-rl distill-pixels --task push                 DAgger a student that sees cameras
    robot-rl train-pixels --student STUDENT.pt          asymmetric SAC on cameras (fine-tune)
    robot-rl export RUN                                 ONNX + TorchScript + policy.json
    robot-rl deploy ARTIFACT --robot sim [--ros]        run a policy on the (simulated) arm
    robot-rl record --task push --teleop keyboard       record demonstrations into a dataset
    robot-rl data info | validate | replay PATH         inspect, check, replay a dataset
    robot-rl data view PATH [--out FILE.rrd]            the dataset's frames in Rerun
    robot-rl data import BAG... --task reach --out DIR  rosbag2/MCAP recordings into a dataset
    robot-rl finetune --demos data/push --method rlpd   offline-to-online from demos (RLPD/WSRL)
    robot-rl finetune-robot --init RUN                  fine-tune on the robot (HIL-SERL, Ray)
    robot-rl bc --demos data/push --algo bc-flow        behaviour cloning of a chunked policy
    robot-rl bc-filtered RUN                            BC re-trained on its own successes
    robot-rl dsrl RUN                                   fine-tune a flow policy: SAC on its noise
    robot-rl residual RUN                               fine-tune a flow policy: a residual
    robot-rl sim info                                   robots, tasks, model sizes
    robot-rl robot import ARM.urdf --name A --tip-link T  a URDF as one of our arms
    robot-rl robot urdf arm7 --out arm7.urdf            one of our arms as a URDF
    robot-rl sim rollout --task push --policy expert --video out.mp4
    robot-rl bench sim                                  simulation throughput table
    robot-rl bench controllers                          controller and shield cost tables
    robot-rl camera list | probe [--playback FILE]      check a RealSense camera
    robot-rl reward train DATA | eval CLF DATA          success classifier on camera frames
    robot-rl sysid record --out DATA | fit DATA         identify the arm's dynamics from its logs
    robot-rl sysid gap RUN PARAMS                       the policy on the identified arm vs nominal

``robot-rl <group> <command> --help`` explains every option. Errors in input (unknown names,
bad values, missing files) print one line and exit with status 2.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from robot_rl.kinds import commands as kind_commands
from robot_rl.kinds.command import Command

OWN_COMMANDS = {
    "eval": ("robot_rl.kinds.eval_config:EvalConfig", "robot_rl.cli.learn:eval_cmd"),
    "distill": ("robot_rl.distill.configs:DistillConfig", "robot_rl.cli.learn:distill_cmd"),
    "distill-pixels": ("robot_rl.distill.configs:PixelDistillConfig",
                       "robot_rl.cli.learn:distill_pixels_cmd"),
    "export": ("robot_rl.kinds.base:ExportConfig", "robot_rl.cli.export:export_cmd"),
    "deploy": ("robot_rl.cli.deploy:DeployCommandConfig", "robot_rl.cli.deploy:deploy_cmd"),
    "record": ("robot_rl.recording.config:RecordConfig", "robot_rl.cli.data:record_cmd"),
}
"""The CLI's own top-level commands: where their config and the function that runs them
live (``module:name``), imported only for the command that runs (``--help`` imports the
config alone)."""


def _command(name: str) -> Command:
    """A top-level command: the CLI's own, or the kind's that makes its runs."""
    if name in OWN_COMMANDS:
        return _lazy(*OWN_COMMANDS[name])
    from robot_rl.kinds import command_kind

    return command_kind(name).command(name)


def _top_level() -> dict[str, Command]:
    return {name: _command(name) for name in top_level()}


def _lazy(config: str, run: str) -> Command:
    """The command whose config is ``config`` and whose run function is ``run``
    (``module:name`` each); the run function's module is imported when it runs."""
    import importlib

    def attr(where: str) -> Any:
        module, name = where.split(":")
        return getattr(importlib.import_module(module), name)

    return Command(attr(config), lambda cfg: attr(run)(cfg))


OWN_SUMMARIES = {
    "eval": "Evaluate a run, checkpoint, student or exported artifact: success, cost, shield",
    "distill": "Distill a run's actor into a small student MLP (DAgger)",
    "distill-pixels": "Distil a state teacher into a student that sees cameras (DAgger)",
    "export": "Export a policy as the deploy artifact (ONNX + TorchScript + policy.json)",
    "deploy": "Run an exported policy on a robot at a fixed rate, behind gate and shield",
    "record": "Record teleoperated (or scripted) demonstrations into a dataset",
}
"""The top-level commands that are not a learner kind's."""


def top_level() -> tuple[str, ...]:
    """The top-level commands: the kinds' (``robot_rl.kinds``, a kind registered at run time
    included), then the CLI's own."""
    return tuple(kind_commands()) + tuple(OWN_SUMMARIES)


GROUP_COMMAND_SOURCES: dict[str, dict[str, tuple[str, str]]] = {
    "sim": {"info": ("robot_rl.cli.sim:SimInfoConfig", "robot_rl.cli.sim:info"),
            "rollout": ("robot_rl.cli.sim:SimRolloutConfig", "robot_rl.cli.sim:rollout")},
    "robot": {"import": ("robot_rl.cli.robot:RobotImportConfig", "robot_rl.cli.robot:import_cmd"),
              "urdf": ("robot_rl.cli.robot:RobotUrdfConfig", "robot_rl.cli.robot:urdf_cmd")},
    "bench": {"sim": ("robot_rl.bench.configs:BenchSimConfig",
                      "robot_rl.bench.sim_throughput:run"),
              "controllers": ("robot_rl.bench.configs:BenchControllersConfig",
                              "robot_rl.bench.controllers:run")},
    "camera": {"list": ("robot_rl.cli.camera:CameraListConfig", "robot_rl.cli.camera:list_cmd"),
               "probe": ("robot_rl.cli.camera:CameraProbeConfig",
                         "robot_rl.cli.camera:probe_cmd")},
    "data": {"info": ("robot_rl.cli.data:DataInfoConfig", "robot_rl.cli.data:info_cmd"),
             "view": ("robot_rl.cli.data:DataViewConfig", "robot_rl.cli.data:view_cmd"),
             "validate": ("robot_rl.cli.data:DataValidateConfig",
                          "robot_rl.cli.data:validate_cmd"),
             "replay": ("robot_rl.cli.data:DataReplayConfig", "robot_rl.cli.data:replay_cmd"),
             "import": ("robot_rl.cli.data:DataImportConfig", "robot_rl.cli.data:import_cmd")},
    "reward": {"train": ("robot_rl.vision.configs:RewardTrainConfig",
                         "robot_rl.cli.reward:train_cmd"),
               "eval": ("robot_rl.vision.configs:RewardEvalConfig",
                        "robot_rl.cli.reward:eval_cmd")},
    "sysid": {"record": ("robot_rl.cli.sysid:SysidRecordConfig", "robot_rl.cli.sysid:record_cmd"),
              "fit": ("robot_rl.cli.sysid:SysidFitConfig", "robot_rl.cli.sysid:fit_cmd"),
              "gap": ("robot_rl.cli.sysid:SysidGapConfig", "robot_rl.cli.sysid:gap_cmd")},
}
"""Each group's commands: their config and run function (``module:name``), imported only
for the command that runs."""


def _commands() -> dict[str, dict[str, Command]]:
    return {group: {name: _lazy(*where) for name, where in commands.items()}
            for group, commands in GROUP_COMMAND_SOURCES.items()}


GROUPS = {"sim": "simulation: inspect robots and tasks, run policies, record videos",
          "robot": "arms: import one from its URDF, write one of ours as a URDF",
          "bench": "benchmarks that print side-by-side tables",
          "camera": "RealSense cameras: list them, probe a stream or a recording",
          "data": "datasets of episodes: summarise, view in Rerun, validate, replay in "
                  "simulation, import bags",
          "reward": "success classifiers on camera frames, the reward where no state tells "
                    "success",
          "sysid": "system identification: record an excitation on the arm, fit its dynamics"}


GROUP_SUMMARIES = {
    "sim info": "Show the robots, the tasks (sizes, rates, terms) and versions",
    "sim rollout": "Run a policy in the batched simulation; success, return, safety cost",
    "robot import": "Import an arm from its URDF (a file or /robot_description) as --env.robot",
    "robot urdf": "Write one of our arms as a URDF (robot_state_publisher, RViz, MoveIt)",
    "bench sim": "Simulation throughput: ours vs EnvPool vs gymnasium vs the physical limit",
    "bench controllers": "Controller and shield latency (one sample) and overhead (batched)",
    "camera list": "List the connected RealSense cameras (name, serial, firmware, USB)",
    "camera probe": "Stream a RealSense (live or a recording): rate, resolution, depth, timing",
    "data info": "Summarise a dataset: task, robot, episodes, frames, success, cameras",
    "data view": "Look at a dataset in Rerun: joints, actions, reward, cost, flags, cameras",
    "data validate": "Check every file of a dataset against its metadata",
    "data replay": "Replay recorded episodes' actions in simulation from their initial states",
    "data import": "Import a real arm's rosbag2/MCAP logs onto one of our tasks",
    "reward train": "Train a success classifier on camera frames (HIL-SERL's reward)",
    "reward eval": "Evaluate a success classifier on a dataset's labelled frames",
    "sysid record": "Play an excitation on the arm through the shield; record it as a dataset",
    "sysid fit": "Fit the arm's masses, damping, friction, gains and delay to recordings",
    "sysid gap": "Predict a policy's sim-to-real gap: the identified arm vs the nominal one",
}
"""One line per command of a group for ``robot-rl --help``, which imports no command (torch
alone costs seconds); ``robot-rl COMMAND --help`` gives the whole story."""

GROUP_COMMANDS = {group: [name.split(" ", 1)[1] for name in GROUP_SUMMARIES
                          if name.startswith(f"{group} ")] for group in GROUPS}


def every_command() -> list[tuple[str, ...]]:
    """Every command as its words on the command line: ``("train",)``, ``("sim", "info")``."""
    return [(name,) for name in top_level()] + [
        (group, name) for group in GROUPS for name in GROUP_COMMANDS[group]]


def summaries() -> dict[str, str]:
    """One line per command, top-level and grouped."""
    return {**kind_commands(), **OWN_SUMMARIES, **GROUP_SUMMARIES}


def _usage(console: Console) -> None:
    console.print("usage: robot-rl <command> [options]  |  robot-rl <group> <command> [options]\n",
                  markup=False)
    table = Table(show_header=True, header_style="bold", box=None)
    table.add_column("command")
    table.add_column("what it does")
    lines = summaries()
    for name in top_level():
        table.add_row(f"robot-rl {name}", lines[name])
    for group in GROUPS:
        for name in GROUP_COMMANDS[group]:
            table.add_row(f"robot-rl {group} {name}", lines[f"{group} {name}"])
    console.print(table)


def main(argv: Sequence[str] | None = None) -> None:
    import robot_rl

    robot_rl.mark_command_start()
    args = list(sys.argv[1:] if argv is None else argv)
    out, err = Console(), Console(stderr=True)
    if not args or args[0] in ("-h", "--help"):
        _usage(out)
        return
    if args[0] in ("-V", "--version"):
        from robot_rl import __version__

        out.print(f"robot-rl {__version__}")
        return
    group = args[0]
    if group in top_level():
        _run(_command(group), args[1:], f"robot-rl {group}", err)
        return
    if group not in GROUPS:
        _fail(err, f"unknown command {group!r}; commands: {', '.join(top_level())}; "
                   f"groups: {', '.join(GROUPS)}")
    names = GROUP_COMMANDS[group]
    if len(args) < 2 or args[1] in ("-h", "--help"):
        out.print(f"usage: robot-rl {group} <command> [options]\n", markup=False)
        for name in names:
            out.print(f"  {name:10s} {GROUP_SUMMARIES[f'{group} {name}']}", markup=False)
        if len(args) < 2:
            sys.exit(2)
        return
    name = args[1]
    if name not in names:
        _fail(err, f"unknown command 'robot-rl {group} {name}'; commands: {', '.join(names)}")
    _run(_lazy(*GROUP_COMMAND_SOURCES[group][name]), args[2:], f"robot-rl {group} {name}", err)


def _run(cmd: Command, args: list[str], prog: str, err: Console) -> None:
    from robot_rl.errors import RobotRLError

    try:
        captured = io.StringIO()
        try:
            with contextlib.redirect_stderr(captured):
                config = parse_config(cmd.config, args, prog)
        except SystemExit as e:
            if e.code:
                line = unknown_option_line(captured.getvalue(), prog)
                if line is None:
                    sys.stderr.write(captured.getvalue())
                    raise
                _fail(err, line)
            raise
        sys.stderr.write(captured.getvalue())
        cmd.run(config)
    except RobotRLError as e:
        _fail(err, str(e))
    except KeyboardInterrupt:
        err.print("robot-rl: interrupted")
        sys.exit(130)


CHOICES = ("--env.action", "--env.controller")
"""Options that pick a config class (tyro subcommands): ``--env.action ee-delta`` is
rewritten to tyro's own spelling ``env.action:ee-delta``."""


def parse_config(config: type, args: list[str], prog: str = "robot-rl") -> Any:
    """The config of a command from its command line (tyro, with the two-phase defaults of
    ``_task_default``); tyro's SystemExit for --help or bad flags."""
    import tyro

    return tyro.cli(config, args=_choice_flags(args), prog=prog, description=config.__doc__,
                    default=_task_default(config, args),
                    config=(tyro.conf.CascadeSubcommandArgs,))


def _choice_flags(args: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        flag, eq, value = a.partition("=")
        if flag in CHOICES and eq:
            out.append(f"{flag[2:]}:{value}")
        elif a in CHOICES and i + 1 < len(args) and not args[i + 1].startswith("-"):
            out.append(f"{a[2:]}:{args[i + 1]}")
            i += 1
        else:
            out.append(a)
        i += 1
    return out


def _task_default(config: type, args: list[str]) -> Any:
    """Two-phase parsing of configs with a ``task`` name and an ``env`` (the task's config):
    the task named on the command line (or the field's default) gives the default ``env``,
    so every field of that task's config is an option (``--env.episode-length``) and
    ``--help`` lists them; a ``method`` named there gives its recipe's defaults the same
    way. None for other configs."""
    if not dataclasses.is_dataclass(config):
        return None
    fields = {f.name: f for f in dataclasses.fields(config)}
    if "task" not in fields or "env" not in fields:
        return None
    import tyro

    # the task, and a learner's method (whose recipe gives the defaults of --sac.*)
    picked = {name: _flag(args, name) or fields[name].default
              for name in ("task", "method") if name in fields}
    preset = _flag(args, "preset") if "preset" in fields else None
    required = {name: tyro.MISSING for name, f in fields.items() if f.init and
                f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    # an arm named with --env.robot lays the task out for its reach (RobotSpec.task_layout)
    if (robot := _flag(args, "env.robot")) is not None:
        from robot_rl.sim import make_task_config

        required["env"] = make_task_config(str(picked["task"]), robot=robot)
    make: Any = config
    made = make(**picked, **required)
    if preset == "gpu":  # the preset's values are the defaults the flags override
        from robot_rl.train_config import with_preset

        made = with_preset(made, "gpu")
    return made


def _flag(args: list[str], name: str) -> str | None:
    """The value the command line gives ``--name`` (``--name V`` or ``--name=V``; the last
    one counts, as for the parser), or None."""
    value = None
    for i, a in enumerate(args):
        if a == f"--{name}" and i + 1 < len(args):
            value = args[i + 1]
        elif a.startswith(f"--{name}="):
            value = a.split("=", 1)[1]
    return value


def unknown_option_line(text: str, prog: str) -> str | None:
    """tyro's box for misspelled options (``text``) as one line with its closest flag, or
    None where the box says something else."""
    lines = [ln.strip(" │╭╮╰╯─\n") for ln in text.splitlines()]
    bad = next((ln.split(":", 1)[1] for ln in lines if ln.startswith("Unrecognized options:")),
               None)
    if bad is None:
        return None
    flags = [b.strip() for b in bad.split(",") if b.strip().startswith("-")]
    if not flags:
        return None
    hint = ""
    if "Perhaps you meant:" in lines:
        after = lines[lines.index("Perhaps you meant:") + 1:]
        near = next((ln.split()[0] for ln in after if ln.startswith("--")), None)
        if near is not None:
            hint = f"; did you mean {near}?"
    return f"unknown option {', '.join(flags)} for {prog}{hint} ({prog} --help lists them)"


def _fail(console: Console, message: str) -> None:
    console.print(f"robot-rl: error: {message}", markup=False, highlight=False, soft_wrap=True)
    sys.exit(2)
