// Command coredns is CoreDNS with only the plugins a test-bed cluster's DNS uses: the Kubernetes plugin answers for
// cluster.local and the reverse zones, nothing forwards (a bed has no way out). Upstream's main links every plugin,
// cloud DNS providers included; registering these alone keeps the build small.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/whoami"
)

// coremain links the DNS server type and upstream's directive order (core/dnsserver/zdirectives.go), which already
// lists these plugins; only which plugins register differs from upstream's main.
func main() { coremain.Run() }
