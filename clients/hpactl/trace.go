package hpactl

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// traceStart is the clock of time 0 when a trace gives times in seconds: any fixed instant
// does, the simulation only reads differences.
var traceStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// traceRow is one row of a load trace.
type traceRow struct {
	time time.Time
	// demand is the total of the first metric across all pods, in milli-units.
	demand int64
	// metrics are the demands of every metric of the spec, for a trace that has more than
	// the first (a replayed decision log); nil: only demand, every other metric "not in trace".
	metrics []metricDemand
}

// metricDemand is one metric's demand at a row.
type metricDemand struct {
	// milli is the total across pods (a per-pod metric) or the value (Object, External), in
	// milli-units.
	milli int64
	// err is the observation error of a metric that had no value at this row.
	err string
}

// loadTrace reads a CSV with the header "time,demand". time is the offset from the start, in
// seconds (a decimal number) or as a Go duration ("90s", "1m30s"), or an RFC 3339 time (every
// row then gives one); demand is a Kubernetes quantity ("12500m", "800"). Times must increase
// strictly.
func loadTrace(path string) ([]traceRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	defer f.Close()
	rows, err := parseTrace(f)
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", path, err)
	}
	return rows, nil
}

func parseTrace(r io.Reader) ([]traceRow, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = 2
	cr.TrimLeadingSpace = true
	cr.Comment = '#'
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("empty: want a header time,demand and at least one row")
	}
	if err != nil {
		return nil, err
	}
	if !strings.EqualFold(strings.TrimSpace(header[0]), "time") || !strings.EqualFold(strings.TrimSpace(header[1]), "demand") {
		return nil, fmt.Errorf("header is %q, want time,demand", strings.Join(header, ","))
	}
	var rows []traceRow
	var firstAbsolute bool
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		line, _ := cr.FieldPos(0)
		t, absolute, err := parseTraceTime(strings.TrimSpace(rec[0]))
		if err != nil {
			return nil, fmt.Errorf("line %d: time %q: %w", line, rec[0], err)
		}
		if len(rows) == 0 {
			firstAbsolute = absolute
		} else if absolute != firstAbsolute {
			return nil, fmt.Errorf("line %d: time %q mixes RFC 3339 times and offsets from the start; use one kind in a trace", line, rec[0])
		}
		q, err := resource.ParseQuantity(strings.TrimSpace(rec[1]))
		if err != nil {
			return nil, fmt.Errorf("line %d: demand %q: %w", line, rec[1], err)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("line %d: demand %q is negative", line, rec[1])
		}
		if n := len(rows); n > 0 && !t.After(rows[n-1].time) {
			return nil, fmt.Errorf("line %d: time %q does not come after the previous row's", line, rec[0])
		}
		rows = append(rows, traceRow{time: t, demand: q.MilliValue()})
	}
	if len(rows) == 0 {
		return nil, errors.New("no rows after the header")
	}
	return rows, nil
}

// parseTraceTime reads a row's time: an offset from the start (seconds, or a duration such as
// "90s" or "1m") from traceStart, or an RFC 3339 time (absolute is then true).
func parseTraceTime(s string) (t time.Time, absolute bool, err error) {
	const maxOffset = 1e9 * time.Second
	var off time.Duration
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		if !(secs >= 0 && secs <= maxOffset.Seconds()) {
			return time.Time{}, false, errors.New("seconds must be within [0, 1e9]")
		}
		off = time.Duration(secs * float64(time.Second))
	} else if d, err := time.ParseDuration(s); err == nil {
		if d < 0 || d > maxOffset {
			return time.Time{}, false, errors.New("a duration from the start must be within [0s, 1e9s]")
		}
		off = d
	} else {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}, false, errors.New(`neither seconds from the start ("90"), a duration from the start ("1m30s") nor an RFC 3339 time`)
		}
		return t, true, nil
	}
	return traceStart.Add(off), false, nil
}

// maxDecisions bounds the decisions one simulation makes (each is one Simulate call).
const maxDecisions = 20000

// syncTicks are the controller's decisions over a trace: one every period from the first row's
// time up to the last row's, each with the demand of the latest row at or before it (a trace's
// demand holds until its next row). A row between two ticks is seen at the next tick, as a
// controller that reconciles every period sees it.
func syncTicks(rows []traceRow, period time.Duration) ([]traceRow, error) {
	if period <= 0 {
		return nil, fmt.Errorf("--sync-period must be positive, not %s", period)
	}
	start, end := rows[0].time, rows[len(rows)-1].time
	if n := end.Sub(start) / period; n >= maxDecisions {
		return nil, fmt.Errorf("the trace spans %s: at --sync-period %s that is %d decisions, more than %d; raise --sync-period or shorten the trace",
			end.Sub(start), period, int64(n)+1, maxDecisions)
	}
	var ticks []traceRow
	i := 0
	for t := start; !t.After(end); t = t.Add(period) {
		for i+1 < len(rows) && !rows[i+1].time.After(t) {
			i++
		}
		ticks = append(ticks, traceRow{time: t, demand: rows[i].demand, metrics: rows[i].metrics})
	}
	return ticks, nil
}
