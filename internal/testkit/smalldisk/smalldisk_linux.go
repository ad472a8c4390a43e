package smalldisk

import (
	"os"
	"os/exec"
	"regexp"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// childEnv names the test that the child process runs.
const childEnv = "SMALLDISK_TEST_CHILD"

// Dir returns a directory on a tmpfs of size bytes (a tmpfs size option: "1m", "4m") and true,
// in the child process. In the parent it runs the calling test in the child and returns false.
// It only works for a top-level test.
func Dir(t *testing.T, size string) (string, bool) {
	t.Helper()
	if os.Getenv(childEnv) != t.Name() {
		cmd := exec.Command(os.Args[0], "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), childEnv+"="+t.Name())
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the test in a mount namespace of its own: %v\n%s", err, out)
		}
		t.Logf("in a mount namespace of its own:\n%s", out)
		return "", false
	}
	dir := t.TempDir()
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		t.Fatalf("make mounts private: %v", err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Fatalf("mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, 0) })
	return dir, true
}
