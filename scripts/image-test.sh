#!/usr/bin/env bash
# Builds the gopt-server image with the documented command and checks it the
# way an operator runs it, then renders the deploy files:
#   docker daemon (started, and Debian's docker.io installed, if needed)
#   base images (debootstrap + docker import when no registry has them)
#   docker build --build-arg GOPT_GIT_REVISION=... -t gopt:cpu .
#   the container read-only, as a random UID, with a CPU and memory limit and
#   GOPT_LISTEN moved to another port: limits in the log (also with a
#   cpuset), HEALTHCHECK healthy, Optimize on a real graph from
#   ../shared/data, /metrics (revision, request counted, promtool check
#   metrics), docker stop with a request in flight (answered, exit 0 within
#   docker stop's 10 s)
#   gopt-server with a gopt-worker from the same image on a user network
#   (two docker runs, as deploy/docker-compose.yml wires them): an Optimize
#   --verify=2 runs its candidates on the remote worker and answers with
#   measured step times
#   kubectl kustomize for every overlay; docker-compose config
# One line per check (PASS / FAIL / SKIP with the reason, INFO for numbers);
# exits 1 if any check failed. Needs root (or sudo) to install packages and
# start dockerd. Slow (a cold build compiles the project: 10-20 min on 2
# busy cores), so it is not part of ctest; tests/deploy_test.cc checks the files.
#
#   scripts/image-test.sh                  # from the repository root
#   GOPT_IMAGE_TEST_BUILDKIT=1 scripts/image-test.sh   # also build with BuildKit
#   GOPT_IMAGE_TEST_NO_BUILD=1 scripts/image-test.sh   # check an existing image
#
# Environment: GOPT_IMAGE (gopt:cpu), GOPT_SHARED_DATA (../shared/data),
# GOPT_IMAGE_TEST_LOG_DIR (a new temporary directory; build and server logs).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

IMAGE="${GOPT_IMAGE:-gopt:cpu}"
DATA="$(realpath -m "${GOPT_SHARED_DATA:-../shared/data}")"
LOG_DIR="${GOPT_IMAGE_TEST_LOG_DIR:-$(mktemp -d /tmp/gopt-image-test.XXXXXX)}"
mkdir -p "$LOG_DIR"
GRAPH=hlo/efficientnet_jax_lambda256.hlo
TOPOLOGY=v100x4-nvlink
LISTEN_PORT=50052       # not the image's default 50051: GOPT_LISTEN must win
VERIFY_GRAPH=hlo/jaxrl_td_target.hlo
# The revision built, read once: a commit made while the build runs must not
# fail the gopt_build_info check.
REVISION="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
failures=0
containers=()
networks=()

SUDO=""
[[ "$(id -u)" -ne 0 ]] && SUDO="sudo"

