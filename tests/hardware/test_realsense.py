"""RealSense camera on a synthetic recording: the SDK's software_device + recorder write a
file in the test, and ``realsense.py`` plays it back through the real librealsense pipeline
(alignment included)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyrealsense2")

from robot_rl.hardware.cameras import CameraError  # noqa: E402
from robot_rl.hardware.cameras.realsense import RealSenseCamera, RealSenseConfig  # noqa: E402
from robot_rl.hardware.cameras.recording import pinhole, write_recording  # noqa: E402

N, FPS = 8, 30
CW, CH = 64, 48  # color
DW, DH = 32, 24  # depth: half the resolution, same field of view
NEAR, FAR = 800, 1600  # raw depth units (mm) of the left and right halves


def _color(k: int) -> np.ndarray:
    img = np.zeros((CH, CW, 3), np.uint8)
    img[..., 0] = 10 * k                               # frame index in red
    img[..., 1] = np.arange(CW, dtype=np.uint8)[None]  # column in green
    img[..., 2] = np.arange(CH, dtype=np.uint8)[:, None]  # row in blue
    return img


def _depth(k: int) -> np.ndarray:
    d = np.full((DH, DW), FAR + k, np.uint16)
    d[:, : DW // 2] = NEAR + k
    return d


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("realsense") / "synthetic.db3"
    return write_recording(path, [_color(k) for k in range(N)], [_depth(k) for k in range(N)],
                           fps=FPS, depth_scale=0.001, color_intrinsics=pinhole(CW, CH),
                           depth_intrinsics=pinhole(DW, DH))


def _play(recording: Path, slow: float = 0.0, **kw: object) -> list:
    """The frames the recording gives, checked to be one unbroken run: once the SDK's
    syncer has locked onto both streams nothing is lost (non-real-time playback waits for the
    reader). How many it drops while locking on, and whether a starved host sees the last
    ones before the end of the file is declared, depends on how busy the host is (a
    fresh-clone run on a loaded machine lost the first five), so no test relies on the first
    or the last frames. A fresh ``make test`` once got no pair at all (8 frames of one stream,
    none of the other, within the 3 s wait after the file): a play that reads nothing is
    played again, at most twice."""
    cfg = RealSenseConfig(playback=recording, real_time=False, **kw)  # type: ignore[arg-type]
    for _ in range(3):
        with RealSenseCamera(cfg) as cam:
            frames = []
            for f in cam:
                frames.append(f)
                time.sleep(slow)
        if frames:
            break
    numbers = [f.frame_number for f in frames]
    assert numbers and numbers == list(range(numbers[0], numbers[-1] + 1)), \
        f"frames {numbers}; framesets without every enabled stream skipped: {cam.incomplete}"
    return frames


@pytest.mark.slow
def test_playback_gives_every_frame_with_its_pixels_and_timestamps(recording: Path) -> None:
    frames = _play(recording)
    np.testing.assert_allclose([f.timestamp_ms for f in frames],
                               [f.frame_number * 1000 / FPS for f in frames], atol=1e-3)
    assert {f.timestamp_domain for f in frames} == {"hardware_clock"}
    host = [f.host_time for f in frames]
    assert host == sorted(host)
    for f in frames:
        np.testing.assert_array_equal(f.color, _color(f.frame_number))
        assert f.depth_scale == pytest.approx(0.001)
        assert f.intrinsics.width == CW and f.intrinsics.height == CH
        assert f.intrinsics.fx == pytest.approx(pinhole(CW, CH).fx, rel=1e-5)


@pytest.mark.slow
def test_slow_reader_loses_nothing(recording: Path) -> None:
    _play(recording, slow=2.5 / FPS)  # non-real-time playback waits for the reader


@pytest.mark.perf
def test_real_time_playback_keeps_the_recorded_pace(recording: Path) -> None:
    """A wall-clock pace (``-m perf``)."""
    with RealSenseCamera(RealSenseConfig(playback=recording, real_time=True)) as cam:
        frames = list(cam)
    span = frames[-1].host_time - frames[0].host_time
    recorded = (frames[-1].frame_number - frames[0].frame_number) / FPS
    assert span >= 0.7 * recorded, (span, recorded)


def test_depth_is_aligned_to_color(recording: Path) -> None:
    for f in _play(recording):
        k = f.frame_number
        assert f.depth.shape == (CH, CW)  # depth resampled onto the color grid
        m = f.depth_m()
        left, right = m[4:-4, 4: CW // 2 - 4], m[4:-4, CW // 2 + 4: -4]
        np.testing.assert_allclose(left, (NEAR + k) / 1000, atol=1e-6)
        np.testing.assert_allclose(right, (FAR + k) / 1000, atol=1e-6)


@pytest.mark.slow
def test_unaligned_and_color_to_depth(recording: Path) -> None:
    raw = _play(recording, align="none")
    for f in raw:
        np.testing.assert_array_equal(f.depth, _depth(f.frame_number))
        np.testing.assert_array_equal(f.color, _color(f.frame_number))
    to_depth = _play(recording, align="depth")
    for f in to_depth:
        assert f.color.shape == (DH, DW, 3) and f.depth.shape == (DH, DW)
        assert f.intrinsics.width == DW
        # The green channel holds the color column: depth column u sees color column ~2u.
        cols = f.color[DH // 2, 2: DW - 2, 1].astype(int)
        np.testing.assert_allclose(cols, 2 * np.arange(2, DW - 2), atol=2)


@pytest.mark.slow
def test_single_stream(recording: Path) -> None:
    depth_only = _play(recording, color=False)
    assert depth_only[0].color is None
    np.testing.assert_array_equal(depth_only[-1].depth, _depth(depth_only[-1].frame_number))
    color_only = _play(recording, depth=False)
    assert color_only[0].depth is None
    np.testing.assert_array_equal(color_only[-1].color, _color(color_only[-1].frame_number))
    with pytest.raises(CameraError, match="no depth"):
        color_only[0].depth_m()


class _SplittingSyncer:
    """The camera's syncer as a starved host's can behave: every frameset handed over as
    single-frame framesets, one stream at a time (depth first on odd frames)."""

    def __init__(self, syncer: object) -> None:
        import pyrealsense2 as rs

        self._syncer = syncer
        self._singles: list = []
        self._out = rs.frame_queue(4, keep_frames=True)
        self._block = rs.processing_block(
            lambda f, source: source.frame_ready(source.allocate_composite_frame([f])))
        self._block.start(self._out)

    def try_wait_for_frames(self, ms: int) -> tuple[bool, object]:
        if not self._singles:
            ok, frames = self._syncer.try_wait_for_frames(ms)  # type: ignore[attr-defined]
            if not ok:
                return False, None
            parts = list(frames.as_frameset())
            if parts[0].get_frame_number() % 2:
                parts.reverse()
            for part in parts:
                part.keep()
                self._block.invoke(part)
                self._singles.append(self._out.wait_for_frame())
        return True, self._singles.pop(0)


@pytest.mark.slow
def test_frames_the_syncer_hands_over_apart_are_paired_again(recording: Path) -> None:
    """(A second fresh make test of 0ec879f read no frame here at all, the flake _play
    already plays again for: now this test does too.)"""
    for align in ("none", "color"):
        for _ in range(3):  # a play that reads nothing is played again, as _play does
            with RealSenseCamera(RealSenseConfig(playback=recording, real_time=False,
                                                 align=align)) as cam:
                cam._syncer = _SplittingSyncer(cam._syncer)  # type: ignore[assignment]
                frames = list(cam)
                pairs = cam._pairs
            if frames:
                break
        numbers = [f.frame_number for f in frames]
        assert numbers and numbers == list(range(numbers[0], numbers[-1] + 1)), numbers
        assert pairs is not None and pairs.paired == len(frames)
        for f in frames:
            np.testing.assert_array_equal(f.color, _color(f.frame_number))
            if align == "none":
                np.testing.assert_array_equal(f.depth, _depth(f.frame_number))
            else:
                assert f.depth.shape == (CH, CW)
                np.testing.assert_allclose(f.depth_m()[4:-4, 4: CW // 2 - 4],
                                           (NEAR + f.frame_number) / 1000, atol=1e-6)


class _LateStreamSyncer(_SplittingSyncer):
    """A starved host's syncer at its worst: every frame alone; the first two depth frames
    at once, the later ones only after the SDK has been quiet for 1 s (the file read),
    longer than the 0.5 s end wait that follows frames already read."""

    def __init__(self, syncer: object) -> None:
        super().__init__(syncer)
        self._late: list = []
        self._quiet_since = time.monotonic()
        self._depth_seen = 0
        self.first_late: int | None = None

    def try_wait_for_frames(self, ms: int) -> tuple[bool, object]:
        deadline = time.monotonic() + ms / 1000
        while True:  # as the SDK does: a frame that comes within the wait is returned
            ok, f = super().try_wait_for_frames(5)
            if ok:
                self._quiet_since = time.monotonic()
                if not f.as_frameset().get_depth_frame():
                    return True, f
                self._depth_seen += 1
                if self._depth_seen <= 2:
                    return True, f
                if self.first_late is None:
                    self.first_late = f.get_frame_number()
                self._late.append(f)
                continue
            if self._late and time.monotonic() - self._quiet_since > 1.0:
                return True, self._late.pop(0)
            if time.monotonic() >= deadline:
                return False, None


@pytest.mark.slow
def test_a_stream_that_comes_after_the_end_of_the_file_is_still_paired(
        recording: Path) -> None:
    # a loaded host's syncer can drop the first depth frames while it locks onto both
    # streams (``_play``), leaving the double none to hold back: such a play is played again
    for _ in range(3):
        with RealSenseCamera(RealSenseConfig(playback=recording, real_time=False,
                                             align="none")) as cam:
            late = _LateStreamSyncer(cam._syncer)
            cam._syncer = late  # type: ignore[assignment]
            frames = list(cam)
        if late.first_late is not None:
            break
    assert late.first_late is not None  # the double held depth frames back
    numbers = [f.frame_number for f in frames]
    assert any(k >= late.first_late for k in numbers), (numbers, late.first_late)
    for f in frames:
        np.testing.assert_array_equal(f.depth, _depth(f.frame_number))
        np.testing.assert_array_equal(f.color, _color(f.frame_number))


def test_poll_never_blocks_and_read_needs_connect(recording: Path) -> None:
    cam = RealSenseCamera(RealSenseConfig(playback=recording, real_time=False))
    with pytest.raises(CameraError, match="not connected"):
        cam.read()
    with cam:
        got: list[int] = []
        deadline = time.monotonic() + 30.0
        while time.monotonic() < deadline and (not got or got[-1] < N - 1):
            f = cam.poll()
            if f is None:
                time.sleep(0.001)
            else:
                got.append(f.frame_number)
        assert got and got == list(range(got[0], got[-1] + 1)), (got, cam.incomplete)  # _play
        assert cam.read(timeout_s=0.2) is None  # end of the recording
    cam.close()  # twice is fine


def test_refusals_name_the_problem(recording: Path, tmp_path: Path) -> None:
    with pytest.raises(CameraError, match="does not exist"):
        RealSenseCamera(RealSenseConfig(playback=tmp_path / "missing.db3"))
    with pytest.raises(CameraError, match="at least one"):
        RealSenseCamera(RealSenseConfig(playback=recording, color=False, depth=False))
    with pytest.raises(CameraError, match=r"does not offer 640x480.*\n.*color 64x48 rgb8 @ 30 Hz"):
        RealSenseCamera(RealSenseConfig(playback=recording, width=640, height=480)).connect()
    with pytest.raises(CameraError, match="want"):
        write_recording(tmp_path / "bad.db3", [_color(0)], [_depth(0).astype(np.float32)])


def test_live_without_a_device_says_so() -> None:
    from robot_rl.hardware.cameras.realsense import list_devices

    if list_devices():
        pytest.skip("a RealSense is connected to this machine")
    with pytest.raises(CameraError, match=r"no RealSense device with serial 123 is connected "
                                          r"\(found: none\)"):
        RealSenseCamera(RealSenseConfig(serial="123", width=640, height=480, fps=30)).connect()


def test_cli_probe_reports_the_recording(recording: Path, capsys: pytest.CaptureFixture) -> None:
    from robot_rl.cli import main

    main(["camera", "probe", "--playback", str(recording), "--no-real-time", "--frames", "5"])
    out = capsys.readouterr().out
    assert "64x48 RGB" in out and "aligned to color" in out
    assert "0.80" in out and "hardware_clock" in out
    with pytest.raises(SystemExit) as e:
        main(["camera", "probe", "--playback", str(recording), "--fps", "90"])
    assert e.value.code == 2
    assert "depth 32x24 z16 @ 30 Hz" in capsys.readouterr().err
