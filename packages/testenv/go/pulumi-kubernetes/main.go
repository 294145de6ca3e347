// Command pulumi-resource-kubernetes serves the Pulumi Kubernetes provider over gRPC for the Pulumi engine.
//
// Upstream's main package embeds schema-embed.json and terraform-mapping-embed.json, which its release build
// generates and which are not in the module zip. @baton/testenv writes them next to this file from the
// schema.json and terraform-mapping.json that do ship in the module (with the schema's version set), then builds.
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema-embed.json
var pulumiSchema []byte

//go:embed terraform-mapping-embed.json
var terraformMapping []byte

func main() {
	provider.Serve("kubernetes", version.Version, pulumiSchema, terraformMapping)
}
