"""Train and evaluate a success classifier on a dataset's camera frames: ``robot-rl reward``.

    clf, report = train_reward_classifier(RewardTrainConfig(dataset=Path("data/lift")))
    report = evaluate_reward_classifier(clf, Dataset("data/lift_test"))
    print(report.precision, report.recall)

A frame's label is whether the state it *shows* is a success. The recorder renders a frame
before the step whose result ``next.success`` describes, so frame t is labelled with frame
t-1's ``next.success`` (the first frame of an episode: not a success). Episodes, not frames,
are held out (``--holdout``): neighbouring frames of one episode look alike, and a frame-level
split would measure memory. The loss is binary cross-entropy, with DrQ's random shift on the
images; ``--balance`` weights the success frames by the other-to-success ratio, for datasets
where success is rare (it raises recall and lowers precision: for a reward, a false success
is the costlier error, as a policy learns to produce it). For the same reason the decision
threshold is chosen for precision: ``--validation`` of the training episodes are kept out of
the fit, and the threshold is the lowest at which their frames' precision reaches
``--precision`` (where none does, the one of highest precision); ``--precision 0`` uses
``--threshold`` as given and fits on every training episode. Precision and recall are then
measured at that threshold on the held-out episodes, which took no part in either choice.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import torch
from rich.console import Console

from robot_rl.checkpoint import save_atomic
from robot_rl.config_io import to_dict
from robot_rl.data.reader import Dataset, DatasetError
from robot_rl.data.recover import feature_names
from robot_rl.vision.configs import RewardTrainConfig
from robot_rl.vision.reward_classifier import (
    REWARD_CLASSIFIER_FORMAT,
    RewardClassifier,
    SuccessNet,
    resize_frames,
)


@dataclasses.dataclass
class SuccessFrames:
    """Every labelled frame of some episodes. N frames; k state columns."""

    frames: dict[str, torch.Tensor]
    """Camera -> (N, 3, size, size) uint8."""
    state: torch.Tensor
    """(N, k) float32."""
    label: torch.Tensor
    """(N,) bool: the frame shows a success."""
    episode: torch.Tensor
    """(N,) int64 episode index of each frame."""

    def take(self, mask: torch.Tensor) -> SuccessFrames:
        return SuccessFrames({c: v[mask] for c, v in self.frames.items()}, self.state[mask],
                             self.label[mask], self.episode[mask])


@dataclasses.dataclass
class RewardReport:
    precision: float
    recall: float
    accuracy: float
    frames: int
    positives: int
    """Success frames among ``frames`` (by the labels)."""
    episodes: int
    episodes_agree: int
    """Episodes where "some frame is classified success" matches "some frame is a success"."""
    threshold: float

    def row(self) -> dict[str, float]:
        return dataclasses.asdict(self)


def state_columns(ds: Dataset, terms: tuple[str, ...]) -> tuple[list[int], tuple[str, ...]]:
    """Columns of ``observation.state`` whose names belong to ``terms`` (``goal`` selects
    ``goal.0``, ``goal.1``, ...), and their names."""
    if not terms:
        return [], ()
    if "observation.state" not in ds.features:
        raise DatasetError(f"{ds.root} has no observation.state to read {list(terms)} from")
    names = feature_names(ds.features, "observation.state")
    cols = [i for i, n in enumerate(names) if n.rsplit(".", 1)[0] in terms or n in terms]
    found = {names[i].rsplit(".", 1)[0] for i in cols} | {names[i] for i in cols}
    missing = [t for t in terms if t not in found]
    if missing:
        stems = sorted(dict.fromkeys(n.rsplit(".", 1)[0] for n in names))
        raise DatasetError(f"{ds.root}'s observation.state has no {missing}; its terms: "
                           f"{', '.join(stems)}")
    return cols, tuple(names[i] for i in cols)


def load_success_frames(ds: Dataset, cameras: tuple[str, ...], size: int,
                        state_cols: list[int], episodes: list[int] | None = None,
                        console: Console | None = None) -> SuccessFrames:
    """Decode and resize the frames of ``episodes`` (default all) with their labels (see
    module docstring)."""
    have = [c for c, _, _ in ds.cameras]
    missing = [c for c in cameras if c not in have]
    if missing:
        raise DatasetError(f"{ds.root} has no camera {missing}; its cameras: "
                           f"{', '.join(have) or 'none'}")
    frames: dict[str, list[torch.Tensor]] = {c: [] for c in cameras}
    states, labels, eps = [], [], []
    indices = [int(r["episode_index"]) for r in ds.episodes] if episodes is None else episodes
    t0 = time.monotonic()
    for n, ep in enumerate(indices):
        cols = ds.episode(ep)
        if "next.success" not in cols:
            raise DatasetError(f"{ds.root} has no next.success column: a success classifier "
                               "learns from frames labelled success or not")
        success = np.asarray(cols["next.success"], dtype=bool)
        label = np.concatenate([[False], success[:-1]])
        for c in cameras:
            rgb = torch.from_numpy(ds.video(ep, c)).permute(0, 3, 1, 2)
            frames[c].append(resize_frames(rgb, size))
        st = np.asarray(cols["observation.state"])[:, state_cols] if state_cols \
            else np.zeros((len(label), 0))
        states.append(torch.as_tensor(st, dtype=torch.float32))
        labels.append(torch.from_numpy(label))
        eps.append(torch.full((len(label),), ep, dtype=torch.long))
        if console is not None and (time.monotonic() - t0 > 10 or n + 1 == len(indices)):
            console.print(f"decoded {n + 1}/{len(indices)} episodes", highlight=False)
            t0 = time.monotonic()
    return SuccessFrames({c: torch.cat(v) for c, v in frames.items()}, torch.cat(states),
                         torch.cat(labels), torch.cat(eps))


def split_episodes(episodes: list[int], holdout: float, seed: int) -> tuple[list[int], list[int]]:
    """(training, held-out) episode indices; at least one of each."""
    if len(episodes) < 2:
        raise DatasetError(f"a held-out evaluation needs >= 2 episodes; the dataset has "
                           f"{len(episodes)}")
    order = np.random.default_rng(seed).permutation(len(episodes))
    k = min(max(1, round(holdout * len(episodes))), len(episodes) - 1)
    held = sorted(episodes[i] for i in order[:k])
    return [e for e in episodes if e not in set(held)], held


def train_reward_classifier(cfg: RewardTrainConfig, console: Console | None = None
                            ) -> tuple[RewardClassifier, RewardReport]:
    """Train on the training episodes, report on the held-out ones, save (``cfg.out``)."""
    console = console or Console()
    cfg.validate()
    torch.manual_seed(cfg.seed)
    t0 = time.perf_counter()
    ds = Dataset(cfg.dataset)
    cameras = cfg.cameras or tuple(c for c, _, _ in ds.cameras)
    if not cameras:
        raise DatasetError(f"{ds.root} has no camera videos; record with --cameras")
    cols, state_names = state_columns(ds, cfg.state_terms)
    train_eps, held_eps = split_episodes([int(r["episode_index"]) for r in ds.episodes],
                                         cfg.holdout, cfg.seed)
    val_eps: list[int] = []
    if cfg.precision > 0:
        train_eps, val_eps = split_episodes(train_eps, cfg.validation, cfg.seed + 1)
    data = load_success_frames(ds, cameras, cfg.size, cols, None,
                               console if cfg.progress else None)
    train = data.take(torch.isin(data.episode, torch.tensor(train_eps)))
    pos = int(train.label.sum())
    neg = len(train.label) - pos
    if pos == 0 or neg == 0:
        raise DatasetError(f"the training episodes have {pos} success and {neg} other frames; "
                           "a classifier needs both")
    console.print(f"training a success classifier on {', '.join(cameras)} at {cfg.size}x"
                  f"{cfg.size}{' + ' + ', '.join(cfg.state_terms) if cfg.state_terms else ''}:"
                  f" {len(train_eps)} episodes ({pos:,} success / {neg:,} other frames), "
                  f"{len(val_eps)} to choose the threshold on, {len(held_eps)} held out",
                  highlight=False)
    net = SuccessNet(cfg.net, cameras, cfg.size, len(cols),
                     *((train.state.mean(0), train.state.std(0)) if cols else (None, None)))
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr)
    bce = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(neg / pos if cfg.balance else 1.0))
    gen = torch.Generator().manual_seed(cfg.seed)
    n = len(train.label)
    last = time.monotonic()
    net.train()
    for step in range(1, cfg.grad_steps + 1):
        idx = torch.randint(0, n, (cfg.batch_size,), generator=gen)
        logits = net({c: v[idx] for c, v in train.frames.items()}, train.state[idx], gen)
        loss = bce(logits, train.label[idx].float())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if cfg.progress and (time.monotonic() - last > 10 or step == cfg.grad_steps):
            console.print(f"step {step}/{cfg.grad_steps}  loss {loss.item():.4f}  "
                          f"{time.perf_counter() - t0:.0f} s", highlight=False)
            last = time.monotonic()
    net.eval()
    meta = {"format": REWARD_CLASSIFIER_FORMAT, "config": to_dict(cfg),
            "net": to_dict(cfg.net), "cameras": list(cameras), "size": cfg.size,
            "state_names": list(state_names), "threshold": cfg.threshold,
            "dataset": str(cfg.dataset), "train_episodes": train_eps,
            "validation_episodes": val_eps, "held_out_episodes": held_eps}
    clf = RewardClassifier(net, cfg.threshold, state_names, meta)
    if val_eps:
        clf.threshold = meta["threshold"] = choose_threshold(
            clf, data.take(torch.isin(data.episode, torch.tensor(val_eps))), cfg.precision,
            cfg.threshold)
        console.print(f"threshold {clf.threshold:.2f}, chosen on {len(val_eps)} validation "
                      f"episodes for precision >= {cfg.precision}", highlight=False)
    report = score(clf, data.take(torch.isin(data.episode, torch.tensor(held_eps))))
    meta["held_out"] = report.row()
    save_atomic({**meta, "state_dict": net.state_dict()}, cfg.out)
    return clf, report


def probabilities(clf: RewardClassifier, data: SuccessFrames, batch: int = 256
                  ) -> torch.Tensor:
    """(N,) the classifier's success probability of each frame."""
    return torch.cat([
        clf.probability({c: v[i:i + batch] for c, v in data.frames.items()},
                        data.state[i:i + batch]) for i in range(0, len(data.label), batch)])


