package scaler

import (
	"context"
	"errors"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

func (k *Kube) updateCustomStatus(ctx context.Context, obj *autoscalingv2.HorizontalPodAutoscaler, explanation string) (*autoscalingv2.HorizontalPodAutoscaler, string, error) {
	return nil, "", errors.New("custom resource: not yet")
}

func (k *Kube) getCustom(ctx context.Context, namespace, name string) (*autoscalingv2.HorizontalPodAutoscaler, string, error) {
	return nil, "", errors.New("custom resource: not yet")
}
