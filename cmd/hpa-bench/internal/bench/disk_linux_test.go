package bench

import (
	"testing"
	"time"
)

// TestSpinDuty (Linux: ProcessCPU is measured there): a spinner with a duty of a quarter sleeps the rest of each period, so it takes
// far less CPU than one always busy over the same time (a lenient bound: the machine may be
// shared), and its deliberate sleeps are not reported as pauses.
func TestSpinDuty(t *testing.T) {
	cpuOf := func(duty float64) (time.Duration, int) {
		cpu0 := ProcessCPU()
		stop := spin(1, duty, 2*time.Millisecond)
		time.Sleep(300 * time.Millisecond)
		gaps := stop()
		return ProcessCPU() - cpu0, len(gaps[0])
	}
	full, _ := cpuOf(1)
	quarter, pauses := cpuOf(0.25)
	if quarter >= full*7/10 {
		t.Errorf("CPU busy a quarter of the time: %s, always: %s; want far less", quarter, full)
	}
	// 150 sleeps of 1.5 ms: at most a few overslept by gapMin or more on a quiet machine.
	if pauses > 75 {
		t.Errorf("%d pauses reported for 150 deliberate sleeps", pauses)
	}
}
