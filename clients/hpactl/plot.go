package hpactl

import (
	"cmp"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
	"k8s.io/apimachinery/pkg/api/resource"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// Chart size.
const (
	plotWidth  = 10 * vg.Inch
	plotHeight = 9 * vg.Inch
)

var (
	colorDemand   = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	colorCapacity = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	colorCurrent  = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
	colorDesired  = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
	colorReady    = color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}
	colorTarget   = color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}
	colorHeld     = color.RGBA{R: 0x8c, G: 0x1a, B: 0x4b, A: 0xff}
)

// plotFormat is the chart format of path's extension: "png" or "svg".
func plotFormat(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".png":
		return "png", nil
	case ".svg":
		return "svg", nil
	default:
		return "", fmt.Errorf("--plot %s: the extension must be .png or .svg", path)
	}
}

// writePlot writes the chart of a simulation to path.
func writePlot(path string, m *manifest, steps []simStep) error {
	return writePlotFile(path, func(w io.Writer, format string) error { return renderPlot(w, format, m, steps) })
}

// writePlotFile creates path and writes the chart render draws in path's format.
func writePlotFile(path string, render func(w io.Writer, format string) error) error {
	format, err := plotFormat(path)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write plot: %w", err)
	}
	if err := render(f, format); err != nil {
		f.Close()
		return fmt.Errorf("write plot %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write plot %s: %w", path, err)
	}
	return nil
}

// renderPlot draws three aligned panels over time: demand and capacity at target; current,
// desired and ready replicas, the metrics' proposal, and a marker with what held each decision
// below its proposal (a stabilization window, a scaling policy or limit); per-pod utilization
// (or per-pod value) against the target. The x axis is the time since the first decision.
func renderPlot(w io.Writer, format string, m *manifest, steps []simStep) error {
	first := firstMetric(m.spec)
	units := metricUnits(first)
	start := steps[0].row.time
	seconds := func(s simStep) float64 { return s.row.time.Sub(start).Seconds() }
	n := len(steps)
	demand, capacity := make(plotter.XYs, n), make(plotter.XYs, 0, n)
	current, desired, ready, proposal := make(plotter.XYs, n), make(plotter.XYs, n), make(plotter.XYs, n), make(plotter.XYs, n)
	perPod := make(plotter.XYs, n)
	var scaled, held plotter.XYs
	var heldLabels plotter.XYLabels
	lastHeld := ""
	for i, s := range steps {
		x := seconds(s)
		demand[i] = plotter.XY{X: x, Y: float64(s.row.demand) / 1000}
		if s.capacityMilli != nil {
			capacity = append(capacity, plotter.XY{X: x, Y: *s.capacityMilli / 1000})
		}
		current[i] = plotter.XY{X: x, Y: float64(s.current)}
		desired[i] = plotter.XY{X: x, Y: float64(s.desired)}
		ready[i] = plotter.XY{X: x, Y: float64(s.ready)}
		ex := s.result.GetExplanation()
		proposal[i] = plotter.XY{X: x, Y: float64(ex.GetProposal())}
		if s.desired != s.current {
			scaled = append(scaled, desired[i])
		}
		by := heldBy(ex)
		if by != "" {
			held = append(held, desired[i])
			if by != lastHeld { // a run held by the same thing is named once, at its start
				heldLabels.XYs = append(heldLabels.XYs, desired[i])
				heldLabels.Labels = append(heldLabels.Labels, "held: "+by)
			}
		}
		lastHeld = by
		y := float64(s.perPodMilli) / 1000
		if s.utilization != nil {
			y = *s.utilization
		}
		perPod[i] = plotter.XY{X: x, Y: y}
	}

	title := m.namespace + "/" + m.name
	load := plot.New()
	load.Title.Text = title + ": demand and capacity at target"
	load.Y.Label.Text = units
	load.Y.Min = 0
	if err := addLine(load, "demand", demand, colorDemand, false, false); err != nil {
		return err
	}
	if len(capacity) > 0 {
		if err := addLine(load, "capacity at target", capacity, colorCapacity, true, true); err != nil {
			return err
		}
	}

	reps := plot.New()
	reps.Title.Text = "replicas (a decision every sync period)"
	reps.Y.Label.Text = "pods"
	reps.Y.Min = 0
	// Equal lines must stay visible: the widest is drawn first, each later one is thinner
	// with its own dash pattern, and the desired count carries markers where it scales.
	for _, l := range []lineStyle{
		{name: "current", xys: current, color: colorCurrent, width: 5, step: true},
		{name: "ready", xys: ready, color: colorReady, width: 2.5, dashes: []vg.Length{vg.Points(2), vg.Points(3)}, step: true},
		{name: "desired", xys: desired, color: colorDesired, width: 1.5, dashes: []vg.Length{vg.Points(7), vg.Points(3)}, step: true},
		{name: "metrics' proposal", xys: proposal, color: colorTarget, width: 1, dashes: []vg.Length{vg.Points(1), vg.Points(2)}, step: true},
	} {
		if err := l.add(reps); err != nil {
			return err
		}
	}
	if err := addScaleMarkers(reps, scaled, "held below the proposal", held, heldLabels); err != nil {
		return err
	}

	util := plot.New()
	util.X.Label.Text = "time since the first decision"
	util.Y.Min = 0
	target := metricTarget(first)
	perPodName := "per-pod value"
	var targetY *float64
	switch {
	case steps[0].utilization != nil:
		util.Title.Text = "per-pod utilization"
		util.Y.Label.Text = "% of request"
		perPodName = "per-pod utilization"
		if target.AverageUtilization != nil {
			v := float64(*target.AverageUtilization)
			targetY = &v
		}
	default:
		util.Title.Text = "per-pod value"
		util.Y.Label.Text = units
		if target.AverageValue != nil {
			if q, err := resource.ParseQuantity(*target.AverageValue); err == nil {
				v := float64(q.MilliValue()) / 1000
				targetY = &v
			}
		}
	}
	if err := addLine(util, perPodName, perPod, colorDemand, false, false); err != nil {
		return err
	}
	if targetY != nil {
		t := plotter.XYs{{X: perPod[0].X, Y: *targetY}, {X: perPod[n-1].X, Y: *targetY}}
		if err := addLine(util, "target", t, colorTarget, true, false); err != nil {
			return err
		}
	}
	for _, p := range []*plot.Plot{load, reps, util} {
		p.Add(plotter.NewGrid())
		p.X.Tick.Marker = timeTicker{}
		p.X.Min, p.X.Max = 0, math.Max(seconds(steps[n-1]), 1)
		p.Legend.Top = true
		p.Legend.Left = true
	}

	return writePanels(w, format, plotHeight, load, reps, util)
}

