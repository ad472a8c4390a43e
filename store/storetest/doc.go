// Package storetest is the suite every store.Store backend runs: it is the executable form of
// the contract written on store.Store. A backend's test calls Run once with a constructor that
// returns a fresh, empty store for each subtest. It covers every Store method the server
// calls (Get, Update, Delete, List, DeleteUnseenSince, Ping, Close), open and closed.
// BenchUpdate is the write benchmark every backend runs the same way (1, 8 and 64 writers).
//
// It imports store and recommender, and the testing libraries; never server, proto or gRPC.
//
// It is a test kit: only the backends' tests import it.
package storetest
