//go:build tools

// h2spec, the HTTP/2 conformance tester that crates/barrage/tests/it/h2.rs runs against
// `barrage serve h2`, pinned by go.mod and built by .ci/install into bin/ (go build -o bin/h2spec
// github.com/summerwind/h2spec/cmd/h2spec). v2.2.1 is the newest version the module proxy
// serves here (v2.6.0 is not); it has no go.mod of its own, so its dependencies are pinned here.
package tools

import (
	_ "github.com/summerwind/h2spec/cmd/h2spec"
)
