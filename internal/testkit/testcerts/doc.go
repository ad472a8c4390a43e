// Package testcerts makes throwaway certificate authorities and the certificates they sign,
// as PEM files or bytes, for tests and test harnesses that need real TLS.
//
// Every certificate is valid from an hour ago until a day from now and has a P-256 key; keys are PKCS#8.
// Leaves have the key usages digital signature and key encipherment, and the extended key
// usage server auth or client auth.
//
// It is a test kit: it imports the standard library only, and only tests and other test kits
// (internal/testkit/kubetest) import it.
package testcerts
