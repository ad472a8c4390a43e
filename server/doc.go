// Package server is the gRPC surface of hpa-recommender: the RecommenderService handlers, the
// interceptor chain, authentication, validation, the mapping of errors to status codes,
// health, reflection, metrics and Run.
//
// Handlers translate between the public API messages (package proto/gen/recommender/v1) and
// the domain types of package recommender at the edge, through internal/apiconv (the
// translation the clients' in-process engine shares), and never let API messages reach the
// algorithm or the store.
//
// A Recommend is decode (grpc-go's protobuf codec; codec.go only turns an undecodable request
// into InvalidArgument) -> apiconv.DecisionInput (convert and validate) -> recommender.Decide
// -> store.Store.Update -> encode. The interceptors are go-grpc-middleware v2's (metrics,
// logging with health and reflection skipped, auth, recovery innermost), the per-cluster rate
// limit is golang.org/x/time/rate's, and TLS files are followed by internal/tlsfiles. The path
// keeps no cache, pool, memo or fast path of its own. It costs about 2.4 times the CPU per
// decision of the build that had them (docs/PERFORMANCE.md has the figures and where the CPU
// goes); one may come back only with a side-by-side measurement that it buys a goal, named
// here with its gain.
//
// Imports: proto (the generated API), recommender (the algorithm and its domain types),
// internal/apiconv (proto <-> domain), internal/tlsfiles and store (durable state), plus gRPC
// and its ecosystem.
// In production code only cmd imports server; its test kit server/servertest and the tests of
// the clients and deploy run it in process. It never imports clients/ or cmd/, in its tests
// either (internal/archtest checks).
package server
