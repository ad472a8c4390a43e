// Command hpa-recommender is the central HPA decision service: flags and wiring only.
//
// It parses flags (internal/envflag) into server.Config and wires the server to a store
// backend; it may import every package of the module, and nothing imports cmd/.
package main
