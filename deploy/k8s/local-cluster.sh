#!/usr/bin/env bash
# A two-node Kubernetes on this one host, to run the Indexed Job of `barrage dist k8s` for real.
# By hand, not CI: the first start builds Kubernetes from Go modules (about 15 min on 2 cores,
# about 1 GB of modules). Recipe and gotchas: ../shared/dist/README.md; what ran: README.md here.
#
#   local-cluster.sh start DIR          build (when missing) and start etcd, kube-apiserver,
#                                       kube-controller-manager, kube-scheduler and two "nodes"
#                                       (node1, node2: one containerd + one kubelet each); writes
#                                       DIR/kubeconfig, DIR/env (source it: KUBECONFIG, PATH with
#                                       this kubectl) and DIR/pids/*.pid
#   local-cluster.sh image DIR BARRAGE  build localhost/barrage:dev FROM scratch (BARRAGE, the
#                                       shared libraries ldd names, busybox-static for /bin/sh, tar,
#                                       gzip, base64) and import it into both nodes, offline
#   local-cluster.sh stop DIR           stop what start started, by its PID files (the nodes'
#                                       containers first, through their containerd)
#
# Everything binds to 127.0.0.1 (or a unix socket under DIR); ports: etcd 22379-22380, API
# server 26443, kubelets 26250-26251 (healthz 22248-22249), containerd streams 22101-22102.
# Test-only security: a static token, AlwaysAllow, kubelets that accept anonymous requests.
# Debian 12 packages: etcd-server, containerd, runc, containernetworking-plugins, buildah,
# busybox-static (installed when missing). Go from PATH. K8S_VERSION (default 1.34.4) and
# K8S_BUILD (default DIR/k8swrap: go.mod and bin/) may be set.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-1.34.4}
ETCD_PORT=22379 ETCD_PEER=22380 API_PORT=26443
NODES=(node1 node2)
KUBELET_PORT=(26250 26251) HEALTHZ_PORT=(22248 22249) STREAM_PORT=(22101 22102)

usage() { echo "usage: $0 start DIR | image DIR BARRAGE_BINARY | stop DIR" >&2; exit 2; }
say() { echo "local-cluster: $*" >&2; }
die() { say "error: $*"; exit 1; }

cmd=${1:-}; [ -n "${2:-}" ] || usage
D=$(realpath -m "$2")
BUILD=${K8S_BUILD:-$D/k8swrap}
BIN=$BUILD/bin
export KUBECONFIG=$D/kubeconfig
export PATH=$BIN:$PATH

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# run NAME CMD...: start a daemon, its output in DIR/log/NAME.log, its PID in DIR/pids/NAME.pid.
run() {
  local name=$1; shift
  if alive "$D/pids/$name.pid"; then die "$name already runs (PID $(cat "$D/pids/$name.pid"))"; fi
  "$@" > "$D/log/$name.log" 2>&1 < /dev/null &
  echo $! > "$D/pids/$name.pid"
}

# until_ok SECONDS WHAT CMD...: retry CMD each second; fail naming WHAT and its log.
until_ok() {
  local secs=$1 what=$2; shift 2
  for _ in $(seq "$secs"); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 1
  done
  die "$what not up within ${secs}s (see $D/log/)"
}

# stop_pid NAME: TERM the PID of DIR/pids/NAME.pid, wait up to 20 s, then KILL that PID.
stop_pid() {
  local f=$D/pids/$1.pid pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then say "$1 (PID $pid) ignored TERM: KILL"; kill -KILL "$pid" 2>/dev/null || true; fi
    say "stopped $1 (PID $pid)"
  fi
  rm -f "$f"
}

