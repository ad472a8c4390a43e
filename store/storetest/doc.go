// Package storetest is the suite every store.Store backend runs: it is the executable form of
// the contract written on store.Store. A backend's test calls Run once with a constructor that
// returns a fresh, empty store for each subtest.
//
// It imports store and recommender, and the testing libraries; never server, proto or gRPC.
//
// It is a test kit: only the backends' tests import it.
package storetest
