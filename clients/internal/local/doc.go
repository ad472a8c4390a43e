// Package local answers Recommend and Simulate requests in process, with package recommender
// and no server: hpactl's --local mode and the scaler's fallback. It takes and returns the API
// messages and reads, validates and reports them through internal/apiconv, the translation the
// server uses, so an invalid request fails here exactly as it fails there (codes.InvalidArgument
// with a google.rpc.BadRequest listing every field).
//
// Recommend here always decides at first sight (there is no stored history) and stores
// nothing, like a dry run against a server that has never seen the target; DecideWithState
// decides from a history the caller keeps.
//
// It imports the generated API, package recommender and internal/apiconv, never package server.
package local
