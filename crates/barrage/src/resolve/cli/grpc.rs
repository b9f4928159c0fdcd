//! `barrage run`'s gRPC flags (grpc://, grpcs://), flattened into `RunArgs`.

use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug, Clone, Default)]
pub struct GrpcArgs {
    /// The .proto file that defines the target's method (compiled here: no protoc needed)
    #[arg(
        long,
        value_name = "FILE",
        help_heading = "gRPC (grpc://HOST:PORT/package.Service/Method)"
    )]
    pub proto: Option<PathBuf>,

    /// A directory the .proto's imports are found in (repeatable; its own directory is searched too)
    #[arg(
        long = "import-path",
        value_name = "DIR",
        help_heading = "gRPC (grpc://HOST:PORT/package.Service/Method)"
    )]
    pub import_path: Vec<PathBuf>,

    /// The request message as JSON, or @FILE; {placeholders} in its strings are filled per call [default: {}]
    #[arg(
        long,
        value_name = "JSON|@FILE",
        allow_hyphen_values = true,
        help_heading = "gRPC (grpc://HOST:PORT/package.Service/Method)"
    )]
    pub data: Option<String>,

    /// Ask the server for the method's descriptors (gRPC server reflection) instead of --proto
    #[arg(long, help_heading = "gRPC (grpc://HOST:PORT/package.Service/Method)")]
    pub reflect: bool,

    /// The request message as protobuf bytes, from a file (instead of --data)
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "data",
        help_heading = "gRPC (grpc://HOST:PORT/package.Service/Method)"
    )]
    pub data_bin: Option<PathBuf>,

    /// Compress each call's messages: gzip (grpc-encoding: gzip; compressed replies are
    /// taken too)
    #[arg(
        long,
        value_name = "gzip",
        value_parser = ["gzip"],
        help_heading = "gRPC (grpc://HOST:PORT/package.Service/Method)"
    )]
    pub compression: Option<String>,
}
