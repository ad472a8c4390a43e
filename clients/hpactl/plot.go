package hpactl

import (
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"strings"

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
	format, err := plotFormat(path)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write plot: %w", err)
	}
	if err := renderPlot(f, format, m, steps); err != nil {
		f.Close()
		return fmt.Errorf("write plot %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write plot %s: %w", path, err)
	}
	return nil
}

// renderPlot draws three aligned panels over time: demand and capacity at target; current,
// desired and ready replicas; per-pod utilization (or per-pod value) against the target.
func renderPlot(w io.Writer, format string, m *manifest, steps []simStep) error {
	first := firstMetric(m.spec)
	units := metricUnits(first)
	start := steps[0].row.time
	minutes := func(s simStep) float64 { return s.row.time.Sub(start).Minutes() }
	n := len(steps)
	demand, capacity := make(plotter.XYs, n), make(plotter.XYs, 0, n)
	current, desired, ready := make(plotter.XYs, n), make(plotter.XYs, n), make(plotter.XYs, n)
	perPod := make(plotter.XYs, n)
	for i, s := range steps {
		x := minutes(s)
		demand[i] = plotter.XY{X: x, Y: float64(s.row.demand) / 1000}
		if s.capacityMilli != nil {
			capacity = append(capacity, plotter.XY{X: x, Y: *s.capacityMilli / 1000})
		}
		current[i] = plotter.XY{X: x, Y: float64(s.current)}
		desired[i] = plotter.XY{X: x, Y: float64(s.desired)}
		ready[i] = plotter.XY{X: x, Y: float64(s.ready)}
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
	reps.Title.Text = "replicas"
	reps.Y.Label.Text = "pods"
	reps.Y.Min = 0
	for _, l := range []struct {
		name   string
		xys    plotter.XYs
		c      color.Color
		dashed bool
	}{{"current", current, colorCurrent, false}, {"desired", desired, colorDesired, true}, {"ready", ready, colorReady, false}} {
		if err := addLine(reps, l.name, l.xys, l.c, l.dashed, true); err != nil {
			return err
		}
	}

	util := plot.New()
	util.X.Label.Text = "minutes"
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
		p.Legend.Top = true
		p.Legend.Left = true
	}

	plots := [][]*plot.Plot{{load}, {reps}, {util}}
	tiles := draw.Tiles{Rows: 3, Cols: 1, PadX: vg.Millimeter, PadY: 4 * vg.Millimeter,
		PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter}
	var canvas vg.CanvasWriterTo
	switch format {
	case "png":
		img := vgimg.NewWith(vgimg.UseWH(plotWidth, plotHeight), vgimg.UseDPI(96))
		fillWhite(img)
		canvas = vgimg.PngCanvas{Canvas: img}
	case "svg":
		canvas = vgsvg.New(plotWidth, plotHeight)
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
func fillWhite(c *vgimg.Canvas) {
	c.SetColor(color.White)
	r := vg.Rectangle{Max: vg.Point{X: plotWidth, Y: plotHeight}}
	c.Fill(r.Path())
}

func addLine(p *plot.Plot, name string, xys plotter.XYs, c color.Color, dashed, step bool) error {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	l.Color = c
	l.Width = vg.Points(1.5)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	}
	if step {
		l.StepStyle = plotter.PostStep
	}
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
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