// writePanels draws panels stacked in one column on a plotWidth x height canvas of format
// ("png": 96 dpi on white; "svg") and writes it to w.
func writePanels(w io.Writer, format string, height vg.Length, panels ...*plot.Plot) error {
	plots := make([][]*plot.Plot, len(panels))
	for i, p := range panels {
		plots[i] = []*plot.Plot{p}
	}
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadX: vg.Millimeter, PadY: 4 * vg.Millimeter,
		PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter}
	var canvas vg.CanvasWriterTo
	switch format {
	case "png":
		img := vgimg.NewWith(vgimg.UseWH(plotWidth, height), vgimg.UseDPI(96))
		fillWhite(img, height)
		canvas = vgimg.PngCanvas{Canvas: img}
	case "svg":
		canvas = vgsvg.New(plotWidth, height)
	default:
		return fmt.Errorf("unknown plot format %q", format)
	}
	dc := draw.New(canvas)
	for j, row := range plot.Align(plots, tiles, dc) {
		plots[j][0].Draw(row[0])
	}
	_, err := canvas.WriteTo(w)
	return err
}

// fillWhite paints the PNG background: vgimg starts transparent.
func fillWhite(c *vgimg.Canvas, height vg.Length) {
	c.SetColor(color.White)
	r := vg.Rectangle{Max: vg.Point{X: plotWidth, Y: height}}
	c.Fill(r.Path())
}

func addLine(p *plot.Plot, name string, xys plotter.XYs, c color.Color, dashed, step bool) error {
	l := lineStyle{name: name, xys: xys, color: c, width: 1.5, step: step}
	if dashed {
		l.dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	}
	return l.add(p)
}

// lineStyle is one line of a panel and how it is drawn.
type lineStyle struct {
	name   string
	xys    plotter.XYs
	color  color.Color
	width  float64 // points
	dashes []vg.Length
	step   bool // hold each value until the next point, as replica counts are held
}

func (ls lineStyle) add(p *plot.Plot) error {
	l, err := plotter.NewLine(ls.xys)
	if err != nil {
		return fmt.Errorf("%s: %w", ls.name, err)
	}
	l.Color = ls.color
	l.Width = vg.Points(ls.width)
	l.Dashes = ls.dashes
	if ls.step {
		l.StepStyle = plotter.PostStep
	}
	p.Add(l)
	p.Legend.Add(ls.name, l)
	return nil
}

