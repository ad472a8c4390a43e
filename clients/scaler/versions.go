package scaler

import (
	"fmt"

	"k8s.io/client-go/discovery"

	"github.com/hpa-recommender/hpa-recommender/recommender"
)

// KubernetesVersionAuto is the --kubernetes-version value that asks for the cluster's own
// release, read from the API server's /version at start.
const KubernetesVersionAuto = "auto"

// validKubernetesVersion checks the --kubernetes-version flag: empty (the service's
// default), auto, or a supported release.
func validKubernetesVersion(v string) error {
	if v == "" || v == KubernetesVersionAuto {
		return nil
	}
	if _, err := recommender.RulesFor(recommender.Options{KubernetesVersion: v}); err != nil {
		return fmt.Errorf("--kubernetes-version: %w (or %s: the API server's)", err, KubernetesVersionAuto)
	}
	return nil
}

// ResolveKubernetesVersion turns the --kubernetes-version flag into the release sent with every
// Recommend: auto becomes the API server's release as disc reports it, which must be
// supported; any other value is returned as it is.
func ResolveKubernetesVersion(flagValue string, disc discovery.ServerVersionInterface) (string, error) {
	if flagValue != KubernetesVersionAuto {
		return flagValue, nil
	}
	info, err := disc.ServerVersion()
	if err != nil {
		return "", fmt.Errorf("--kubernetes-version=%s: read the API server's version: %w", KubernetesVersionAuto, err)
	}
	v := recommender.KubernetesVersionOf(info.Major, info.Minor)
	if _, err := recommender.RulesFor(recommender.Options{KubernetesVersion: v}); err != nil {
		return "", fmt.Errorf("--kubernetes-version=%s: the API server is %s: %w; set --kubernetes-version to the release to decide as", KubernetesVersionAuto, info.GitVersion, err)
	}
	return v, nil
}