def choose_threshold(clf: RewardClassifier, data: SuccessFrames, precision: float,
                     default: float) -> float:
    """The lowest threshold (0.01 steps) at which the frames' precision reaches
    ``precision``; where none does, the one of highest precision; ``default`` when the
    frames have no success to measure precision on."""
    probs, truth = probabilities(clf, data), data.label
    if not bool(truth.any()):
        return default
    best, best_p = default, -1.0
    for t in torch.arange(0.05, 1.0, 0.01).tolist():
        pred = probs >= t
        if not bool(pred.any()):
            break
        p = float((pred & truth).sum()) / float(pred.sum())
        if p >= precision:
            return round(t, 2)
        if p > best_p:
            best, best_p = round(t, 2), p
    return best


def score(clf: RewardClassifier, data: SuccessFrames, threshold: float | None = None,
          batch: int = 256) -> RewardReport:
    """Precision, recall and accuracy of ``clf`` on labelled frames, and per episode whether
    it sees a success exactly where the labels have one."""
    threshold = clf.threshold if threshold is None else threshold
    pred, truth = probabilities(clf, data, batch) >= threshold, data.label
    tp = int((pred & truth).sum())
    fp = int((pred & ~truth).sum())
    fn = int((~pred & truth).sum())
    agree = 0
    episodes = data.episode.unique()
    for ep in episodes:
        m = data.episode == ep
        agree += int(bool(pred[m].any()) == bool(truth[m].any()))
    return RewardReport(
        precision=tp / (tp + fp) if tp + fp else float("nan"),
        recall=tp / (tp + fn) if tp + fn else float("nan"),
        accuracy=float((pred == truth).float().mean()), frames=len(truth),
        positives=int(truth.sum()), episodes=len(episodes), episodes_agree=agree,
        threshold=threshold)


def evaluate_reward_classifier(clf: RewardClassifier, ds: Dataset,
                               episodes: list[int] | None = None,
                               threshold: float | None = None) -> RewardReport:
    """``score`` on a dataset's episodes (default all), read with the state columns the
    classifier was trained on."""
    terms = tuple(dict.fromkeys(n.rsplit(".", 1)[0] for n in clf.state_names))
    cols, names = state_columns(ds, terms)
    if names != clf.state_names:
        raise DatasetError(f"{ds.root}'s state columns {list(names)} are not the "
                           f"classifier's {list(clf.state_names)}")
    data = load_success_frames(ds, clf.cameras, clf.net.size, cols, episodes)
    return score(clf, data, threshold)


def print_report(console: Console, report: RewardReport, what: str) -> None:
    console.print(f"{what}: precision {report.precision:.3f}  recall {report.recall:.3f}  "
                  f"accuracy {report.accuracy:.3f}  ({report.frames:,} frames, "
                  f"{report.positives:,} success; threshold {report.threshold:.2f}); episodes "
                  f"where it sees success exactly when one happened: {report.episodes_agree}/"
                  f"{report.episodes}", highlight=False)
