package hpactl

import (
	"context"
	"errors"
	"fmt"
	"os"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

func (a *App) recommend(ctx context.Context, args []string) error {
	fs := a.newFlagSet("recommend")
	var t targetFlags
	registerTarget(fs, &t, true)
	obsFile := fs.String("observations", "", "the currentReplicas, statusReplicas, pods and metrics of a RecommendRequest, in its JSON (protojson)")
	dryRun := fs.Bool("dry-run", false, "compute the same answer and write nothing on the server")
	useLocal := fs.Bool("local", false, "decide in process with the recommender package, without a server (first sight, nothing stored)")
	versions := registerVersions(fs, 1)
	out := registerOutput(fs)
	conn := a.registerConn(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if t.file == "" || *obsFile == "" {
		return errors.New("recommend needs -f hpa.yaml and --observations obs.json")
	}
	refs, ms, err := t.targets(a.Stderr)
	if err != nil {
		return err
	}
	obs, err := loadObservations(*obsFile)
	if err != nil {
		return err
	}
	recommend := a.Local.Recommend
	if !*useLocal {
		c, err := conn.dial(fs)
		if err != nil {
			return err
		}
		defer c.Close()
		recommend = func(ctx context.Context, req *pb.RecommendRequest) (*pb.RecommendResponse, error) {
			return c.Recommend(ctx, req)
		}
	}
	// Each autoscaler of the file decides from the same observations.
	return a.forEach(refs, func(i int) error {
		req := proto.CloneOf(obs)
		req.Target, req.Spec, req.DryRun = refs[i], ms[i].spec, *dryRun
		if len(versions.list) == 1 {
			if req.Options == nil {
				req.Options = &pb.Options{}
			}
			req.Options.KubernetesVersion = proto.String(versions.list[0])
		}
		resp, err := recommend(ctx, req)
		if err != nil {
			return err
		}
		if *out == "json" {
			return writeJSON(a.Stdout, resp)
		}
		if i > 0 {
			fmt.Fprintln(a.Stdout)
		}
		writeDecision(a.Stdout, refs[i], ms[i].spec, resp)
		return nil
	})
}

// loadObservations reads the observation part of a RecommendRequest. The target and spec come
// from the command line and the manifest, so the file may not set them.
func loadObservations(path string) (*pb.RecommendRequest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read observations: %w", err)
	}
	req := &pb.RecommendRequest{}
	if err := protojson.Unmarshal(b, req); err != nil {
		return nil, fmt.Errorf("parse observations %s (the JSON of a RecommendRequest's currentReplicas, statusReplicas, pods and metrics): %w", path, err)
	}
	if req.Spec != nil || req.Target != nil {
		return nil, fmt.Errorf("observations %s: set the spec and target with -f and the target flags, not in the file", path)
	}
	return req, nil
}
