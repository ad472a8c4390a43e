package envflag

import (
	"errors"
	"flag"
	"fmt"
	"strings"
)

// Name is the environment variable of a flag: Name("HPA_RECOMMENDER_", "bolt-path") is
// HPA_RECOMMENDER_BOLT_PATH.
func Name(prefix, flagName string) string {
	return prefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Apply sets every flag of fs that was not given on the command line from its environment
// variable (Name(prefix, flag)), when lookup finds one. Call it after fs.Parse. Every value
// that does not parse is reported, naming its variable.
func Apply(fs *flag.FlagSet, prefix string, lookup func(string) (string, bool)) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] {
			return
		}
		name := Name(prefix, f.Name)
		if v, ok := lookup(name); ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
		}
	})
	return errors.Join(errs...)
}

// Parse parses args into fs, then sets what they leave unset from the environment (Apply). Its
// usage text gives synopsis, the environment rule and every flag's default.
func Parse(fs *flag.FlagSet, prefix, synopsis string, args []string, lookup func(string) (string, bool)) error {
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s\n\nEvery flag can also be set by the environment variable %s<FLAG> (upper snake case);\na flag on the command line wins over the environment.\n\n", synopsis, prefix)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	return Apply(fs, prefix, lookup)
}
