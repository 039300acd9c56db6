// kube: one binary holding a whole one-node Kubernetes for pelt's lab cluster (deploy/lab).
//
// `kube COMPONENT ARGS...` runs etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
// kubelet, kube-proxy, kubectl or coredns, each through its own upstream entry point, exactly
// as its own main package would. One binary built from the Go module proxy (no git clone of
// kubernetes, no registry) keeps the lab's build to one `go build`.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"
	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	kubectl "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"

	// What each component's own main package imports for its side effects.
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	_ "time/tzdata"

	// The CoreDNS plugins the lab's Corefile uses, and no others.
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
)

const usage = "usage: kube etcd|kube-apiserver|kube-controller-manager|kube-scheduler|kubelet|kube-proxy|kubectl|coredns [ARGS...]"

func main() {
	name := filepath.Base(os.Args[0])
	args := os.Args[1:]
	if name == "kube" {
		if len(args) == 0 {
			fmt.Fprintln(os.Stderr, usage)
			os.Exit(2)
		}
		name, args = args[0], args[1:]
	}
	// Each entry point reads os.Args as its own main would see them.
	os.Args = append([]string{name}, args...)
	switch name {
	case "etcd":
		etcdmain.Main(os.Args)
	case "kube-apiserver":
		os.Exit(cli.Run(apiserver.NewAPIServerCommand()))
	case "kube-controller-manager":
		os.Exit(cli.Run(controllermanager.NewControllerManagerCommand()))
	case "kube-scheduler":
		os.Exit(cli.Run(scheduler.NewSchedulerCommand()))
	case "kubelet":
		os.Exit(cli.Run(kubelet.NewKubeletCommand(context.Background())))
	case "kube-proxy":
		os.Exit(cli.Run(proxy.NewProxyCommand()))
	case "kubectl":
		logs.GlogSetter(kubectl.GetLogVerbosity(os.Args)) // nolint:errcheck
		if err := cli.RunNoErrOutput(kubectl.NewDefaultKubectlCommand()); err != nil {
			kubectlutil.CheckErr(err)
		}
	case "coredns":
		// In the order of CoreDNS's own plugin.cfg.
		dnsserver.Directives = []string{"bind", "errors", "kubernetes"}
		coremain.Run()
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
}
