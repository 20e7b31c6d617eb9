"""``--preset gpu``: FastSAC's recipe at a GPU's scale, under the command line's flags."""

from __future__ import annotations

from pathlib import Path

from robot_rl.algos.configs import SACConfig
from robot_rl.cli import parse_config
from robot_rl.finetune.configs import FinetuneConfig, ResidualConfig, residual_sac, rlpd_sac
from robot_rl.train_config import GPU_ENVS, TrainConfig, fastsac_sac, with_preset


def test_the_gpu_preset_is_fastsacs_recipe_on_warp_and_cuda():
    cpu = TrainConfig()
    assert cpu.preset == "cpu" and with_preset(cpu, "cpu") is cpu
    gpu = with_preset(TrainConfig(task="push"), "gpu")
    assert (gpu.preset, gpu.task, gpu.num_envs, gpu.backend, gpu.device) == \
        ("gpu", "push", GPU_ENVS, "warp", "cuda")
    sac = gpu.sac
    assert sac == fastsac_sac() and sac.gamma is None  # the task's horizon gives it
    assert (sac.batch_size, sac.updates_per_step, sac.actor_update_every, sac.tau,
            sac.init_alpha, sac.target_entropy, sac.activation) == \
        (8192, 8, 4, 0.125, 0.001, 0.0, "silu")
    assert (sac.critic_hidden, sac.actor_hidden) == ((768, 384, 192), (512, 256, 128))
    assert sac.compile and sac.bf16 and sac.cuda_graphs and sac.layer_norm
    assert sac.buffer_size == 1024 * GPU_ENVS and sac.learning_starts == 10 * GPU_ENVS
    assert gpu.eval_every > cpu.eval_every and gpu.log_every > cpu.log_every


def test_a_fine_tuning_method_keeps_its_recipe_at_the_gpus_scale(tmp_path: Path):
    rlpd = with_preset(FinetuneConfig(demos=tmp_path), "gpu")
    assert (rlpd.sac.num_critics, rlpd.sac.tau, rlpd.sac.init_alpha) == \
        (rlpd_sac().num_critics, rlpd_sac().tau, rlpd_sac().init_alpha)  # RLPD's own
    assert (rlpd.sac.batch_size, rlpd.sac.updates_per_step, rlpd.num_envs) == \
        (8192, 8, GPU_ENVS) and rlpd.sac.compile
    residual = with_preset(ResidualConfig(policy=tmp_path), "gpu")
    assert residual.sac.freeze_normalizer == residual_sac().freeze_normalizer
    assert residual.sac.batch_size == 8192 and residual.backend == "warp"


def test_flags_given_with_the_preset_override_it():
    cfg = parse_config(TrainConfig, ["--preset", "gpu", "--task", "lift", "--num-envs", "16",
                                     "--sac.batch-size", "1024", "--sac.no-bf16"])
    assert (cfg.preset, cfg.task, cfg.num_envs, cfg.device) == ("gpu", "lift", 16, "cuda")
    assert (cfg.sac.batch_size, cfg.sac.updates_per_step, cfg.sac.bf16) == (1024, 8, False)
    plain = parse_config(TrainConfig, ["--task", "lift"])
    assert plain.preset == "cpu" and plain.sac == SACConfig() and plain.num_envs == 16
