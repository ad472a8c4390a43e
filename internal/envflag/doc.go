// Package envflag lets environment variables set the flags a command line leaves unset, so
// each binary's flags can come from a Deployment's env: a flag given on the command line wins
// over the environment, which wins over the default.
//
// It imports the standard library only, nothing of this module; cmd/ and the packages whose
// Config binds flags (server, clients/scaler) use it.
package envflag
