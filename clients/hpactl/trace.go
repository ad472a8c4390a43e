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
}

// loadTrace reads a CSV with the header "time,demand". time is seconds from the start (a
// decimal number) or an RFC 3339 time; demand is a Kubernetes quantity ("12500m", "800").
// Times must increase strictly.
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
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		line, _ := cr.FieldPos(0)
		t, err := parseTraceTime(strings.TrimSpace(rec[0]))
		if err != nil {
			return nil, fmt.Errorf("line %d: time %q: %w", line, rec[0], err)
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

func parseTraceTime(s string) (time.Time, error) {
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		if secs < 0 || secs > 1e9 {
			return time.Time{}, errors.New("seconds must be within [0, 1e9]")
		}
		return traceStart.Add(time.Duration(secs * float64(time.Second))), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, errors.New("neither seconds from the start nor an RFC 3339 time")
	}
	return t, nil
}
