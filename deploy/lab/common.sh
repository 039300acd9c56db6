# The lab cluster's settings, shared by build, up, down and suite (sourced, not run).
#
# Everything the cluster writes is under $LAB (state, certificates, logs, process ids);
# everything built is under $LAB_CACHE. Both can be moved with the environment.

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
LAB="${PELT_LAB_DIR:-/tmp/pelt-lab}"
LAB_CACHE="${PELT_LAB_CACHE:-$HERE/.cache}"
KUBE="$LAB_CACHE/bin/kube"

# The Kubernetes release the multicall binary is built from (kube/go.mod pins it).
K8S_VERSION=v1.37.2

# One node; its address sits on the pods' bridge (the kubelet refuses a loopback node IP), and
# the pods route only to their bridge and the Services: no default route, no masquerade.
NODE=pelt-lab
BRIDGE=pelt-lab0
NODE_IP=10.244.0.1
POD_CIDR=10.244.0.0/24
SERVICE_CIDR=10.96.0.0/24
API_IP=10.96.0.1
API_PORT=6443
ETCD_PORT=2379

# Images are imported, never pulled (no registry is reachable).
PAUSE_IMAGE=localhost/pelt-lab/pause:1
PELT_VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -1)"
PELT_IMAGE="pelt:$PELT_VERSION"

SOCK="$LAB/containerd/containerd.sock"
export KUBECONFIG="$LAB/admin.kubeconfig"

kubectl() { "$KUBE" kubectl "$@"; }
ctr() { command ctr --address "$SOCK" --namespace k8s.io "$@"; }
say() { echo "lab: $*" >&2; }
die() {
    echo "lab: $*" >&2
    exit 1
}
