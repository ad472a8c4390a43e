package goclient_test

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
)

func timestamppbNew(t time.Time) *timestamppb.Timestamp { return timestamppb.New(t) }
