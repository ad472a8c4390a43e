// Package smalldisk gives a test a directory on a real, small tmpfs, so that it can fill the
// disk under a store and see what a full disk does. A test process cannot mount without
// privileges on the host, so the test runs again in a child process with a user and mount
// namespace of its own, where it may: Dir returns false in the parent, which has nothing left to
// do once the child passed (a failing child fails the parent, with its output).
//
// It is for tests only; no production package imports internal/testkit (internal/archtest).
package smalldisk