// addMarkers draws a glyph at each point (none: nothing).
func addMarkers(p *plot.Plot, name string, xys plotter.XYs, shape draw.GlyphDrawer, c color.Color) error {
	if len(xys) == 0 {
		return nil
	}
	sc, err := plotter.NewScatter(xys)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(3.5), Shape: shape}
	p.Add(sc)
	p.Legend.Add(name, sc)
	return nil
}

// addScaleMarkers marks the scales and the held decisions of a replicas panel, and names what
// held each at the points heldLabels gives.
func addScaleMarkers(p *plot.Plot, scaled plotter.XYs, heldName string, held plotter.XYs, heldLabels plotter.XYLabels) error {
	if err := addMarkers(p, "scale", scaled, draw.CircleGlyph{}, colorDesired); err != nil {
		return err
	}
	if len(held) == 0 {
		return nil
	}
	if err := addMarkers(p, heldName, held, draw.TriangleGlyph{}, colorHeld); err != nil {
		return err
	}
	labels, err := plotter.NewLabels(heldLabels)
	if err != nil {
		return fmt.Errorf("held labels: %w", err)
	}
	for i := range labels.TextStyle {
		labels.TextStyle[i].Color = colorHeld
		labels.TextStyle[i].Font.Size = vg.Points(8)
		labels.TextStyle[i].Rotation = math.Pi / 6
	}
	labels.Offset = vg.Point{X: vg.Points(4), Y: vg.Points(6)}
	p.Add(labels)
	return nil
}

// heldBy says what kept a decision from its metrics' proposal, from its explanation: the
// stabilization window that decided it, and the policy or limit that bound it; empty when
// the decision is the proposal.
func heldBy(ex *pb.Explanation) string {
	if ex.GetFinal() == ex.GetProposal() {
		return ""
	}
	var parts []string
	if ex.GetStabilized() != ex.GetProposal() {
		s := "stabilization window"
		if w := ex.GetStabilizationWindow(); w != nil {
			s += " " + offsetString(w.AsDuration())
		}
		parts = append(parts, s)
	}
	if ex.GetFinal() != ex.GetStabilized() {
		parts = append(parts, cmp.Or(ex.GetLimitingPolicy(), ex.GetLimitReason(), "limited"))
	}
	return strings.Join(parts, ", ")
}

// timeTicker labels an axis of seconds since the start as durations ("30s", "1m30s",
// "1h"), at a step that leaves at most 10 labels: 1, 2, 5, 10, 15 or 30 seconds or minutes,
// or 1, 2, 3, 6, 12 or 24 hours (then whole days), with an unlabelled tick halfway.
type timeTicker struct{}

// tickSteps are the candidate label steps, smallest first.
var tickSteps = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}

// Ticks implements plot.Ticker.
func (timeTicker) Ticks(lo, hi float64) []plot.Tick {
	span := time.Duration((hi - lo) * float64(time.Second))
	step := tickSteps[len(tickSteps)-1]
	for _, s := range tickSteps {
		if span/s <= 10 {
			step = s
			break
		}
	}
	for span/step > 10 { // longer than 10 days: whole days
		step += 24 * time.Hour
	}
	minor := step / 2
	var ticks []plot.Tick
	first := time.Duration(math.Ceil(lo/minor.Seconds())) * minor
	for t := first; t.Seconds() <= hi+1e-9; t += minor {
		tick := plot.Tick{Value: t.Seconds()}
		if t%step == 0 {
			tick.Label = offsetString(t)
		}
		ticks = append(ticks, tick)
	}
	return ticks
}

// offsetString prints a duration without zero parts: "0s", "45s", "2m", "1m30s", "1h5m".
func offsetString(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	var b strings.Builder
	if d < 0 {
		b.WriteByte('-')
		d = -d
	}
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if n := d / u.unit; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			d -= n * u.unit
		}
	}
	if d >= time.Millisecond {
		fmt.Fprintf(&b, "%dms", d/time.Millisecond)
	}
	return b.String()
}

// metricUnits names the units of a metric's values for axis labels.
func metricUnits(m *pb.MetricSpec) string {
	if name, _, ok := resourceOf(m); ok {
		switch name {
		case "cpu":
			return "cpu (cores)"
		case "memory":
			return "memory (bytes)"
		}
		return name
	}
	for _, id := range []*pb.MetricIdentifier{m.GetPods().GetMetric(), m.GetObject().GetMetric(), m.GetExternal().GetMetric()} {
		if id.GetName() != "" {
			return id.GetName()
		}
	}
	return "value"
}
