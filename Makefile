# Thin wrapper over scripts/install-deps.sh, CMake and CTest.
#   make test       install dependencies, build, run every test
#   make test-asan  the sanitizer subset (label "sanitize") under ASan+UBSan
#   make serve      install dependencies, build, start gopt-server
BUILD_DIR ?= build
ASAN_BUILD_DIR ?= build-asan
JOBS ?= 2
BUILD_TYPE ?= RelWithDebInfo

.PHONY: all deps configure build test test-asan serve fuzz clean pretrained-go pretrained-go-v2 \
	pretrained-costmodel-tile pretrained-costmodel-layout

all: build

deps:
	./scripts/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

build: configure
	cmake --build $(BUILD_DIR) -j$(JOBS)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j$(JOBS)

# AddressSanitizer + UndefinedBehaviorSanitizer over the unit tests that do
# not link LibTorch (graph/, simulator/, server/ and the torch-free policy/
# tests; the list: cmake/gopt_test.cmake), in their own build directory. Any
# report fails its test. CI runs it after `make test` (.ci/run).
ASAN_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
test-asan: deps
	cmake -S . -B $(ASAN_BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DGOPT_SANITIZE=ON
	$(ASAN_ENV) cmake --build $(ASAN_BUILD_DIR) -j$(JOBS) --target gopt_sanitize_tests
	cd $(ASAN_BUILD_DIR) && $(ASAN_ENV) ctest -L sanitize --output-on-failure -j$(JOBS)

# gopt-server on localhost (gRPC :50051, Prometheus :9464) with the bundled
# policies; Ctrl-C drains and stops it. The three settings come from the
# environment or the make command line when set there
# (GOPT_LISTEN=0.0.0.0:50052 make serve); every other GOPT_* variable reaches
# gopt-server through the environment.
GOPT_LISTEN ?= 127.0.0.1:50051
GOPT_METRICS_LISTEN ?= 127.0.0.1:9464
GOPT_POLICY_DIR ?= policy/pretrained
serve: build
	$(BUILD_DIR)/bin/gopt-server --listen=$(GOPT_LISTEN) \
	  --metrics_listen=$(GOPT_METRICS_LISTEN) --policy_dir=$(GOPT_POLICY_DIR)

# GO policy v2, policy/pretrained/go-multitask-v2: PPO pre-training
# (30 min wall clock on the shared 2-core host), held-out evaluation written
# into its card.json, one fine-tune on a held-out graph, and training-curve
# PNGs (gnuplot, installed with GOPT_TRAINING_TOOLS=1). See the README there.
GO_DIR = policy/pretrained/go-multitask-v2
GO_HELD_OUT_V2 = ../shared/data/hlo/mixer_b16_jax_unopt.hlo,../shared/data/hlo/llama2_ptxla_neuron_train_tp1.hlo,../shared/data/onnx/light_shufflenet.onnx,gen:transformer_xl-small,gen:transformer_xl-large
GO_TRAIN = OMP_WAIT_POLICY=PASSIVE $(BUILD_DIR)/bin/gopt-train
pretrained-go-v2:
	GOPT_TRAINING_TOOLS=1 ./scripts/install-deps.sh
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)
	cmake --build $(BUILD_DIR) -j$(JOBS) --target gopt-train
	$(GO_TRAIN) pretrain --out_dir=$(GO_DIR) --data_dir=../shared/data --seed=1 \
	  --max_seconds=1800
	$(GO_TRAIN) eval --policy_dir=$(GO_DIR) --graph=$(GO_HELD_OUT_V2) \
	  --topologies=v100x4-nvlink,h100x8-nvlink --update_card
	$(GO_TRAIN) finetune --policy_dir=$(GO_DIR) --graph=gen:transformer_xl-small \
	  --topologies=v100x4-nvlink --max_steps=50 --max_seconds=60 \
	  --csv=$(GO_DIR)/finetune_transformer_xl-small.csv
	tools/plot_training.sh $(GO_DIR)/train.csv $(GO_DIR)/train.png \
	  "go-multitask-v2 pre-training (seed 1)"
	tools/plot_training.sh $(GO_DIR)/finetune_transformer_xl-small.csv \
	  $(GO_DIR)/finetune_transformer_xl-small.png \
	  "fine-tune on held-out transformer_xl-small, v100x4-nvlink"

