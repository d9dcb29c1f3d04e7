# gopt-server container image.
#
#   docker build -t gopt:cpu .                       # Debian LibTorch (CPU)
#   docker run -p 50051:50051 -p 9464:9464 gopt:cpu
#
# Stages:
#   build        Debian bookworm + the project's own install script; builds
#                gopt-server and gopt (no tests) and lists the Debian packages
#                that own the shared libraries they load.
#   runtime      (default) debian:bookworm-slim with only those runtime
#                packages, a non-root user, the bundled policies and a
#                HEALTHCHECK through `gopt health`.
#   build-cuda / runtime-cuda
#                The GPU variant: the official CUDA LibTorch (a zip from
#                pytorch.org, passed as LIBTORCH_URL) instead of Debian's
#                CPU-only one, on NVIDIA's CUDA runtime image. Build with
#                  docker build --target runtime-cuda \
#                    --build-arg LIBTORCH_URL=https://download.pytorch.org/libtorch/cu121/libtorch-cxx11-abi-shared-with-deps-2.3.1%2Bcu121.zip \
#                    -t gopt:cuda .
#                It runs on debian:bookworm-slim like the CPU image (the
#                zip bundles the CUDA libraries). It needs network access
#                to download LibTorch and is not built in CI.

ARG DEBIAN_IMAGE=debian:bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${DEBIAN_IMAGE} AS build
WORKDIR /src
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN ./scripts/install-deps.sh && rm -rf /var/lib/apt/lists/*
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DGOPT_BUILD_TESTS=OFF \
 && cmake --build /build -j"$(nproc)" --target gopt-server gopt \
 && scripts/runtime-packages.sh /build/bin/gopt-server /build/bin/gopt \
      > /build/runtime-packages.txt \
 && cat /build/runtime-packages.txt

FROM ${RUNTIME_IMAGE} AS runtime
COPY --from=build /build/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      ca-certificates libopenblas0-pthread $(cat /tmp/runtime-packages.txt) \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt \
 && useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin gopt
COPY --from=build /build/bin/gopt-server /build/bin/gopt /usr/local/bin/
COPY policy/pretrained /opt/gopt/policies
USER 10001:10001
# 50051: gRPC (GraphOptimizer, grpc.health.v1, reflection); 9464: /metrics.
EXPOSE 50051 9464
ENV GOPT_POLICY_DIR=/opt/gopt/policies
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["gopt", "health", "--server=127.0.0.1:50051"]
ENTRYPOINT ["gopt-server", "--listen=0.0.0.0:50051", "--metrics_listen=0.0.0.0:9464"]

FROM ${DEBIAN_IMAGE} AS build-cuda
ARG LIBTORCH_URL
WORKDIR /src
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN ./scripts/install-deps.sh \
 && apt-get install -y -q --no-install-recommends curl unzip ca-certificates \
 && test -n "${LIBTORCH_URL}" \
 && curl -fsSL "${LIBTORCH_URL}" -o /tmp/libtorch.zip \
 && unzip -q /tmp/libtorch.zip -d /opt && rm /tmp/libtorch.zip
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DGOPT_BUILD_TESTS=OFF \
      -DCMAKE_PREFIX_PATH=/opt/libtorch \
 && cmake --build /build -j"$(nproc)" --target gopt-server gopt \
 && LD_LIBRARY_PATH=/opt/libtorch/lib scripts/runtime-packages.sh \
      /build/bin/gopt-server /build/bin/gopt > /build/runtime-packages.txt

# The "shared-with-deps" LibTorch zip carries the CUDA runtime, cuBLAS and
# cuDNN; the GPU driver comes from the host (NVIDIA container toolkit).
FROM ${RUNTIME_IMAGE} AS runtime-cuda
COPY --from=build-cuda /build/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      ca-certificates $(cat /tmp/runtime-packages.txt) \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt
COPY --from=build-cuda /opt/libtorch/lib /opt/libtorch/lib
COPY --from=build-cuda /build/bin/gopt-server /build/bin/gopt /usr/local/bin/
COPY policy/pretrained /opt/gopt/policies
ENV LD_LIBRARY_PATH=/opt/libtorch/lib GOPT_POLICY_DIR=/opt/gopt/policies \
    NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compute,utility
RUN useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin gopt
USER 10001:10001
EXPOSE 50051 9464
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["gopt", "health", "--server=127.0.0.1:50051"]
ENTRYPOINT ["gopt-server", "--listen=0.0.0.0:50051", "--metrics_listen=0.0.0.0:9464"]
