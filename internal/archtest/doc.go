// Package archtest holds no code: its test checks the import rules of DESIGN.md and STYLE.md
// ("imports point inward") over every package of the module, production and test imports
// alike, with no build tags and with the e2e and crashtest tags (go list ./...). A broken rule
// fails the test with one line per import:
//
//	<package> imports forbidden <import> (rule: <the rule>)
//
// where <package> is an import path, with " [test]" for its in-package test files and
// "_test" for its external test package. Nothing imports this package; its test imports only
// the standard library.
package archtest
