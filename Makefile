# robot_rl: every target sets itself up on a fresh machine (idempotent), then runs.
#   make demo    set up, then run the scripted experts on the built-in arm and write videos
#   make test    set up, then lint, type-check and run the test suite
#   make bench   set up, then print the simulation throughput and controller cost tables

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Offscreen rendering (videos) runs on EGL; Mesa's software driver works without a GPU.
APT_PACKAGES := libegl1 libgl1-mesa-dri
export MUJOCO_GL ?= egl

.PHONY: setup demo test lint bench clean

setup: $(STAMP)

# torch goes first, pinned: here it is a local CPU build; unpinned, pip pulls GBs of CUDA.

$(STAMP): pyproject.toml Makefile
	@if command -v dpkg >/dev/null && ! dpkg -s $(APT_PACKAGES) >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && apt-get install -y -qq --no-install-recommends $(APT_PACKAGES); \
	  elif command -v sudo >/dev/null; then \
	    sudo apt-get update -qq && sudo apt-get install -y -qq --no-install-recommends $(APT_PACKAGES); \
	  else \
	    echo "warning: install $(APT_PACKAGES) for offscreen rendering (videos)"; \
	  fi; \
	fi
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e ".[dev,bench]"
	@touch $(STAMP)

demo: setup
	$(BIN)/robot-rl sim rollout --task push --policy expert --num-envs 4 --episodes 4 \
	  --video runs/demo/push_expert.mp4 --video-envs 0 1
	$(BIN)/robot-rl sim rollout --task lift --policy expert --num-envs 4 --episodes 4 \
	  --video runs/demo/lift_expert.mp4 --video-envs 0 1
	@echo "videos: runs/demo/push_expert.mp4 runs/demo/lift_expert.mp4"

lint: setup
	$(BIN)/ruff check .
	$(BIN)/mypy robot_rl sim controllers hardware

test: lint
	$(BIN)/python -m pytest -q

bench: setup
	$(BIN)/python benchmarks/sim_throughput.py
	$(BIN)/python benchmarks/controllers.py

clean:
	rm -rf $(VENV) runs .pytest_cache .ruff_cache .mypy_cache
