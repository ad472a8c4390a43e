// Package tlsfiles reads TLS material and secrets from files that may change while a process
// runs (a rotated certificate, a Kubernetes Secret volume swapped under a symlink): a client
// tls.Config whose CA bundle and client certificate follow their files, and the File it is
// built on. The scaler's connection to the service and the service's connection to etcd use it.
//
// It imports the standard library only: nothing of this module, never gRPC.
package tlsfiles
