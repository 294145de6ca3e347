// Command argocd is Argo CD's multi-call binary with only the programs the test bed runs: the application controller,
// the repo-server, and git's askpass helper (the repo-server hands git `GIT_ASKPASS=argocd` with
// `ARGOCD_BINARY_NAME=argocd-git-ask-pass`). Upstream's cmd/main.go links the API server, dex, notifications, the
// ApplicationSet, commit and CMP servers and the CLI too; linking these three alone keeps the build smaller. Like
// upstream's, it picks its program from ARGOCD_BINARY_NAME, else from the name it was started as.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	appcontroller "github.com/argoproj/argo-cd/v3/cmd/argocd-application-controller/commands"
	gitaskpass "github.com/argoproj/argo-cd/v3/cmd/argocd-git-ask-pass/commands"
	reposerver "github.com/argoproj/argo-cd/v3/cmd/argocd-repo-server/commands"
	"github.com/argoproj/argo-cd/v3/common"
	"github.com/argoproj/argo-cd/v3/util/log"
)

func init() {
	// As upstream's main: klog logs through Argo CD's configured logrus format and level.
	klog.SetLogger(log.NewLogrusLogger(log.NewWithCurrentConfig()))
}

func main() {
	// No grpc.DisableSRVLookups() as upstream's main calls: gRPC's DNS resolver makes SRV lookups only once the grpclb
	// balancer is linked (its init turns them on), which upstream's CLI and API server link and these programs do not;
	// the workaround panics when it finds them already off.

	name := filepath.Base(os.Args[0])
	if v := os.Getenv("ARGOCD_BINARY_NAME"); v != "" {
		name = v
	}
	var command *cobra.Command
	switch name {
	case common.CommandApplicationController:
		command = appcontroller.NewCommand()
	case common.CommandRepoServer:
		command = reposerver.NewCommand()
	case common.CommandGitAskPass:
		command = gitaskpass.NewCommand()
		command.SilenceErrors = true
		command.SilenceUsage = true
	default:
		fmt.Fprintf(os.Stderr, "argocd (baton test bed build): %q is not one of the linked programs (%s, %s, %s); start it as one of them or set ARGOCD_BINARY_NAME\n",
			name, common.CommandApplicationController, common.CommandRepoServer, common.CommandGitAskPass)
		os.Exit(2)
	}
	if err := command.Execute(); err != nil {
		os.Exit(1)
	}
}
