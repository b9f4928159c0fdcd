//go:build tools

// The gRPC servers crates/barrage/tests/it/grpc.rs calls: grpc-go's own examples, pinned by
// go.mod and built by .ci/install into bin/ (go build -o bin/NAME PACKAGE).
package tools

import (
	_ "google.golang.org/grpc/examples/helloworld/greeter_server"
	_ "google.golang.org/grpc/examples/features/compression/server"
	_ "google.golang.org/grpc/examples/features/reflection/server"
	_ "google.golang.org/grpc/examples/route_guide/server"
)
