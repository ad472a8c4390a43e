// Package tlsfiles reads TLS material and secrets from files that may change while a process
// runs (a rotated certificate, a Kubernetes Secret volume swapped under a symlink): a client
// tls.Config whose CA bundle and client certificate follow their files, a server tls.Config
// whose certificate and client CA bundle do, and the File they are built on. The scaler's
// connection to the service, the service's connection to etcd and the service's own listener
// (its certificate and --client-ca) use it: it is the one reloader of TLS files.
//
// It imports the standard library only: nothing of this module, never gRPC.
package tlsfiles
