"""The live view without a display: the same scene in Rerun (``sim.rerun_scene``), here
saved to a file and read back with Rerun's dataframe reader: every visible geom's pose,
moving with the arm, the workspace box, and the refusals."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("rerun")

from robot_rl.errors import ConfigError  # noqa: E402
from robot_rl.sim import make_env  # noqa: E402
from robot_rl.sim.view import EnvView, ViewConfig  # noqa: E402


@pytest.mark.slow
def test_without_a_display_the_scene_goes_to_rerun(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    import rerun.chunk as rc

    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    env = make_env("reach", 1, seed=0)
    out = tmp_path / "scene.rrd"
    view = EnvView(env, ViewConfig(rerun_out=str(out)), title="test")
    assert view.view.mode == "rerun"
    view.watch()
    env.reset(seed=0)
    action = torch.zeros(1, env.act_dim)
    action[0, 0] = 1.0  # swing the base
    for _ in range(30):
        env.step(action)
        time.sleep(0.01)  # a few of the view's frames
    end = time.monotonic() + 30
    while view.view.synced < 3 and time.monotonic() < end:
        time.sleep(0.05)
    synced = view.view.synced
    view.close()
    assert synced >= 3
    store = rc.RrdReader(out).stream().collect()
    t = store.reader(index="time").to_arrow_table().to_pydict()
    static = store.reader(index=None).to_arrow_table().column_names
    assert any(c.startswith("/world/workspace:Boxes3D") for c in static)
    poses = [c for c in t if c.endswith(":Transform3D:translation")]
    assert len(poses) >= 8, poses  # the arm's links, the table, the target marker
    # a geom of the hand moved as the base swung; the table did not
    hand = [c for c in poses if "hand" in c or "link7" in c or "ee" in c]
    moving = [c for c in poses if np.ptp(np.array([v[0] for v in t[c] if v is not None]),
                                         axis=0).max() > 0.01]
    assert moving and (not hand or set(hand) & set(moving)), (hand, moving)
    assert len(moving) < len(poses)  # the table and the floor stay put


def test_view_refusals() -> None:
    with pytest.raises(ConfigError, match="fps"):
        ViewConfig(fps=0).validate()
    with pytest.raises(ConfigError, match="batched simulation env"):
        EnvView(object())  # type: ignore[arg-type]
