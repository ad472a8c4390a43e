package hpactl

import (
	"cmp"
	"fmt"
	"image/color"
	"io"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"k8s.io/apimachinery/pkg/api/resource"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// historyPanelHeight is the height of each panel of a history chart: one for the replicas,
// one per metric.
const historyPanelHeight = 3 * vg.Inch

// maxHistoryMetricPanels bounds the metric panels of a history chart.
const maxHistoryMetricPanels = 5

// metricColors tell the metrics of a chart apart.
var metricColors = []color.Color{
	colorTarget, colorCapacity, colorReady, colorDemand,
	color.RGBA{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff},
}

// historyPlotHeight is the canvas height of a history chart of entries.
func historyPlotHeight(entries []*pb.DecisionLogEntry) vg.Length {
	return historyPanelHeight * vg.Length(1+historyMetricCount(entries))
}

func historyMetricCount(entries []*pb.DecisionLogEntry) int {
	n := 0
	for _, e := range entries {
		n = max(n, len(e.GetMetrics()))
	}
	return min(n, maxHistoryMetricPanels)
}

// writeHistoryPlot writes the chart of a decision log (oldest first) to path.
func writeHistoryPlot(path, title string, entries []*pb.DecisionLogEntry) error {
	return writePlotFile(path, func(w io.Writer, format string) error { return renderHistoryPlot(w, format, title, entries) })
}

// renderHistoryPlot draws a decision log over real time (UTC): a panel of the current and
// desired replicas with each metric's proposal, a marker at each scale and at each held
// decision (the count stayed while the metrics proposed another) named with what held it (the
// condition reason: a stabilization window, a policy, the min/max bounds); then one panel per
// metric of its value as currentMetrics showed it (percent for a Utilization target). A run
// of identical decisions is drawn from its first to its last time.
func renderHistoryPlot(w io.Writer, format, title string, entries []*pb.DecisionLogEntry) error {
	nm := historyMetricCount(entries)
	var current, desired plotter.XYs
	proposals := make([]plotter.XYs, nm)
	values := make([]plotter.XYs, nm)
	names := make([]string, nm)
	var scaled, held plotter.XYs
	var heldLabels plotter.XYLabels
	lastHeld := ""
	for _, e := range entries {
		xs := []float64{unixSeconds(e.GetTime().AsTime())}
		if e.GetCount() > 1 && e.GetUntil() != nil {
			xs = append(xs, unixSeconds(e.GetUntil().AsTime()))
		}
		for _, x := range xs {
			current = append(current, plotter.XY{X: x, Y: float64(e.GetCurrentReplicas())})
			desired = append(desired, plotter.XY{X: x, Y: float64(e.GetDesiredReplicas())})
			for _, m := range e.GetMetrics() {
				i := int(m.GetIndex())
				if i >= nm || m.GetError() != "" {
					continue
				}
				names[i] = m.GetName()
				proposals[i] = append(proposals[i], plotter.XY{X: x, Y: float64(m.GetProposal())})
				if q, err := resource.ParseQuantity(m.GetValue()); err == nil {
					values[i] = append(values[i], plotter.XY{X: x, Y: q.AsApproximateFloat64()})
				}
			}
		}
		at := plotter.XY{X: xs[0], Y: float64(e.GetDesiredReplicas())}
		if e.GetDesiredReplicas() != e.GetCurrentReplicas() {
			scaled = append(scaled, at)
		}
		by := ""
		if isHeld(e) {
			by = cmp.Or(heldReason(e), "-")
			held = append(held, at)
			if by != lastHeld { // a stretch held by the same thing is named once, at its start
				heldLabels.XYs = append(heldLabels.XYs, at)
				heldLabels.Labels = append(heldLabels.Labels, strings.TrimSuffix("held: "+by, ": -"))
			}
		}
		lastHeld = by
	}
	first, last := current[0].X, current[len(current)-1].X
	if last <= first {
		last = first + 1
	}

	reps := plot.New()
	reps.Title.Text = title + ": decisions (UTC)"
	reps.Y.Label.Text = "pods"
	reps.Y.Min = 0
	for _, l := range []lineStyle{
		{name: "current", xys: current, color: colorCurrent, width: 5, step: true},
		{name: "desired", xys: desired, color: colorDesired, width: 1.5, dashes: []vg.Length{vg.Points(7), vg.Points(3)}, step: true},
	} {
		if err := l.add(reps); err != nil {
			return err
		}
	}
	for i, p := range proposals {
		if len(p) == 0 {
			continue
		}
		l := lineStyle{name: "proposal: " + names[i], xys: p, color: metricColors[i%len(metricColors)], width: 1,
			dashes: []vg.Length{vg.Points(1), vg.Points(2)}, step: true}
		if err := l.add(reps); err != nil {
			return err
		}
	}
	if err := addScaleMarkers(reps, scaled, "held (the metrics proposed another count)", held, heldLabels); err != nil {
		return err
	}
	panels := []*plot.Plot{reps}
	for i := range nm {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("metric %d: %s", i, names[i])
		p.Y.Label.Text = "value (% for a Utilization target)"
		p.Y.Min = 0
		if len(values[i]) > 0 {
			if err := addLine(p, "value", values[i], metricColors[i%len(metricColors)], false, true); err != nil {
				return err
			}
		}
		panels = append(panels, p)
	}
	format24 := "15:04"
	if time.Duration((last-first)*float64(time.Second)) > 24*time.Hour {
		format24 = "01-02 15:04"
	}
	for _, p := range panels {
		p.Add(plotter.NewGrid())
		p.X.Tick.Marker = clockTicker{format: format24}
		p.X.Min, p.X.Max = first, last
		p.Legend.Top = true
		p.Legend.Left = true
	}
	panels[len(panels)-1].X.Label.Text = "time (UTC)"
	return writePanels(w, format, historyPlotHeight(entries), panels...)
}

// isHeld reports whether an entry kept the count while its metrics proposed another.
func isHeld(e *pb.DecisionLogEntry) bool {
	return e.GetDesiredReplicas() == e.GetCurrentReplicas() && e.GetProposal() != e.GetCurrentReplicas()
}

// clockTicker labels an axis of Unix seconds with UTC clock times at timeTicker's steps
// (whole minutes, hours...).
type clockTicker struct{ format string }

// Ticks implements plot.Ticker.
func (c clockTicker) Ticks(lo, hi float64) []plot.Tick {
	ticks := timeTicker{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = time.Unix(0, int64(ticks[i].Value*1e9)).UTC().Format(c.format)
		}
	}
	return ticks
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
