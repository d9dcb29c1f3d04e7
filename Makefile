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

serve: build
	@echo "gopt-server is not available yet: the service is issue #4." \
	  "Today you can inspect graphs: $(BUILD_DIR)/bin/gopt inspect FILE" >&2
	@exit 2

# libFuzzer targets (clang): make fuzz, then see tests/fuzz/README.md.
fuzz:
	GOPT_FUZZ=1 ./scripts/install-deps.sh
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -DGOPT_FUZZ=ON -DGOPT_BUILD_TESTS=OFF \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build build-fuzz -j$(JOBS)

clean:
	rm -rf $(BUILD_DIR) build-fuzz
