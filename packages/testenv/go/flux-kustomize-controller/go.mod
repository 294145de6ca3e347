// Wrapper module: builds Flux's kustomize-controller from the module proxy (issue 13).
// Its replace directives mirror upstream's go.mod at the same release (a dependency's replaces are ignored); upstream's
// `api => ./api` becomes the published api submodule at the same version (required below).
// `go mod tidy` is not run here: it walks the controller's test imports, some of which the proxy refuses.
module baton.dev/testenv/flux-kustomize-controller

go 1.26.0

require (
	github.com/fluxcd/kustomize-controller v1.9.6
	github.com/fluxcd/kustomize-controller/api v1.9.6
)

replace github.com/opencontainers/go-digest => github.com/opencontainers/go-digest v1.0.1-0.20220411205349-bde1400a84be

replace (
	sigs.k8s.io/kustomize/api => sigs.k8s.io/kustomize/api v0.21.1
	sigs.k8s.io/kustomize/kyaml => sigs.k8s.io/kustomize/kyaml v0.21.1
)

replace gopkg.in/yaml.v3 => gopkg.in/yaml.v3 v3.0.1
