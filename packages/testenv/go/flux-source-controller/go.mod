// Wrapper module: builds Flux's source-controller from the module proxy (issue 13).
// Its replace directives mirror upstream's go.mod at the same release (a dependency's replaces are ignored), except:
// - upstream's `api => ./api` becomes the published api submodule at the same version (required below);
// - fluxcd/pkg/artifact v0.18.3, which source-controller v1.9.6 requires, is refused by the proxy (403, "this module
//   version is not available"); v0.18.0 is the newest it serves of that line and builds.
// `go mod tidy` is not run here: it walks the controller's test imports, and fluxcd/pkg/helmtestserver is refused.
module baton.dev/testenv/flux-source-controller

go 1.26.0

require (
	github.com/fluxcd/source-controller v1.9.6
	github.com/fluxcd/source-controller/api v1.9.6
)

replace github.com/opencontainers/go-digest => github.com/opencontainers/go-digest v1.0.1-0.20220411205349-bde1400a84be

replace github.com/fluxcd/pkg/artifact => github.com/fluxcd/pkg/artifact v0.18.0