# GO policy v4, policy/pretrained/go-multitask-v4 (issue #19): expert
# iteration (search distillation, `gopt-train expert`, docs/training.md) from
# v2's weights with a fresh co-location head trained by the search's targets
# (per-node placement loss off, target memory and replay on, no PPO, the
# distillation learning rate 3e-4), 50 rounds (about 5 minutes on the shared
# 2-core host; the time cap only guards a much slower machine) over the
# corpus (generated presets and sizes, random-size generated graphs, the
# real graphs of ../shared/data but the held-out and validation ones) x (the
# two preset machines + 8 random 2-8 device machines). The weights
# checkpointed are an exponential moving average (decay 0.95); the
# checkpoint kept is the evaluation (start, rounds 25 and 50) with the best
# zero-shot geomean over the validation graphs (jaxrl_td_target, bert-small:
# not trained on) and the real training graphs (--selection_graph), never
# the held-out set. 50 rounds because every run of this recipe measured so
# far drifts away from the one-device decisions on op-by-op graphs after
# about 75 rounds and no validation signal caught it for every seed
# (docs/training.md, "go-multitask-v4"). Held-out and validation curves in
# its card, train.csv and held_out.png (gnuplot); then `gopt bench` of
# v4 on the held-out set. gopt-server serves the highest version of
# go-multitask, so this is what answers (v2 stays: it is v4's starting
# point; `--policy=go-multitask@2` reaches it).
# Data-parallel under torchrun's variables (deploy/training/gopt-train-job.yaml).
GO_V4_NAME = go-multitask-v4
GO_V4_DIR = policy/pretrained/$(GO_V4_NAME)
GO_HELD_OUT = ../shared/data/hlo/mixer_b16_jax_unopt.hlo,../shared/data/hlo/llama2_ptxla_neuron_train_tp1.hlo,../shared/data/onnx/light_shufflenet.onnx,../shared/data/hlo/efficientnet_jax_lambda256.hlo,../shared/data/tfjs/movenet-multipose.json,gen:transformer_xl-small
# The recipe (every training choice, the data and the starting weights) is
# the checkpoint's recipe.json; gopt-train expert --help lists its keys.
GO_V4_RECIPE = $(GO_V4_DIR)/recipe.json

pretrained-go:
	GOPT_TRAINING_TOOLS=1 ./scripts/install-deps.sh
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)
	cmake --build $(BUILD_DIR) -j$(JOBS) --target gopt-train gopt
	$(GO_TRAIN) expert --recipe=$(GO_V4_RECIPE) --out_dir=$(GO_V4_DIR)
	tools/plot_expert.sh $(GO_V4_DIR)/train.csv $(GO_V4_DIR)/held_out.png \
	  "go-multitask-v4 expert iteration (seed 1)"
	for t in v100x4-nvlink h100x8-nvlink; do \
	  OMP_WAIT_POLICY=PASSIVE $(BUILD_DIR)/bin/gopt bench --topology=$$t \
	    --graph=$(GO_HELD_OUT),gen:transformer_xl-large \
	    --policy_dir=policy/pretrained --go_policy=$(GO_V4_NAME) \
	    --methods=go-zeroshot,go-finetune,best-baseline \
	    > $(GO_V4_DIR)/bench_$$t.txt; \
	done

# The shipped tile cost model, policy/pretrained/costmodel-tile-v1: the tile
# protocol on op_tuning_data.pb (leave-one-kernel-out over its 15 kernels,
# default margins by inner leave-one-kernel-out; its metrics go into the
# card), then one model trained on all 15 kernels, served with the margin the
# protocol's scores choose (card.json decision.default_margin). The model and
# training options are gopt-train's defaults for --task=tile
# (cost_model::DefaultRecipe; name costmodel-tile, seed 0).
TILE_DIR = policy/pretrained/costmodel-tile-v1
pretrained-costmodel-tile:
	GOPT_TRAINING_TOOLS=1 ./scripts/install-deps.sh
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)
	cmake --build $(BUILD_DIR) -j$(JOBS) --target gopt-train
	$(GO_TRAIN) costmodel --task=tile \
	  --data=../shared/data/tpugraphs/op_tuning_data.pb \
	  --costmodel_out=$(TILE_DIR) --costmodel_tile_protocol --json

# The shipped layout cost model (policy/pretrained/costmodel-layout-v1):
# trained on one hash half of the real TPU layout runs plus simulator-labelled
# layouts of every generator family but transformer_xl; its card's metrics
# are on the other real half and on transformer_xl-small and -large. The
# model and training options are gopt-train's defaults for --task=layout
# (cost_model::DefaultRecipe; name costmodel-layout, seed 0) but for the
# learning rate and regression weight this checkpoint was trained with.
LAYOUT_DIR = policy/pretrained/costmodel-layout-v1
pretrained-costmodel-layout:
	GOPT_TRAINING_TOOLS=1 ./scripts/install-deps.sh
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)
	cmake --build $(BUILD_DIR) -j$(JOBS) --target gopt-train
	$(GO_TRAIN) costmodel --task=layout \
	  --data=../shared/data/tpugraphs/module_tuning_data_layout.pb,sim:train-families \
	  --eval_data=sim:heldout --costmodel_half_split \
	  --costmodel_out=$(LAYOUT_DIR) --costmodel_lr=0.005 \
	  --costmodel_regression_weight=0.2 --json

# libFuzzer targets (clang): make fuzz, then see tests/fuzz/README.md.
fuzz:
	GOPT_FUZZ=1 ./scripts/install-deps.sh
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -DGOPT_FUZZ=ON -DGOPT_BUILD_TESTS=OFF \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build build-fuzz -j$(JOBS)

clean:
	rm -rf $(BUILD_DIR) $(ASAN_BUILD_DIR) build-fuzz
