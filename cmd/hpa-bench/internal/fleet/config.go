package fleet

import (
	"errors"
	"fmt"
	"time"
)

// Config is the benchmark's settings (cmd/hpa-bench/fleet sets them from its flags, named after
// them in lower case with dashes: HPAs is -hpas, PerNamespace -per-namespace).
type Config struct {
	Controller   string
	HPAs         int
	PerNamespace int
	Period       time.Duration
	Periods      int
	Jitter       float64
	Slack        time.Duration
	ServiceBin   string
	ScalerBin    string
	ScalerArgs   string
	Dir          string
	SetupTimeout time.Duration
	JSONOut      string
}

// DefaultConfig is the settings of a run with no flags.
func DefaultConfig() Config {
	return Config{
		Controller: ControllerScaler, HPAs: 200, PerNamespace: 10, Period: 15 * time.Second, Periods: 5, Slack: time.Second,
		ServiceBin: "bin/hpa-recommender", ScalerBin: "bin/hpa-scaler", SetupTimeout: 15 * time.Minute,
	}
}

// The controllers Config.Controller names.
const (
	ControllerScaler = "hpa-scaler"
	ControllerInTree = "in-tree"
)

// Validate reports the first setting out of its range, by its flag's name.
func (c Config) Validate() error {
	switch {
	case c.Controller != ControllerScaler && c.Controller != ControllerInTree:
		return fmt.Errorf("-controller %q: want %s or %s", c.Controller, ControllerScaler, ControllerInTree)
	case c.HPAs < 1:
		return fmt.Errorf("-hpas %d: want 1 or more", c.HPAs)
	case c.PerNamespace < 1:
		return fmt.Errorf("-per-namespace %d: want 1 or more", c.PerNamespace)
	case c.Period < time.Second:
		return fmt.Errorf("-period %s: want 1s or more", c.Period)
	case c.Slack < 0:
		return fmt.Errorf("-slack %s: want 0 or more", c.Slack)
	case c.Periods < 1:
		return fmt.Errorf("-periods %d: want 1 or more", c.Periods)
	case c.Jitter < 0 || c.Jitter >= 1:
		return fmt.Errorf("-sync-jitter %g: want [0, 1)", c.Jitter)
	case c.Controller == ControllerScaler && (c.ServiceBin == "" || c.ScalerBin == ""):
		return errors.New("-service-bin and -scaler-bin are required")
	}
	return nil
}
