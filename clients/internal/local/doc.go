// Package local answers Recommend and Simulate requests in process, with package recommender
// and no server: hpactl's --local mode. It takes and returns the API messages, validates as the
// server does, and reports invalid requests as the server does (codes.InvalidArgument with a
// google.rpc.BadRequest listing every field), so a caller treats both the same.
//
// Recommend here always decides at first sight (there is no stored history) and stores
// nothing, like a dry run against a server that has never seen the target.
//
// It imports the generated API and package recommender, never package server (DESIGN.md:
// clients import proto and recommender only), so it carries its own proto <-> domain reading.
package local
