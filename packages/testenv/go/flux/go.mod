// Wrapper module: builds Flux's source-controller and kustomize-controller from the module proxy in one `go build`
// (issues 13, 27). One module means one version of every shared dependency (minimal version selection picks it), so
// the two controllers compile their common packages once: 474 s and 912 CPU-s cold against 731 s and 1,392 CPU-s for
// a wrapper per controller (measured 2026-12-06, empty Go build cache, warm module cache, 2 cores).
// The replace directives are the union of upstream's go.mod of both controllers at the same release (a dependency's
// replaces are ignored), except:
// - upstream's `api => ./api` becomes the published api submodule of each controller at the same version;
// - fluxcd/pkg/artifact v0.18.3, which source-controller v1.9.6 requires, is refused by the proxy (403, "this module
//   version is not available"); v0.18.0 is the newest it serves of that line and builds.
// `go mod tidy` is not run here: it walks the controllers' test imports, some of which the proxy refuses
// (fluxcd/pkg/helmtestserver).
module baton.dev/testenv/flux

go 1.26.0

require (
	github.com/fluxcd/kustomize-controller v1.9.6
	github.com/fluxcd/kustomize-controller/api v1.9.6
	github.com/fluxcd/source-controller v1.9.6
	github.com/fluxcd/source-controller/api v1.9.6
)

replace github.com/opencontainers/go-digest => github.com/opencontainers/go-digest v1.0.1-0.20220411205349-bde1400a84be

replace github.com/fluxcd/pkg/artifact => github.com/fluxcd/pkg/artifact v0.18.0

replace (
	sigs.k8s.io/kustomize/api => sigs.k8s.io/kustomize/api v0.21.1
	sigs.k8s.io/kustomize/kyaml => sigs.k8s.io/kustomize/kyaml v0.21.1
)

replace gopkg.in/yaml.v3 => gopkg.in/yaml.v3 v3.0.1