need_debs() {
  local missing=()
  command -v etcd >/dev/null || missing+=(etcd-server)
  command -v containerd >/dev/null || missing+=(containerd)
  command -v runc >/dev/null || missing+=(runc)
  [ -x /usr/lib/cni/loopback ] || missing+=(containernetworking-plugins)
  command -v buildah >/dev/null || missing+=(buildah)
  file -L /bin/busybox 2>/dev/null | grep -q 'statically linked' || missing+=(busybox-static)
  if [ ${#missing[@]} -gt 0 ]; then
    say "installing ${missing[*]}"
    # No service of the packages is started: this script starts its own daemons.
    local rc=/usr/sbin/policy-rc.d created=
    if [ ! -e $rc ]; then printf '#!/bin/sh\nexit 101\n' > $rc; chmod +x $rc; created=1; fi
    DEBIAN_FRONTEND=noninteractive nice -n 19 ionice -c3 apt-get update -qq
    DEBIAN_FRONTEND=noninteractive nice -n 19 ionice -c3 \
      apt-get install -y -qq --no-install-recommends "${missing[@]}" > "$D/log/apt.log"
    if [ -n "$created" ]; then rm -f $rc; fi
  fi
}

# Kubernetes' server binaries and kubectl, built from the Go module proxy (k8s.io/kubernetes is
# not meant to be required as a module: its k8s.io/* staging modules are replaced by their
# published v0.X.Y versions).
build_k8s() {
  local want=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl) have=1
  for b in "${want[@]}"; do [ -x "$BIN/$b" ] || have=; done
  [ -n "$have" ] && return 0
  command -v go >/dev/null || die "go is not on PATH (needed once, to build Kubernetes)"
  mkdir -p "$BUILD" && cd "$BUILD"
  local minor=${K8S_VERSION#*.}; minor=${minor%%.*}
  if [ ! -f go.sum ]; then
    say "downloading k8s.io/kubernetes@v$K8S_VERSION and its modules (about 1 GB)"
    nice -n 19 ionice -c3 go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" > dl.json
    local mod
    mod=$(python3 -c "import json;print(json.load(open('dl.json'))['GoMod'])")
    printf 'module local/k8swrap\ngo 1.24\nrequire k8s.io/kubernetes v%s\n' "$K8S_VERSION" > go.mod
    grep -E '^\s*k8s.io/[a-z0-9-]+ => ./staging' "$mod" \
      | awk -v v="v0.$minor.${K8S_VERSION##*.}" '{print "replace " $1 " => " $1 " " v}' >> go.mod
    printf '//go:build tools\npackage tools\nimport (\n' > tools.go
    for b in "${want[@]}"; do printf ' _ "k8s.io/kubernetes/cmd/%s"\n' "$b" >> tools.go; done
    printf ')\n' >> tools.go
    GOFLAGS="-mod=mod -buildvcs=false" nice -n 19 ionice -c3 go mod tidy -e > tidy.log 2>&1
  fi
  # The version the binaries report (a module build has none of its own).
  local ldf="" p
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldf+=" -X $p.gitVersion=v$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
    ldf+=" -X $p.gitTreeState=clean -X $p.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  done
  say "building ${want[*]} v$K8S_VERSION (about 15 min on 2 cores; log $BUILD/build.log)"
  local t0=$SECONDS pkgs=()
  for b in "${want[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
  if ! GOFLAGS="-mod=mod -buildvcs=false" nice -n 19 go build -ldflags "-s -w$ldf" -o bin/ "${pkgs[@]}" \
      > build.log 2>&1; then
    tail -20 build.log >&2; die "go build failed (see $BUILD/build.log)"
  fi
  say "built in $((SECONDS - t0)) s: $(ls bin | tr '\n' ' ')"
  cd - >/dev/null
}

bh() { buildah --root "$D/buildah/root" --runroot "$D/buildah/run" --storage-driver vfs "$@"; }

# image_from ROOTFS NAME ENTRYPOINT_JSON: an image FROM scratch holding ROOTFS, imported into
# every node's containerd (namespace k8s.io, which the CRI reads), offline.
image_from() {
  local rootfs=$1 name=$2 entry=$3 ctr mnt tar
  tar=$D/images/$(echo "$name" | tr '/:' '__').tar
  mkdir -p "$D/images"
  bh rm "build-${name//[\/:]/-}" >/dev/null 2>&1 || true
  ctr=$(bh from --name "build-${name//[\/:]/-}" scratch)
  mnt=$(bh mount "$ctr")
  cp -a "$rootfs/." "$mnt/"
  bh umount "$ctr" >/dev/null
  bh config --entrypoint "$entry" --env PATH=/usr/local/bin:/usr/bin:/bin --workingdir / "$ctr"
  bh commit -q "$ctr" "$name" >/dev/null
  bh rm "$ctr" >/dev/null
  rm -f "$tar"
  bh push -q "$name" "oci-archive:$tar:$name"
  for n in "${NODES[@]}"; do
    ctr --address "$D/$n/containerd.sock" -n k8s.io images import "$tar" >/dev/null
    # (Listed first, then searched: grep -q would end the listing early, and pipefail fail it.)
    local have
    have=$(ctr --address "$D/$n/containerd.sock" -n k8s.io images ls -q)
    grep -qx "$name" <<< "$have" || die "$name is not in $n's containerd after the import"
  done
  say "image $name ($(du -h "$tar" | cut -f1)) imported into ${NODES[*]}"
}

# A rootfs with busybox-static's applets (sh, tar, gzip, base64, date, ...) in /bin and /usr/bin.
busybox_rootfs() {
  local r=$1 a
  mkdir -p "$r/bin" "$r/usr/bin" "$r/usr/sbin" "$r/sbin" "$r/tmp" "$r/etc"
  chmod 1777 "$r/tmp"
  cp /bin/busybox "$r/bin/busybox"
  for a in $(/bin/busybox --list-full); do
    [ -e "$r/$a" ] || [ -L "$r/$a" ] || ln -s /bin/busybox "$r/$a"
  done
}

pause_image() {
  local r=$D/images/pause-rootfs
  rm -rf "$r"; busybox_rootfs "$r"
  image_from "$r" localhost/pause:1 \
    '["/bin/sh","-c","trap \"exit 0\" TERM INT; while :; do sleep 3600 & wait $!; done"]'
}

write_configs() {
  local token i n
  token=$(openssl rand -hex 16)
  mkdir -p "$D/pki" "$D/cni"
  [ -f "$D/pki/sa.key" ] || {
    openssl genrsa -out "$D/pki/sa.key" 2048 2>/dev/null
    openssl rsa -in "$D/pki/sa.key" -pubout -out "$D/pki/sa.pub" 2>/dev/null
  }
  echo "$token,admin,admin,system:masters" > "$D/pki/tokens.csv"
  chmod 600 "$D/pki/tokens.csv"
  cat > "$D/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:$API_PORT
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: $token
contexts:
- name: local
  context:
    cluster: local
    user: admin
    namespace: default
current-context: local
EOF
  chmod 600 "$D/kubeconfig"
  # Pods of this cluster use the node's network (barrage dist k8s --host-network) or none:
  # the CNI network is loopback only (containerd reports the node's network ready with it).
  echo '{"cniVersion":"1.0.0","name":"lo-only","plugins":[{"type":"loopback"}]}' > "$D/cni/10-lo.conflist"
  for i in 0 1; do
    n=${NODES[$i]}
    mkdir -p "$D/$n/containerd" "$D/$n/kubelet" "$D/$n/pod-logs"
    cat > "$D/$n/containerd.toml" <<EOF
version = 2
root = "$D/$n/containerd/root"
state = "$D/$n/containerd/state"
[grpc]
  address = "$D/$n/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/pause:1"
  # runc cannot lower oom_score_adj here (no CAP_SYS_RESOURCE): keep it at the parent's.
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "${STREAM_PORT[$i]}"
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$D/cni"
EOF
    cat > "$D/$n/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: ${KUBELET_PORT[$i]}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: ${HEALTHZ_PORT[$i]}
containerRuntimeEndpoint: unix://$D/$n/containerd.sock
# Each kubelet its own pod-log directory: sharing one, each removes the other's pods' logs.
podLogsDir: $D/$n/pod-logs
# The API server reaches the kubelet without a client certificate (kubectl logs): test only.
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
# This host: cgroup v1, no systemd, no swap, no CAP_SYS_RESOURCE; leave iptables alone.
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failCgroupV1: false
failSwapOn: false
oomScoreAdj: 0
makeIPTablesUtilChains: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 2%
  imagefs.available: 2%
EOF
  done
}

start() {
  mkdir -p "$D/log" "$D/pids"
  need_debs
  build_k8s
  write_configs

  run etcd etcd --name local --data-dir "$D/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" \
    --initial-cluster "local=http://127.0.0.1:$ETCD_PEER"
  until_ok 30 etcd curl -sf "http://127.0.0.1:$ETCD_PORT/health"

  run kube-apiserver "$BIN/kube-apiserver" --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port=$API_PORT \
    --cert-dir="$D/pki/apiserver" --token-auth-file="$D/pki/tokens.csv" --authorization-mode=AlwaysAllow \
    --service-account-issuer=https://kubernetes.default.svc --service-account-key-file="$D/pki/sa.pub" \
    --service-account-signing-key-file="$D/pki/sa.key" --service-cluster-ip-range=10.96.0.0/24 \
    --kubelet-preferred-address-types=InternalIP --profiling=false
  # (The default prefers the node's Hostname, "node1", which resolves nowhere: kubectl logs
  # would fail. Its InternalIP, 127.0.0.1, is set below, with the port the kubelet reports.)
  until_ok 90 kube-apiserver kubectl get --raw /readyz

  run kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig="$KUBECONFIG" \
    --service-account-private-key-file="$D/pki/sa.key" --bind-address=127.0.0.1 --secure-port=0 \
    --leader-elect=false --controllers=job,serviceaccount,namespace,garbagecollector
  run kube-scheduler "$BIN/kube-scheduler" --kubeconfig="$KUBECONFIG" --leader-elect=false --secure-port=0

  local i n
  for i in 0 1; do
    n=${NODES[$i]}
    run "containerd-$n" containerd --config "$D/$n/containerd.toml"
    until_ok 30 "containerd of $n" ctr --address "$D/$n/containerd.sock" version
  done
  pause_image
  for i in 0 1; do
    n=${NODES[$i]}
    run "kubelet-$n" "$BIN/kubelet" --config="$D/$n/kubelet.yaml" --kubeconfig="$KUBECONFIG" \
      --root-dir="$D/$n/kubelet" --hostname-override="$n" --node-ip=127.0.0.1
  done
  for n in "${NODES[@]}"; do
    until_ok 120 "node $n (registered)" kubectl get node "$n"
    kubectl wait --for=condition=Ready "node/$n" --timeout=120s >/dev/null \
      || die "node $n not Ready (see $D/log/kubelet-$n.log)"
    # No node-lifecycle controller runs: lift the taint that admission put on the new node.
    kubectl taint nodes "$n" node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true
    # The kubelet reports no address at all ("nodeIP can't be loopback address"), so the API
    # server could not reach it for kubectl logs: write them into the node's status (the
    # kubelet's failing address setter leaves them as they are).
    kubectl patch node "$n" --subresource=status --type=merge -p \
      "{\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"127.0.0.1\"},{\"type\":\"Hostname\",\"address\":\"$n\"}]}}" >/dev/null
  done
  until_ok 60 "the default ServiceAccount" kubectl get serviceaccount default
  printf 'export KUBECONFIG=%q\nexport PATH=%q:"$PATH"\n' "$KUBECONFIG" "$BIN" > "$D/env"
  kubectl get nodes -o wide >&2
  say "up: . $D/env; then kubectl ...; stop with: $0 stop $D"
}

image() {
  local barrage=${1:?BARRAGE_BINARY} r lib
  [ -x "$barrage" ] || die "$barrage is not an executable"
  for n in "${NODES[@]}"; do
    ctr --address "$D/$n/containerd.sock" version >/dev/null 2>&1 || die "$n's containerd is not running: start first"
  done
  r=$D/images/barrage-rootfs
  rm -rf "$r"; busybox_rootfs "$r"
  mkdir -p "$r/usr/local/bin"
  cp "$barrage" "$r/usr/local/bin/barrage"
  # Its shared libraries and loader at the paths ldd names (none when it is static).
  for lib in $(ldd "$barrage" 2>/dev/null | grep -o '/[^ ]*' || true); do
    mkdir -p "$r$(dirname "$lib")"
    cp -L "$lib" "$r$lib"
  done
  image_from "$r" localhost/barrage:dev '["/usr/local/bin/barrage"]'
}

stop() {
  [ -d "$D/pids" ] || { say "nothing recorded under $D/pids"; return 0; }
  local n id
  for n in "${NODES[@]}"; do stop_pid "kubelet-$n"; done
  # The pods' containers and sandboxes run under containerd's shims, which are not its
  # children: kill and delete them through containerd, and the shims exit by themselves.
  for n in "${NODES[@]}"; do
    alive "$D/pids/containerd-$n.pid" || continue
    local c=(ctr --address "$D/$n/containerd.sock" -n k8s.io)
    for id in $("${c[@]}" tasks ls -q 2>/dev/null); do
      "${c[@]}" tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true
    done
    sleep 1
    for id in $("${c[@]}" tasks ls -q 2>/dev/null); do "${c[@]}" tasks delete -f "$id" >/dev/null 2>&1 || true; done
    for id in $("${c[@]}" containers ls -q 2>/dev/null); do "${c[@]}" containers delete "$id" >/dev/null 2>&1 || true; done
    stop_pid "containerd-$n"
  done
  # The kubelet bind-mounts its root directory (and pods' volumes below it) and leaves them:
  # unmount what is mounted below DIR, deepest first.
  local m
  for m in $(awk -v d="$D/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m" || true
  done
  stop_pid kube-scheduler
  stop_pid kube-controller-manager
  stop_pid kube-apiserver
  stop_pid etcd
  # A daemon of this cluster still running (etcd, containerd, a shim, a Kubernetes binary whose
  # command line names DIR) is reported, not killed.
  local left="" p exe
  for p in /proc/[0-9]*; do
    exe=$(readlink "$p/exe" 2>/dev/null) || continue
    case "$exe" in
      */etcd | */containerd | */containerd-shim* | "$BIN"/*) ;;
      *) continue ;;
    esac
    if tr '\0' ' ' < "$p/cmdline" 2>/dev/null | grep -qF "$D/"; then left+=" ${p#/proc/}"; fi
  done
  if [ -n "$left" ]; then say "still running, naming $D:$left"; exit 1; fi
  say "stopped"
}

case "$cmd" in
  start) start ;;
  image) image "${3:-}" ;;
  stop) stop ;;
  *) usage ;;
esac
