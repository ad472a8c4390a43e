// Package server is the gRPC surface of hpa-recommender: the RecommenderService handlers, the
// interceptor chain, authentication, validation, the mapping of errors to status codes,
// health, reflection, metrics and Run.
//
// Handlers translate between the public API messages (package proto/gen/recommender/v1) and
// the domain types of package recommender at the edge, through internal/apiconv (the
// translation the clients' in-process engine shares), and never let API messages reach the
// algorithm or the store.
//
// Imports: proto (the generated API), recommender (the algorithm and its domain types),
// internal/apiconv (proto <-> domain) and store (durable state), plus gRPC and its ecosystem.
// Its gRPC codec (codec.go) marshals the API's messages with vtprotobuf's generated code.
// In production code only cmd imports server; its test kit server/servertest and the tests of
// the clients and deploy run it in process. It never imports clients/ or cmd/, in its tests
// either (internal/archtest checks).
package server
