package server

import "google.golang.org/grpc/encoding"

// NewCodec is the server's codec, for the external benchmarks.
func NewCodec() encoding.CodecV2 { return newCodec() }
