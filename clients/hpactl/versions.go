package hpactl

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"google.golang.org/protobuf/proto"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// versionsFlag is --kubernetes-version: the Kubernetes release(s) whose HPA controller decides
// (options.kubernetesVersion). recommend takes one; simulate one or two, comma-separated, and
// with two replays the trace under each and prints them side by side.
type versionsFlag struct {
	list []string
	max  int
}

func (v *versionsFlag) String() string { return strings.Join(v.list, ",") }

func (v *versionsFlag) Set(s string) error {
	v.list = nil
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			return fmt.Errorf("empty release in %q: want e.g. 1.34 or 1.34,1.38", s)
		}
		for _, seen := range v.list {
			if seen == p {
				return fmt.Errorf("release %s given twice", p)
			}
		}
		v.list = append(v.list, p)
	}
	if len(v.list) > v.max {
		return fmt.Errorf("at most %d releases, got %d", v.max, len(v.list))
	}
	return nil
}

// registerVersions adds --kubernetes-version to fs; max is how many releases it takes.
func registerVersions(fs *flag.FlagSet, max int) *versionsFlag {
	v := &versionsFlag{max: max}
	usage := "Kubernetes `release` whose HPA controller decides, 1.34 to 1.38 (default: the server's --kubernetes-version; with --local, the newest)"
	if max > 1 {
		usage = "Kubernetes releases whose HPA controllers decide, a `list` of one or two of 1.34 to 1.38; two (1.34,1.38) replay the trace under each and print them side by side (default: the server's --kubernetes-version; with --local, the newest)"
	}
	fs.Var(v, "kubernetes-version", usage)
	return v
}

// versionOptions is the request options for release v ("" leaves them unset).
func versionOptions(v string) *pb.Options {
	if v == "" {
		return nil
	}
	return &pb.Options{KubernetesVersion: proto.String(v)}
}

// writeSideBySide prints two replays of the same rows, one column group per release, and
// marks the rows whose decisions differ.
func writeSideBySide(w io.Writer, versions []string, runs [][]simStep) error {
	if len(versions) != 2 || len(runs) != 2 || len(runs[0]) != len(runs[1]) || len(runs[0]) == 0 {
		return errors.New("side-by-side output needs two replays of the same rows")
	}
	a, b := versions[0], versions[1]
	tw := newTable(w)
	fmt.Fprintf(tw, "TIME\tDEMAND\t%s CURRENT\t%s DESIRED\t%s CURRENT\t%s DESIRED\tDIFFERS\t%s EXPLANATION\t%s EXPLANATION\n", a, a, b, b, a, b)
	start := runs[0][0].row.time
	for i := range runs[0] {
		x, y := runs[0][i], runs[1][i]
		differs := ""
		if x.desired != y.desired {
			differs = "*"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", x.row.time.Sub(start), milliString(x.row.demand),
			x.current, x.desired, y.current, y.desired, differs,
			x.result.GetExplanation().GetMessage(), y.result.GetExplanation().GetMessage())
	}
	return tw.Flush()
}
