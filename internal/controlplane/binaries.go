package controlplane

import (
	"fmt"
	"os"
	"path/filepath"
)

// The versions the Makefile builds (KUBE_VERSION, ETCD_VERSION); the default cache
// directories are keyed by them.
const (
	KubeVersion = "v1.34.4"
	EtcdVersion = "v3.6.16"
)

// Binaries are the paths of the control-plane programs.
type Binaries struct {
	Etcd, APIServer, ControllerManager, Kubectl string
}

// FindBinaries locates the binaries `make kube-binaries` builds:
//
//   - kube-apiserver, kube-controller-manager, kubectl in $KUBE_BIN_DIR, else
//     $HOME/.cache/hpa-recommender/kube-v1.34.4;
//   - etcd at $ETCD_BIN, else $KUBE_BIN_DIR/etcd when present, else
//     $HOME/.cache/hpa-recommender/etcd-v3.6.16/etcd.
//
// The error names the make target to run when one is missing.
func FindBinaries() (Binaries, error) {
	home, _ := os.UserHomeDir()
	cache := filepath.Join(home, ".cache", "hpa-recommender")
	kubeDir := os.Getenv("KUBE_BIN_DIR")
	if kubeDir == "" {
		kubeDir = filepath.Join(cache, "kube-"+KubeVersion)
	}
	etcd := os.Getenv("ETCD_BIN")
	if etcd == "" {
		etcd = filepath.Join(kubeDir, "etcd")
		if _, err := os.Stat(etcd); err != nil {
			etcd = filepath.Join(cache, "etcd-"+EtcdVersion, "etcd")
		}
	}
	b := Binaries{
		Etcd:              etcd,
		APIServer:         filepath.Join(kubeDir, "kube-apiserver"),
		ControllerManager: filepath.Join(kubeDir, "kube-controller-manager"),
		Kubectl:           filepath.Join(kubeDir, "kubectl"),
	}
	for _, p := range []string{b.Etcd, b.APIServer, b.ControllerManager, b.Kubectl} {
		if st, err := os.Stat(p); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return b, fmt.Errorf("controlplane: %s is missing or not executable: run `make kube-binaries` "+
				"(or `make e2e`, which builds them first; a few minutes on a cold Go cache), "+
				"or point KUBE_BIN_DIR / ETCD_BIN at existing binaries", p)
		}
	}
	return b, nil
}
