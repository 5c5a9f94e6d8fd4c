package cmd

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// defaultConfig is read when present and no --config is given.
const defaultConfig = "llmbatch.toml"

// notConfigurable are flags that make no sense in a file or the environment.
var notConfigurable = map[string]bool{"config": true, "profile": true, "help": true}

// applyConfig fills in every flag the user did not set on the command line:
// from LLMBATCH_<NAME> in the environment, else from the config file's
// chosen profile, else from its top level; what is left is for the
// provider's preset (applyPreset) and the defaults. mergeRun calls it first.
// Config keys are the flag names, with - or _ ("max_tokens" or
// "max-tokens").
func applyConfig(c *cobra.Command, getenv func(string) string, path, profile string) error {
	file, err := loadConfig(c, path, profile)
	if err != nil {
		return err
	}
	var errs []error
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Changed || notConfigurable[f.Name] {
			return
		}
		env := "LLMBATCH_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v := getenv(env); v != "" {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, usageErr("%s=%q: %v", env, v, err))
			}
			f.Changed = true
			return
		}
		if v, ok := file.values[f.Name]; ok {
			if err := setFromFile(f, v); err != nil {
				errs = append(errs, usageErr("%s:%d: %s: %v", file.path, file.line(f.Name), f.Name, err))
			}
			f.Changed = true
		}
	})
	return errors.Join(errs...)
}

func setFromFile(f *pflag.Flag, v any) error {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case int64:
		s = strconv.FormatInt(x, 10)
	case float64:
		s = strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		s = strconv.FormatBool(x)
	case []any:
		parts := make([]string, len(x))
		for i, p := range x {
			parts[i] = fmt.Sprint(p)
		}
		s = strings.Join(parts, ",")
	default:
		return fmt.Errorf("unsupported value %v", v)
	}
	if err := f.Value.Set(s); err != nil {
		return fmt.Errorf("invalid value %q (%s expected)", s, f.Value.Type())
	}
	return nil
}

// configFile is a parsed config file: the values that apply, by flag name.
type configFile struct {
	path   string
	text   string
	values map[string]any
}

// line finds the line a key was set on, for error messages.
func (cf *configFile) line(name string) int {
	re := regexp.MustCompile(`(?m)^[ \t]*(` + regexp.QuoteMeta(name) + `|` + regexp.QuoteMeta(strings.ReplaceAll(name, "-", "_")) + `)[ \t]*=`)
	loc := re.FindStringIndex(cf.text)
	if loc == nil {
		return 0
	}
	return strings.Count(cf.text[:loc[0]], "\n") + 1
}

func loadConfig(c *cobra.Command, path, profile string) (*configFile, error) {
	cf := &configFile{path: path, values: map[string]any{}}
	if path == "" {
		if _, err := os.Stat(defaultConfig); err != nil {
			if profile != "" {
				return nil, usageErr("--profile %s: no config file (give one with --config)", profile)
			}
			return cf, nil
		}
		cf.path = defaultConfig
	}
	b, err := os.ReadFile(cf.path)
	if err != nil {
		return nil, usageErr("config: %v", unwrapPath(err))
	}
	cf.text = string(b)
	var doc map[string]any
	if err := toml.Unmarshal(b, &doc); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, usageErr("%s:%d:%d: %v", cf.path, row, col, de.Error())
		}
		return nil, usageErr("%s: %v", cf.path, err)
	}
	profiles, _ := doc["profiles"].(map[string]any)
	delete(doc, "profiles")
	if err := cf.take(c, doc, ""); err != nil {
		return nil, err
	}
	if profile == "" {
		return cf, nil
	}
	p, ok := profiles[profile].(map[string]any)
	if !ok {
		return nil, usageErr("%s: no [profiles.%s] (profiles: %s)", cf.path, profile, strings.Join(slices.Sorted(maps.Keys(profiles)), ", "))
	}
	return cf, cf.take(c, p, "profiles."+profile+".")
}

// take checks that every key of table names a flag and records its value.
func (cf *configFile) take(c *cobra.Command, table map[string]any, prefix string) error {
	for _, k := range slices.Sorted(maps.Keys(table)) {
		name := strings.ReplaceAll(k, "_", "-")
		switch {
		case name == "api-key" || name == "key":
			return usageErr("%s:%d: %s%s: never put an API key in a file; set an environment variable and name it with api_key_env",
				cf.path, cf.line(name), prefix, k)
		case c.Flags().Lookup(name) == nil || notConfigurable[name]:
			return usageErr("%s:%d: unknown key %s%s", cf.path, cf.line(name), prefix, k)
		}
		cf.values[name] = table[k]
	}
	return nil
}
