# gopt-server container image (CPU, Debian's LibTorch 1.13).
#
#   docker build --build-arg GOPT_GIT_REVISION="$(git rev-parse --short HEAD)" \
#     -t gopt:cpu .
#   docker run -p 50051:50051 -p 9464:9464 gopt:cpu
#
# `docker build -t gopt:cpu .` works too (legacy builder and BuildKit); the
# revision in logs and gopt_build_info is then "unknown", because the build
# context has no .git. The GPU variant is Dockerfile.cuda. docs/deploy.md has
# the details; scripts/image-test.sh builds, runs and checks this image.
#
# Stages:
#   build    Debian bookworm + scripts/install-deps.sh; builds gopt-server
#            and gopt (no tests) from the sources only (docs and deploy files
#            are not copied, so editing them does not recompile), then lists
#            the Debian packages owning the shared libraries they load.
#   runtime  (the last stage, built by default) debian:bookworm-slim with only
#            those packages, non-root user 10001, the bundled policies and a
#            HEALTHCHECK through `gopt health` on GOPT_HEALTH_LISTEN's
#            port when set (plaintext health-only port, for TLS), else
#            GOPT_LISTEN's.

ARG DEBIAN_IMAGE=debian:bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${DEBIAN_IMAGE} AS build
WORKDIR /src
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN GOPT_NPM=0 ./scripts/install-deps.sh && rm -rf /var/lib/apt/lists/*
COPY CMakeLists.txt ./
COPY cmake cmake
COPY util util
COPY proto proto
COPY graph graph
COPY simulator simulator
COPY worker worker
COPY engine engine
COPY policy/CMakeLists.txt policy/*.h policy/*.cc policy/
COPY policy/go policy/go
COPY policy/cost_model policy/cost_model
COPY policy/eval policy/eval
COPY server server
COPY client client
# Configured (CMakeLists) though the image builds none of their targets.
COPY training training
COPY benchmarks benchmarks
COPY tools tools
COPY tests/CMakeLists.txt tests/CMakeLists.txt
COPY tests/fuzz/CMakeLists.txt tests/fuzz/CMakeLists.txt
# Everything but gopt-server's main.cc, which alone carries the revision: a
# new revision relinks gopt-server instead of recompiling the project.
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DGOPT_BUILD_TESTS=OFF \
 && cmake --build /build -j"$(nproc)" \
      --target gopt gopt-worker gopt_server gopt_worker_pool gopt_builtin_policies gopt_go
ARG GOPT_GIT_REVISION=unknown
RUN cmake -S . -B /build -DGOPT_GIT_REVISION="${GOPT_GIT_REVISION}" \
 && cmake --build /build -j"$(nproc)" --target gopt-server
COPY scripts/runtime-packages.sh scripts/runtime-packages.sh
RUN scripts/runtime-packages.sh /build/bin/gopt-server /build/bin/gopt /build/bin/gopt-worker \
      > /build/runtime-packages.txt \
 && cat /build/runtime-packages.txt

# gopt-train for training jobs (deploy/training/gopt-train-job.yaml):
#   docker build --target train -t REGISTRY/gopt-train:TAG .
# The build image with gopt-train added; not the default target (runtime,
# the last stage, is).
FROM build AS train
RUN cmake --build /build -j"$(nproc)" --target gopt-train \
 && install -m 0755 /build/bin/gopt-train /usr/local/bin/gopt-train
COPY policy/pretrained /opt/gopt/policies
ENTRYPOINT ["gopt-train"]

FROM ${RUNTIME_IMAGE} AS runtime
# Only the packages that own a shared library the two binaries load. They
# are installed with dpkg, not apt, because apt would also install every
# package they declare a dependency on: through Debian's libtorch1.13 that
# is 87 more packages gopt never loads (LLVM and Mesa's GL drivers, PROJ and
# GDAL data, Tesseract, Qt's network module, ...). dpkg records the packages
# (dpkg -l lists them; their copyright files are kept) with those
# dependencies unmet; packages the base image already has are left alone.
COPY --from=build /build/runtime-packages.txt /tmp/runtime-packages.txt
RUN set -eu; \
    missing=""; \
    for pkg in $(cat /tmp/runtime-packages.txt); do \
      dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null \
        | grep -q '^install ok installed$' || missing="$missing $pkg"; \
    done; \
    apt-get update -q; mkdir /tmp/debs; chown _apt /tmp/debs; cd /tmp/debs; \
    apt-get download -q $missing; \
    dpkg --force-depends --install ./*.deb; \
    cd /; apt-get clean; \
    rm -rf /tmp/debs /tmp/runtime-packages.txt /var/lib/apt/lists/*; \
    readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 | grep -q openblas; \
    useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin gopt
COPY --from=build /build/bin/gopt-server /build/bin/gopt /build/bin/gopt-worker /usr/local/bin/
# Fails the build if a library the binaries load is missing.
RUN ! ldd /usr/local/bin/gopt-server /usr/local/bin/gopt /usr/local/bin/gopt-worker | grep 'not found'
COPY policy/pretrained /opt/gopt/policies
USER 10001:10001
# 50051: gRPC (GraphOptimizer, grpc.health.v1, reflection); 9464: /metrics.
EXPOSE 50051 9464
# Every gopt-server flag is also a GOPT_* variable; a Kubernetes ConfigMap or
# `docker run -e` overrides these. Drain 2 s + in-flight calls 6 s = 8 s fits
# in `docker stop`'s default 10 s before SIGKILL (docs/deploy.md).
ENV GOPT_LISTEN=0.0.0.0:50051 \
    GOPT_METRICS_LISTEN=0.0.0.0:9464 \
    GOPT_POLICY_DIR=/opt/gopt/policies \
    GOPT_DRAIN_SECONDS=2 \
    GOPT_SHUTDOWN_TIMEOUT_SECONDS=6
# Probes the port GOPT_LISTEN names. `gopt` loads LibTorch's libraries at
# start, which takes ~2 s on a loaded host: hence the 10 s timeout.
HEALTHCHECK --interval=10s --timeout=10s --start-period=30s --retries=3 \
  CMD probe="${GOPT_HEALTH_LISTEN:-$GOPT_LISTEN}"; \
      gopt health --server="127.0.0.1:${probe##*:}" --timeout=5
ENTRYPOINT ["gopt-server"]