result() {  # STATUS NAME [DETAIL]
  local line="$1 $2"
  [[ $# -ge 3 && -n "$3" ]] && line+=" ($3)"
  echo "$line"
  [[ "$1" == FAIL ]] && failures=$((failures + 1))
  return 0
}

cleanup() {
  for c in "${containers[@]}"; do docker rm -f "$c" >/dev/null 2>&1; done
  for n in "${networks[@]}"; do docker network rm "$n" >/dev/null 2>&1; done
}
trap cleanup EXIT

apt_install() {  # PACKAGE...
  $SUDO apt-get update -q >>"$LOG_DIR/apt.log" 2>&1
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q \
    --no-install-recommends "$@" >>"$LOG_DIR/apt.log" 2>&1
}

# --- Docker daemon -----------------------------------------------------------
ensure_docker() {
  if docker info >/dev/null 2>&1; then
    result PASS "docker daemon" "already running"
    return 0
  fi
  if ! command -v dockerd >/dev/null; then
    apt_install docker.io || { result FAIL "docker daemon" "apt-get install docker.io failed, see $LOG_DIR/apt.log"; return 1; }
  fi
  $SUDO sh -c "nohup dockerd >'$LOG_DIR/dockerd.log' 2>&1 &"
  for _ in $(seq 60); do
    docker info >/dev/null 2>&1 && { result PASS "docker daemon" "started dockerd, log $LOG_DIR/dockerd.log"; return 0; }
    sleep 1
  done
  result FAIL "docker daemon" "dockerd did not answer in 60 s, see $LOG_DIR/dockerd.log"
  return 1
}

# --- Base images -------------------------------------------------------------
# debian:bookworm from `debootstrap --variant=minbase bookworm`, and
# debian:bookworm-slim from the same tree without documentation, manual pages
# and translations (and dpkg told to leave them out of later installs, as the
# official slim image does).
ensure_base_images() {
  local missing=()
  for tag in debian:bookworm debian:bookworm-slim; do
    docker image inspect "$tag" >/dev/null 2>&1 && continue
    timeout 60 docker pull -q "$tag" >>"$LOG_DIR/pull.log" 2>&1 || missing+=("$tag")
  done
  if [[ ${#missing[@]} -eq 0 ]]; then
    result PASS "base images" "debian:bookworm and debian:bookworm-slim present"
    return 0
  fi
  command -v debootstrap >/dev/null || apt_install debootstrap
  local root
  root="$(mktemp -d /tmp/gopt-rootfs.XXXXXX)"
  if ! $SUDO debootstrap --variant=minbase bookworm "$root/full" \
       http://deb.debian.org/debian >"$LOG_DIR/debootstrap.log" 2>&1; then
    result FAIL "base images" "debootstrap failed, see $LOG_DIR/debootstrap.log"
    return 1
  fi
  $SUDO rm -rf "$root/full/var/lib/apt/lists/"* "$root/full/var/cache/apt/"*.bin \
    "$root/full/var/cache/apt/archives/"*.deb
  # As the official images: apt keeps no package files or caches in layers.
  printf '%s\n' \
    'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };' \
    'APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };' \
    'Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";' \
    | $SUDO tee "$root/full/etc/apt/apt.conf.d/docker-clean" >/dev/null
  local changes=(--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
                 --change 'CMD ["bash"]')
  if [[ " ${missing[*]} " == *" debian:bookworm "* ]]; then
    $SUDO tar -C "$root/full" --numeric-owner -c . \
      | docker import "${changes[@]}" - debian:bookworm >/dev/null
  fi
  if [[ " ${missing[*]} " == *" debian:bookworm-slim "* ]]; then
    $SUDO cp -a "$root/full" "$root/slim"
    $SUDO mkdir -p "$root/slim/etc/dpkg/dpkg.cfg.d"
    printf '%s\n' 'path-exclude /usr/share/doc/*' \
      'path-include /usr/share/doc/*/copyright' 'path-exclude /usr/share/man/*' \
      'path-exclude /usr/share/groff/*' 'path-exclude /usr/share/info/*' \
      'path-exclude /usr/share/lintian/*' 'path-exclude /usr/share/linda/*' \
      'path-exclude /usr/share/locale/*' \
      | $SUDO tee "$root/slim/etc/dpkg/dpkg.cfg.d/docker-slim" >/dev/null
    $SUDO find "$root/slim/usr/share/doc" -mindepth 1 -not -name copyright \
      -not -type d -delete
    $SUDO rm -rf "$root/slim/usr/share/"{man,info,groff,lintian,locale}/*
    $SUDO tar -C "$root/slim" --numeric-owner -c . \
      | docker import "${changes[@]}" - debian:bookworm-slim >/dev/null
  fi
  $SUDO rm -rf "$root"
  if docker image inspect debian:bookworm debian:bookworm-slim >/dev/null 2>&1; then
    result PASS "base images" "made ${missing[*]} with debootstrap (no registry)"
  else
    result FAIL "base images" "docker import failed"
    return 1
  fi
}

# --- Build -------------------------------------------------------------------
build_image() {
  local revision="$REVISION" start
  if [[ "${GOPT_IMAGE_TEST_NO_BUILD:-0}" == 1 ]]; then
    result SKIP "docker build -t $IMAGE ." "GOPT_IMAGE_TEST_NO_BUILD=1: checking the existing $IMAGE"
    docker image inspect "$IMAGE" >/dev/null 2>&1 || { result FAIL "image $IMAGE" "not found"; return 1; }
    return 0
  fi
  start=$(date +%s)
  if nice -n 10 docker build --build-arg GOPT_GIT_REVISION="$revision" \
       -t "$IMAGE" . >"$LOG_DIR/build.log" 2>&1; then
    result PASS "docker build -t $IMAGE ." "$(( $(date +%s) - start )) s, revision $revision, log $LOG_DIR/build.log"
  else
    result FAIL "docker build -t $IMAGE ." "see $LOG_DIR/build.log"
    tail -20 "$LOG_DIR/build.log"
    return 1
  fi
  local bytes
  bytes="$(docker image inspect -f '{{.Size}}' "$IMAGE")"
  result INFO "image size" "$(( bytes / 1000000 )) MB ($bytes bytes)"
  if [[ "${GOPT_IMAGE_TEST_BUILDKIT:-0}" == 1 ]]; then
    # Debian's docker 20.10 CLI has BuildKit built in; newer CLIs need buildx.
    local cli=docker
    [[ -x /usr/bin/docker ]] && cli=/usr/bin/docker
    start=$(date +%s)
    if DOCKER_BUILDKIT=1 nice -n 10 "$cli" build --build-arg GOPT_GIT_REVISION="$revision" \
         -t "$IMAGE-buildkit" . >"$LOG_DIR/build-buildkit.log" 2>&1; then
      result PASS "DOCKER_BUILDKIT=1 docker build ." "$(( $(date +%s) - start )) s"
    else
      result FAIL "DOCKER_BUILDKIT=1 docker build ." "see $LOG_DIR/build-buildkit.log"
    fi
  else
    result SKIP "DOCKER_BUILDKIT=1 docker build ." "a second full compile; set GOPT_IMAGE_TEST_BUILDKIT=1"
  fi
}

# --- The running container ---------------------------------------------------
# `gopt` from the image, on the host network, so it reaches the published
# ports the way a client on the host does.
gopt_cli() {
  docker run --rm --network host --read-only --user "$uid:0" \
    -v "$DATA:/data:ro" --entrypoint gopt "$IMAGE" "$@"
}

metrics() { curl -fsS --max-time 5 "http://127.0.0.1:$metrics_port/metrics"; }

run_container() {
  uid=$(( 20000 + RANDOM % 40000 ))
  local name="gopt-image-test-$$"
  if ! docker run -d --name "$name" --read-only --tmpfs /tmp --user "$uid:0" \
       --cap-drop ALL --security-opt no-new-privileges \
       --cpus 1 --memory 6g -e GOPT_LISTEN="0.0.0.0:$LISTEN_PORT" \
       -p "127.0.0.1::$LISTEN_PORT" -p 127.0.0.1::9464 "$IMAGE" \
       >"$LOG_DIR/run.log" 2>&1; then
    result FAIL "docker run --read-only --user $uid:0" "$(tail -1 "$LOG_DIR/run.log")"
    return 1
  fi
  containers+=("$name")
  container="$name"
  grpc_port="$(docker port "$name" "$LISTEN_PORT/tcp" | head -1 | sed 's/.*://')"
  metrics_port="$(docker port "$name" 9464/tcp | head -1 | sed 's/.*://')"

  local status="" start
  start=$(date +%s)
  for _ in $(seq 120); do
    status="$(docker inspect -f '{{.State.Health.Status}}' "$name" 2>/dev/null)"
    [[ "$status" == healthy || "$status" == unhealthy ]] && break
    if [[ "$(docker inspect -f '{{.State.Running}}' "$name")" != true ]]; then
      status="exited with code $(docker inspect -f '{{.State.ExitCode}}' "$name")"
      break
    fi
    sleep 1
  done
  docker logs "$name" >"$LOG_DIR/server.log" 2>&1
  if [[ "$status" == healthy ]]; then
    result PASS "read-only, UID $uid, GOPT_LISTEN=:$LISTEN_PORT: HEALTHCHECK" "healthy after $(( $(date +%s) - start )) s"
  else
    result FAIL "read-only, UID $uid, GOPT_LISTEN=:$LISTEN_PORT: HEALTHCHECK" "$status: $(tail -1 "$LOG_DIR/server.log")"
    return 1
  fi
  if grep -q "listening on port $LISTEN_PORT" "$LOG_DIR/server.log"; then
    result PASS "GOPT_LISTEN honoured" "listening on $LISTEN_PORT"
  else
    result FAIL "GOPT_LISTEN honoured" "no 'listening on port $LISTEN_PORT' in $LOG_DIR/server.log"
  fi
  if grep -q "container limits: 1 CPUs, memory 6442450944 bytes" "$LOG_DIR/server.log" \
     && grep -q "worker threads: 1" "$LOG_DIR/server.log"; then
    result PASS "--cpus 1 --memory 6g: limits read" "1 worker thread, 6 GiB limit"
  else
    result FAIL "--cpus 1 --memory 6g: limits read" "$(grep -E 'container limits|worker threads' "$LOG_DIR/server.log" | tr '\n' ' ')"
  fi
}

# A cpuset (no quota) limits the threads too: sched_getaffinity, not
# hardware_concurrency().
check_cpuset() {
  local name="gopt-image-test-cpuset-$$" log=""
  if ! docker run -d --name "$name" --read-only --user "$uid:0" \
       --cpuset-cpus 0 "$IMAGE" >/dev/null 2>&1; then
    result FAIL "--cpuset-cpus 0: one worker thread" "docker run failed"
    return 1
  fi
  containers+=("$name")
  for _ in $(seq 60); do
    log="$(docker logs "$name" 2>&1)"
    grep -q "worker threads:" <<<"$log" && break
    sleep 0.5
  done
  docker rm -f "$name" >/dev/null 2>&1
  if grep -q "worker threads: 1$" <<<"$log"; then
    result PASS "--cpuset-cpus 0: one worker thread"
  else
    result FAIL "--cpuset-cpus 0: one worker thread" "$(grep -E 'container limits|worker threads' <<<"$log" | tr '\n' ' ')"
  fi
}

check_optimize() {
  if [[ ! -f "$DATA/$GRAPH" ]]; then
    result FAIL "Optimize $GRAPH" "$DATA/$GRAPH not found (GOPT_SHARED_DATA)"
    return 1
  fi
  if gopt_cli optimize "/data/$GRAPH" --topology="$TOPOLOGY" \
       --server="127.0.0.1:$grpc_port" --json >"$LOG_DIR/optimize.json" \
       2>"$LOG_DIR/optimize.err" \
     && grep -q '"plan"' "$LOG_DIR/optimize.json"; then
    result PASS "Optimize $GRAPH over gRPC" "$(grep -o '"method": *"[^"]*"' "$LOG_DIR/optimize.json" | head -1)"
  else
    result FAIL "Optimize $GRAPH over gRPC" "see $LOG_DIR/optimize.err"
  fi
}

check_metrics() {
  local text revision="$REVISION"
  if ! text="$(metrics)"; then
    result FAIL "/metrics" "no answer on port $metrics_port"
    return 1
  fi
  printf '%s\n' "$text" >"$LOG_DIR/metrics.txt"
  if grep '^gopt_requests_total{' <<<"$text" | grep 'method="Optimize"' \
       | grep 'code="OK"' | awk '$NF >= 1 {found = 1} END {exit !found}'; then
    result PASS "/metrics counts the Optimize call"
  else
    result FAIL "/metrics counts the Optimize call" "see $LOG_DIR/metrics.txt"
  fi
  if grep -q "^gopt_build_info{.*revision=\"$revision\"" <<<"$text"; then
    result PASS "/metrics gopt_build_info revision" "$revision"
  else
    result FAIL "/metrics gopt_build_info revision" "$(grep '^gopt_build_info' <<<"$text")"
  fi
  # promtool from Debian's prometheus package, unpacked rather than
  # installed (installing it would start a Prometheus server).
  local promtool
  promtool="$(command -v promtool)"
  if [[ -z "$promtool" ]]; then
    (cd "$LOG_DIR" && apt-get download -q prometheus && dpkg-deb -x prometheus_*.deb prometheus-deb) \
      >>"$LOG_DIR/apt.log" 2>&1
    [[ -x "$LOG_DIR/prometheus-deb/usr/bin/promtool" ]] && promtool="$LOG_DIR/prometheus-deb/usr/bin/promtool"
  fi
  if [[ -z "$promtool" ]]; then
    result SKIP "promtool check metrics" "no promtool, and Debian's prometheus package could not be downloaded"
  elif "$promtool" check metrics <"$LOG_DIR/metrics.txt" >"$LOG_DIR/promtool.log" 2>&1; then
    result PASS "promtool check metrics"
  else
    result FAIL "promtool check metrics" "$(head -1 "$LOG_DIR/promtool.log")"
  fi
}

# SIGTERM with a request in flight: the image's GOPT_DRAIN_SECONDS (2) +
# GOPT_SHUTDOWN_TIMEOUT_SECONDS (6) must fit docker stop's default 10 s, and
# the request must be answered.
check_drain() {
  gopt_cli optimize "/data/$GRAPH" --topology="$TOPOLOGY" \
    --server="127.0.0.1:$grpc_port" --fine_tune_steps=1000 --budget_seconds=5 \
    --json >"$LOG_DIR/inflight.json" 2>"$LOG_DIR/inflight.err" &
  local client=$! inflight=0
  for _ in $(seq 50); do
    inflight="$(metrics 2>/dev/null | awk '/^gopt_inflight_requests/ {print $2}' | head -1)"
    [[ "${inflight%.*}" -ge 1 ]] 2>/dev/null && break
    sleep 0.2
  done
  local start stop_status exit_code client_status seconds
  start=$(date +%s%N)
  docker stop "$container" >/dev/null 2>&1
  stop_status=$?
  seconds="$(( ($(date +%s%N) - start) / 1000000 ))"
  seconds="$(( seconds / 1000 )).$(printf '%03d' $(( seconds % 1000 )) | cut -c1)"
  wait "$client"
  client_status=$?
  exit_code="$(docker inspect -f '{{.State.ExitCode}}' "$container")"
  docker logs "$container" >"$LOG_DIR/server.log" 2>&1
  local detail
  detail="in flight before stop: ${inflight:-?}; docker stop $stop_status after $seconds s; container exit $exit_code; client exit $client_status"
  if [[ "${inflight%.*}" -ge 1 && $stop_status -eq 0 && "$exit_code" == 0 \
        && $client_status -eq 0 ]] && grep -q '"plan"' "$LOG_DIR/inflight.json"; then
    result PASS "docker stop with a request in flight" "$detail"
  else
    result FAIL "docker stop with a request in flight" "$detail; see $LOG_DIR/inflight.err, $LOG_DIR/server.log"
  fi
}

# Waits for container NAME's HEALTHCHECK; prints healthy, unhealthy or why it
# stopped.
wait_healthy() {  # NAME
  local status=""
  for _ in $(seq 120); do
    status="$(docker inspect -f '{{.State.Health.Status}}' "$1" 2>/dev/null)"
    [[ "$status" == healthy || "$status" == unhealthy ]] && break
    if [[ "$(docker inspect -f '{{.State.Running}}' "$1")" != true ]]; then
      status="exited with code $(docker inspect -f '{{.State.ExitCode}}' "$1")"
      break
    fi
    sleep 1
  done
  echo "$status"
}

# gopt-server and a gopt-worker from the image on a user network, the server
# finding the worker by its DNS name (GOPT_WORKERS=dns:///NAME:PORT, as
# deploy/docker-compose.yml and the GPU overlay do). The worker's
# HEALTHCHECK probes GOPT_LISTEN, set to the worker's port. An Optimize
# --verify=2 on cpu-host (the worker's two CPU executors) must answer with
# every candidate measured on that worker.
check_remote_worker() {
  local net="gopt-image-test-net-$$" worker="gopt-image-test-worker-$$"
  local server="gopt-image-test-pool-$$" port status
  if ! docker network create "$net" >"$LOG_DIR/network.log" 2>&1; then
    result FAIL "remote worker: docker network create" "$(tail -1 "$LOG_DIR/network.log")"
    return 1
  fi
  networks+=("$net")
  if ! docker run -d --name "$worker" --network "$net" --read-only --tmpfs /tmp \
       --user "$uid:0" --cap-drop ALL --security-opt no-new-privileges \
       --memory 4g -e GOPT_LISTEN=0.0.0.0:50052 --entrypoint gopt-worker \
       "$IMAGE" --listen=0.0.0.0:50052 --cpu_executors=2 --pin_threads=false \
       >"$LOG_DIR/worker-run.log" 2>&1; then
    result FAIL "remote worker: docker run gopt-worker" "$(tail -1 "$LOG_DIR/worker-run.log")"
    return 1
  fi
  containers+=("$worker")
  status="$(wait_healthy "$worker")"
  docker logs "$worker" >"$LOG_DIR/worker.log" 2>&1
  if [[ "$status" != healthy ]]; then
    result FAIL "remote worker: gopt-worker HEALTHCHECK" "$status: $(tail -1 "$LOG_DIR/worker.log")"
    return 1
  fi
  result PASS "remote worker: gopt-worker HEALTHCHECK" "healthy, on network $net"
  if ! docker run -d --name "$server" --network "$net" --read-only --tmpfs /tmp \
       --user "$uid:0" --cap-drop ALL --security-opt no-new-privileges \
       --memory 6g -e GOPT_WORKERS="dns:///$worker:50052" \
       -p 127.0.0.1::50051 "$IMAGE" >"$LOG_DIR/pool-run.log" 2>&1; then
    result FAIL "remote worker: docker run gopt-server" "$(tail -1 "$LOG_DIR/pool-run.log")"
    return 1
  fi
  containers+=("$server")
  status="$(wait_healthy "$server")"
  if [[ "$status" != healthy ]]; then
    docker logs "$server" >"$LOG_DIR/pool-server.log" 2>&1
    result FAIL "remote worker: gopt-server HEALTHCHECK" "$status: $(tail -1 "$LOG_DIR/pool-server.log")"
    return 1
  fi
  port="$(docker port "$server" 50051/tcp | head -1 | sed 's/.*://')"
  gopt_cli optimize "/data/$VERIFY_GRAPH" --topology=cpu-host --baselines_only \
    --verify=2 --server="127.0.0.1:$port" --json \
    >"$LOG_DIR/verify.json" 2>"$LOG_DIR/verify.err"
  local client_status=$?
  docker logs "$server" >"$LOG_DIR/pool-server.log" 2>&1
  docker logs "$worker" >"$LOG_DIR/worker.log" 2>&1
  # Every verified row measured (> 0) on a worker that is not in-process;
  # the answer's own measured_step_time_s (field 23) prints after them.
  local rows measured remote answer
  rows="$(grep -c '"predicted_step_time_s"' "$LOG_DIR/verify.json")"
  measured="$(grep -E '"measured_step_time_s": *[0-9.eE+-]+' "$LOG_DIR/verify.json" \
    | grep -vcE '"measured_step_time_s": *0(\.0*)?,?$')"
  remote="$(grep -cE '"worker": *"[][0-9a-f.:]+:50052"' "$LOG_DIR/verify.json")"
  answer="$(grep -E '"measured_step_time_s"' "$LOG_DIR/verify.json" | tail -1 | tr -d ' ,')"
  local detail="client exit $client_status; $rows candidate(s), $measured measured step time(s) > 0 (with the answer's), $remote on the remote worker; $answer"
  if [[ $client_status -eq 0 && "$rows" -ge 2 && "$remote" -ge "$rows" \
        && "$measured" -gt "$rows" ]]; then
    result PASS "Optimize $VERIFY_GRAPH --verify=2 through the remote gopt-worker" "$detail"
  else
    result FAIL "Optimize $VERIFY_GRAPH --verify=2 through the remote gopt-worker" "$detail; see $LOG_DIR/verify.json, verify.err, pool-server.log, worker.log"
  fi
  docker rm -f "$server" "$worker" >/dev/null 2>&1
}

# --- Deploy files ------------------------------------------------------------
# The rendered objects (stdin, `---` separated) without, and only, the
# gopt-worker Deployment of the gpu overlay: its replicas and GPU are its own
# (no HPA scales it; it runs plans on the GPU).
objects_but_worker() {
  awk 'BEGIN { RS = "\n---\n"; ORS = "\n---\n" }
       !(/(^|\n)kind: Deployment\n/ && /\n  name: gopt-worker\n/)'
}
worker_deployment() {
  awk 'BEGIN { RS = "\n---\n"; ORS = "\n---\n" }
       /(^|\n)kind: Deployment\n/ && /\n  name: gopt-worker\n/'
}

# kubectl >= 1.21 (kustomize v4+) renders components and `labels`; Debian
# bookworm's kubernetes-client is 1.20 (kustomize v2.0.3), too old for both.
check_kustomize() {
  local render=""
  if command -v kustomize >/dev/null; then
    render="kustomize build"
  elif command -v kubectl >/dev/null; then
    render="kubectl kustomize"
  else
    apt_install kubernetes-client
    command -v kubectl >/dev/null && render="kubectl kustomize"
  fi
  if [[ -z "$render" ]]; then
    result SKIP "kustomize overlays" "neither kubectl nor kustomize installed or installable"
    return 0
  fi
  local minor
  minor="$(kubectl version --client -o json 2>/dev/null | grep -o '"minor": *"[0-9]*' | grep -o '[0-9]*$')"
  if [[ "$render" == "kubectl kustomize" && -n "$minor" && "$minor" -lt 21 ]]; then
    result SKIP "kustomize overlays" "kubectl 1.$minor embeds kustomize v2, which predates components and labels (Debian bookworm ships 1.20); install kubectl >= 1.21 or kustomize >= 4"
    return 0
  fi
  for overlay in deploy/overlays/*/; do
    overlay="${overlay%/}"
    local out
    out="$LOG_DIR/$(basename "$overlay").yaml"
    if ! $render "$overlay" >"$out" 2>"$out.err"; then
      result FAIL "$render $overlay" "$(tail -1 "$out.err")"
      continue
    fi
    local problems="" server_objects worker_objects
    server_objects="$(objects_but_worker <"$out")"
    worker_objects="$(worker_deployment <"$out")"
    grep -q '^  replicas:' <<<"$server_objects" && problems+=" replicas set beside the HPA;"
    grep -q 'nvidia.com/gpu:' <<<"$server_objects" && problems+=" gopt-server requests a GPU;"
    if [[ "$overlay" == */gpu ]]; then
      grep -q 'nvidia.com/gpu:' <<<"$worker_objects" || problems+=" no gopt-worker Deployment with a GPU;"
    else
      [[ -n "$worker_objects" ]] && problems+=" a gopt-worker Deployment outside the gpu overlay;"
    fi
    grep -q 'image: registry.example.com/gopt:' "$out" || problems+=" image not from the registry setting;"
    if [[ "$overlay" == *prometheus-operator ]]; then
      grep -q '^kind: ServiceMonitor' "$out" || problems+=" no ServiceMonitor;"
    else
      grep -q '^kind: ServiceMonitor' "$out" && problems+=" ServiceMonitor without the operator component;"
    fi
    if [[ -z "$problems" ]]; then
      result PASS "$render $overlay" "$(grep -c '^kind:' "$out") objects"
    else
      result FAIL "$render $overlay" "${problems% ;}"
    fi
  done
}

check_compose() {
  command -v docker-compose >/dev/null || apt_install docker-compose
  if ! command -v docker-compose >/dev/null; then
    result FAIL "docker-compose config" "docker-compose not installable"
    return 0
  fi
  if docker-compose -f deploy/docker-compose.yml config -q >"$LOG_DIR/compose.log" 2>&1; then
    result PASS "docker-compose config" "$(docker-compose version --short 2>/dev/null)"
  else
    result FAIL "docker-compose config" "$(tail -1 "$LOG_DIR/compose.log")"
  fi
}

echo "image-test: $(git rev-parse --short HEAD 2>/dev/null) in $PWD; logs in $LOG_DIR"
if ensure_docker && ensure_base_images && build_image; then
  if run_container; then
    check_cpuset
    check_optimize
    check_metrics
    check_drain
  fi
  check_remote_worker
fi
check_kustomize
check_compose
if [[ $failures -eq 0 ]]; then
  echo "image-test: all checks passed"
else
  echo "image-test: $failures check(s) failed"
  exit 1
fi
