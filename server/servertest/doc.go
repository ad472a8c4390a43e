// Package servertest runs a real hpa-recommender server on a loopback port for tests of the
// server and of its clients (goclient, hpactl, the scaler, the load tool), so each does not
// carry its own copy of the start-and-stop code.
//
// It is the server's test kit: it imports server and store/memstore, never clients/ or cmd/,
// and only tests import it (internal/archtest checks both).
package servertest
