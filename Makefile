# Thin wrapper over scripts/install-deps.sh, CMake and CTest.
#   make test    install dependencies, build, run every test
#   make serve   install dependencies, build, start gopt-server
BUILD_DIR ?= build
JOBS ?= 2
BUILD_TYPE ?= RelWithDebInfo

.PHONY: all deps configure build test serve fuzz clean

all: build

deps:
	./scripts/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

build: configure
	cmake --build $(BUILD_DIR) -j$(JOBS)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j$(JOBS)

# gopt-server on localhost (gRPC :50051, Prometheus :9464) with the bundled
# policies; Ctrl-C drains and stops it.
serve: build
	$(BUILD_DIR)/bin/gopt-server --listen=127.0.0.1:50051 \
	  --metrics_listen=127.0.0.1:9464 --policy_dir=policy/pretrained

# libFuzzer targets (clang): make fuzz, then see tests/fuzz/README.md.
fuzz:
	GOPT_FUZZ=1 ./scripts/install-deps.sh
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -DGOPT_FUZZ=ON -DGOPT_BUILD_TESTS=OFF \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build build-fuzz -j$(JOBS)

clean:
	rm -rf $(BUILD_DIR) build-fuzz
