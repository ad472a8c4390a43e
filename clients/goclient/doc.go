// Package goclient is the Go client of the hpa-recommender service
// (recommender.v1.RecommenderService).
//
// A Client wraps one gRPC connection. Its methods mirror the RPCs and take and return the
// generated messages of package recommenderv1 (proto/gen/recommender/v1), so a caller builds
// requests exactly as the API documents them.
//
// Transport security:
//   - Without WithTLS or WithTLSConfig the connection is plaintext. Plaintext is allowed only to
//     a loopback address (127.0.0.0/8, ::1, localhost) or a unix socket, unless WithInsecure is
//     given.
//   - WithClientCertificate adds a client certificate (mTLS) and implies TLS.
//   - WithBearerToken sends "authorization: Bearer <token>" with every call. A token is sent in
//     the clear only to a loopback address; to any other address it requires TLS, even with
//     WithInsecure, and New fails otherwise.
//
// Deadlines: a call whose context has no deadline gets the client's default timeout
// (WithTimeout, default 10s), covering every retry of the call.
//
// Retries (WithRetries, default 0: off) apply only to calls that are safe to repeat, and only
// when the server answers codes.Unavailable: GetTarget, ListTargets, ListDecisions, Simulate, ReportScale
// (the server answers a repeated recommendation id with recorded false) and Recommend with
// dryRun. A Recommend that writes history is never retried (a repeat would record a second
// recommendation), nor is DeleteTarget (a repeat after a lost reply would answer NotFound).
//
// Errors are gRPC statuses (status.Code(err)); FieldViolations lists the fields an
// InvalidArgument names, with what is wrong with each.
//
// The package imports the generated API and gRPC only; it never imports the server.
package goclient
