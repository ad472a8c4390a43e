// Package certgen makes throwaway certificate authorities and the certificates they sign,
// as PEM files or bytes, for tests and test harnesses that need real TLS.
//
// Every certificate is valid from an hour ago until a day from now and has a P-256 key; keys are PKCS#8.
// Leaves have the key usages digital signature and key encipherment, and the extended key
// usage server auth or client auth.
//
// The certificates are throwaway, for tests and for the local control plane of
// internal/controlplane (its only production importer); nothing serves with them in a
// deployment. New, ServerPEM, ClientPEM, Server and Client take a testing.TB and fail the test
// on error; NewCA, SignServer and SignClient return the error instead. It imports the standard
// library only.
package certgen
