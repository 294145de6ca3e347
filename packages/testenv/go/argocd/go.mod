// Wrapper module: builds Argo CD's multi-call binary (application controller, repo-server) from the module proxy
// (issue 19). v3.6.1 declares `go 1.27.0`, so this build alone runs under GOTOOLCHAIN=go1.27.3 (set in its env only).
// Its replace directives mirror upstream's go.mod at the same release (a dependency's replaces are ignored), except
// upstream's `gitops-engine/v3 => ./gitops-engine` becomes the published nested module at the same version (required
// below).
module baton.dev/testenv/argocd

go 1.27.0

require (
	github.com/argoproj/argo-cd/v3 v3.6.1
	github.com/argoproj/argo-cd/gitops-engine/v3 v3.6.1
)

replace (
	github.com/golang/protobuf => github.com/golang/protobuf v1.5.4
	github.com/grpc-ecosystem/grpc-gateway => github.com/grpc-ecosystem/grpc-gateway v1.16.0
	golang.org/x/tools => golang.org/x/tools v0.35.0

	// Avoid CVE-2022-3064
	gopkg.in/yaml.v2 => gopkg.in/yaml.v2 v2.4.0

	k8s.io/api => k8s.io/api v0.37.0
	k8s.io/apiextensions-apiserver => k8s.io/apiextensions-apiserver v0.37.0
	k8s.io/apimachinery => k8s.io/apimachinery v0.37.0
	k8s.io/apiserver => k8s.io/apiserver v0.37.0
	k8s.io/cli-runtime => k8s.io/cli-runtime v0.37.0
	k8s.io/client-go => k8s.io/client-go v0.37.0
	k8s.io/cloud-provider => k8s.io/cloud-provider v0.37.0
	k8s.io/cluster-bootstrap => k8s.io/cluster-bootstrap v0.37.0
	k8s.io/code-generator => k8s.io/code-generator v0.37.0
	k8s.io/component-base => k8s.io/component-base v0.37.0
	k8s.io/component-helpers => k8s.io/component-helpers v0.37.0
	k8s.io/controller-manager => k8s.io/controller-manager v0.37.0
	k8s.io/cri-api => k8s.io/cri-api v0.37.0
	k8s.io/cri-client => k8s.io/cri-client v0.37.0
	k8s.io/cri-streaming => k8s.io/cri-streaming v0.37.0
	k8s.io/csi-translation-lib => k8s.io/csi-translation-lib v0.37.0
	k8s.io/dynamic-resource-allocation => k8s.io/dynamic-resource-allocation v0.37.0
	k8s.io/endpointslice => k8s.io/endpointslice v0.37.0
	k8s.io/externaljwt => k8s.io/externaljwt v0.37.0
	k8s.io/kms => k8s.io/kms v0.37.0
	k8s.io/kube-aggregator => k8s.io/kube-aggregator v0.37.0
	k8s.io/kube-controller-manager => k8s.io/kube-controller-manager v0.37.0
	k8s.io/kube-proxy => k8s.io/kube-proxy v0.37.0
	k8s.io/kube-scheduler => k8s.io/kube-scheduler v0.37.0
	k8s.io/kubectl => k8s.io/kubectl v0.37.0
	k8s.io/kubelet => k8s.io/kubelet v0.37.0
	k8s.io/legacy-cloud-providers => k8s.io/legacy-cloud-providers v0.37.0
	k8s.io/metrics => k8s.io/metrics v0.37.0
	k8s.io/mount-utils => k8s.io/mount-utils v0.37.0
	k8s.io/pod-security-admission => k8s.io/pod-security-admission v0.37.0
	k8s.io/sample-apiserver => k8s.io/sample-apiserver v0.37.0
	k8s.io/sample-cli-plugin => k8s.io/sample-cli-plugin v0.37.0
	k8s.io/sample-controller => k8s.io/sample-controller v0.37.0
)
