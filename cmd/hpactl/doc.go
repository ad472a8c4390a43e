// Command hpactl is the command-line client of hpa-recommender: recommend, simulate, get,
// list and delete. Its logic lives in clients/hpactl; main.go only wires it to the process.
//
// It imports clients/hpactl only; nothing imports cmd/.
package main
