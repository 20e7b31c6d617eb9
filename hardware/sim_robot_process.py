"""The simulated arm in a process of its own, as a real arm's driver is.

``SimRobot`` steps its physics on a thread of the caller's process, which then shares Python's
GIL with the deploy loop: every physics step can delay a loop tick. A real arm never runs in
the policy's process, so timing figures are taken against this instead:

    with SimRobotProcess(SimRobotConfig(interface="effort")) as robot:   # same Robot interface
        r = robot.observe(); robot.send_action(cmd); robot.ee_pos()

The child process runs an ordinary ``SimRobot`` (same physics, latency, noise, delay and
held-out dynamics). After every physics step it publishes the reading ``observe`` may return
(latency applied) and the ground truth into shared memory, and picks up the newest command,
so a command acts at the next physics step, as with the threaded arm. Readings carry the
child's ``time.monotonic`` stamps, which is the same clock system-wide on Linux.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from typing import Any

import numpy as np

from robot_rl.errors import ConfigError
from robot_rl.hardware.robot import INTERFACES, JointCommand, JointReading, Robot
from robot_rl.hardware.sim_robot import SimRobotConfig, init_sim_arm
from robot_rl.robots import get_robot


class _Layout:
    """Offsets into the shared float64 block for an arm of n joints."""

    def __init__(self, n: int):
        self.n = n
        fields = [("reading_seq", 1), ("stamp", 1), ("q", n), ("qd", n), ("effort", n),
                  ("true_q", n), ("ee_pos", 3), ("steps", 1), ("late_steps", 1),
                  ("cmd_seq", 1), ("cmd_interface", 1), ("cmd_hold", 1), ("cmd_gripper", 1),
                  ("cmd_values", n), ("sensing", 1)]
        self.slices: dict[str, slice] = {}
        at = 0
        for name, width in fields:
            self.slices[name] = slice(at, at + width)
            at += width
        self.size = at

    def views(self, block: Any) -> dict[str, np.ndarray]:
        a = np.frombuffer(block, dtype=np.float64)
        return {name: a[s] for name, s in self.slices.items()}


class SimRobotProcess(Robot):
    """``SimRobot`` in a child process behind the same Robot interface (module docstring)."""

    def __init__(self, cfg: SimRobotConfig | None = None, start_timeout: float = 60.0):
        super().__init__()
        self.cfg, self.spec = init_sim_arm(self, cfg)
        self.start_timeout = start_timeout
        self._layout = _Layout(self.spec.num_joints)
        ctx = mp.get_context("spawn")  # no fork of a process holding torch/ROS threads
        self._block = ctx.RawArray("d", self._layout.size)
        self._lock = ctx.Lock()
        self._v = self._layout.views(self._block)
        self._v["sensing"][0] = 1.0
        self._ctx = ctx
        self._proc: Any = None
        self._control: Any = None
        self._last_seq = -1.0
        self._last: JointReading | None = None

    # -- Robot -----------------------------------------------------------------------------

    def connect(self) -> None:
        if self._proc is not None:
            return
        parent, child = self._ctx.Pipe()
        self._control = parent
        self._proc = self._ctx.Process(target=_child, name="sim-robot",
                                       args=(self.cfg, self._block, self._lock, child),
                                       daemon=True)
        self._proc.start()
        deadline = time.monotonic() + self.start_timeout
        while not parent.poll(0.05):
            if not self._proc.is_alive():
                code = self._proc.exitcode
                self._proc = None
                raise ConfigError(
                    f"the simulated arm's process exited (code {code}) before it was ready; a "
                    f"script that starts one needs an `if __name__ == \"__main__\":` guard "
                    f"(multiprocessing spawns it by importing the main module)")
            if time.monotonic() > deadline:
                self.close()
                raise ConfigError(f"the simulated arm's process did not start within "
                                  f"{self.start_timeout:g} s")
        msg = parent.recv()
        if msg != "ready":
            self.close()
            raise ConfigError(f"the simulated arm's process failed: {msg}")
        deadline = time.monotonic() + 5.0
        while self._read() is None and time.monotonic() < deadline:
            time.sleep(0.001)

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            self._control.send(("stop", None))
        except (BrokenPipeError, OSError):
            pass
        proc.join(timeout=5.0)
        if proc.is_alive():
            proc.kill()
            proc.join()

    def _read(self) -> JointReading | None:
        v = self._v
        with self._lock:
            seq = v["reading_seq"][0]
            if seq == self._last_seq:
                return self._last
            if seq == 0:
                return None
            reading = JointReading(v["q"].copy(), v["qd"].copy(), float(v["stamp"][0]),
                                   effort=v["effort"].copy())
        self._last_seq, self._last = seq, reading
        return reading

    def _write(self, cmd: JointCommand) -> None:
        v = self._v
        with self._lock:
            v["cmd_values"][:] = cmd.values
            v["cmd_interface"][0] = INTERFACES.index(cmd.interface)
            v["cmd_hold"][0] = float(cmd.hold)
            v["cmd_gripper"][0] = np.nan if cmd.gripper is None else cmd.gripper
            v["cmd_seq"][0] += 1

    # -- the simulation's controls and ground truth ------------------------------------------

    @property
    def sensing(self) -> bool:
        """False simulates a dead sensor: no new measurements (the physics goes on)."""
        return bool(self._v["sensing"][0])

    @sensing.setter
    def sensing(self, on: bool) -> None:
        self._v["sensing"][0] = float(on)

    def reset(self, q: tuple[float, ...] | np.ndarray | None = None) -> None:
        """Put the arm at rest at ``q`` (default: home), holding there."""
        self._call("reset", None if q is None else np.asarray(q, dtype=np.float64))

    def ee_pos(self) -> np.ndarray:
        """(3,) true end-effector position after the latest physics step."""
        with self._lock:
            return self._v["ee_pos"].copy()

    def true_q(self) -> np.ndarray:
        with self._lock:
            return self._v["true_q"].copy()

    @property
    def steps(self) -> int:
        return int(self._v["steps"][0])

    @property
    def late_steps(self) -> int:
        return int(self._v["late_steps"][0])

    def _call(self, what: str, arg: Any) -> None:
        if self._proc is None:
            raise ConfigError("the simulated arm is not connected")
        self._control.send((what, arg))
        reply = self._control.recv()
        if reply != "ok":
            raise ConfigError(f"simulated arm: {what} failed: {reply}")


def _child(cfg: SimRobotConfig, block: Any, lock: Any, control: Any) -> None:
    """The child process: a threaded SimRobot whose physics steps publish to shared memory."""
    from robot_rl.hardware.sim_robot import SimRobot

    try:
        layout = _Layout(get_robot(cfg.robot).num_joints)
        v = layout.views(block)
        robot = SimRobot(cfg)
        seen = [0.0]
        interface = INTERFACES

        def after_step() -> None:  # on the physics thread, after every step
            robot.sensing = bool(v["sensing"][0])
            reading = robot.observe()  # latency applied
            true_q, ee_pos = robot.true_q(), robot.ee_pos()
            with lock:
                if reading is not None and reading.stamp != v["stamp"][0]:
                    v["q"][:], v["qd"][:] = reading.q, reading.qd
                    if reading.effort is not None:
                        v["effort"][:] = reading.effort
                    v["stamp"][0] = reading.stamp
                    v["reading_seq"][0] += 1
                v["true_q"][:], v["ee_pos"][:] = true_q, ee_pos
                v["steps"][0], v["late_steps"][0] = robot.steps, robot.late_steps
                cmd = None
                if v["cmd_seq"][0] != seen[0]:
                    seen[0] = v["cmd_seq"][0]
                    g = float(v["cmd_gripper"][0])
                    cmd = JointCommand(interface[int(v["cmd_interface"][0])],
                                       v["cmd_values"].copy(), None if np.isnan(g) else g,
                                       hold=bool(v["cmd_hold"][0]))
            if cmd is not None:
                robot._write(cmd)  # limits were applied by the parent's send_action

        robot.on_step = after_step
        robot.connect()
    except Exception as e:  # noqa: BLE001 - reported to the parent, which raises it
        control.send(f"{type(e).__name__}: {e}")
        return
    control.send("ready")
    try:
        while True:
            what, arg = control.recv()
            if what == "stop":
                break
            if what == "reset":
                robot.reset(arg)  # the next physics step publishes the reset state
            control.send("ok")
    except (EOFError, KeyboardInterrupt):
        pass  # the parent went away
    finally:
        robot.close()
