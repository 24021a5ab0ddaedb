package config

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

var (
	// ErrInvalidValue marks a value that does not parse as its config's
	// type or that its validator refuses. Callers answer INVALID_CONFIG.
	ErrInvalidValue = errors.New("config: invalid value")
	// ErrUnknownConfig marks a topic config name that Kafka does not
	// define. Unknown broker keys are warnings, not errors.
	ErrUnknownConfig = errors.New("config: unknown config")
)

// canonical parses raw as type t and returns the string Kafka would print
// for the parsed value (ConfigDef.parseType then convertToString): values
// are trimmed, booleans lower-cased, numbers reformatted, list elements
// trimmed.
func canonical(t Type, raw string) (string, error) {
	if t == Password {
		return raw, nil
	}
	s := strings.TrimSpace(raw)
	switch t {
	case Boolean:
		switch {
		case strings.EqualFold(s, "true"):
			return "true", nil
		case strings.EqualFold(s, "false"):
			return "false", nil
		}
		return "", errors.New("expected value to be either true or false")
	case Int, Short, Long:
		bits := map[Type]int{Int: 32, Short: 16, Long: 64}[t]
		n, err := strconv.ParseInt(s, 10, bits)
		if err != nil {
			return "", fmt.Errorf("not a number of type %s", t)
		}
		return strconv.FormatInt(n, 10), nil
	case Double:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) && !strings.EqualFold(s, "nan") {
			return "", fmt.Errorf("not a number of type %s", t)
		}
		return javaDouble(f), nil
	case List:
		if s == "" {
			return "", nil
		}
		parts := strings.Split(s, ",")
		for i, p := range parts {
			parts[i] = strings.TrimSpace(p)
		}
		return strings.Join(parts, ","), nil
	default:
		return s, nil
	}
}

// javaDouble formats f as Java's Double.toString does, so that doubles
// read back through DescribeConfigs look as they do from Kafka ("0.5",
// "1.0", "1.7976931348623157E308").
func javaDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	abs := math.Abs(f)
	if f == 0 || (abs >= 1e-3 && abs < 1e7) {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		if f == 0 && math.Signbit(f) {
			return "-0.0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // 1.5e+07
	mant, exp, _ := strings.Cut(s, "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	exp = strings.TrimPrefix(exp, "+")
	neg := strings.HasPrefix(exp, "-")
	exp = strings.TrimLeft(strings.TrimPrefix(exp, "-"), "0")
	if neg {
		exp = "-" + exp
	}
	return mant + "E" + exp
}

func listElems(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// validator pairs a check with its description in the docs.
type validator struct {
	check func(string) error
	desc  string
}

func atLeast(min int64) validator {
	return validator{
		check: func(v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return err
			}
			if n < min {
				return fmt.Errorf("value must be at least %d", min)
			}
			return nil
		},
		desc: fmt.Sprintf("[%d,...]", min),
	}
}

func between(min, max int64) validator {
	return validator{
		check: func(v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return err
			}
			if n < min || n > max {
				return fmt.Errorf("value must be no less than %d and no greater than %d", min, max)
			}
			return nil
		},
		desc: fmt.Sprintf("[%d,...,%d]", min, max),
	}
}

func betweenFloat(min, max float64) validator {
	return validator{
		check: func(v string) error {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return err
			}
			if f < min || f > max {
				return fmt.Errorf("value must be no less than %s and no greater than %s", javaDouble(min), javaDouble(max))
			}
			return nil
		},
		desc: fmt.Sprintf("[%s,...,%s]", javaDouble(min), javaDouble(max)),
	}
}

// oneOf is Kafka's ValidString.in: case-sensitive.
func oneOf(values ...string) validator {
	return validator{
		check: func(v string) error {
			for _, ok := range values {
				if v == ok {
					return nil
				}
			}
			return fmt.Errorf("string must be one of: %s", strings.Join(values, ", "))
		},
		desc: "[" + strings.Join(values, ", ") + "]",
	}
}

// listOf is Kafka's (3.x) ValidList.in: every element must be one of
// values; the empty list is allowed.
func listOf(values ...string) validator {
	one := oneOf(values...)
	return validator{
		check: func(v string) error {
			for _, e := range listElems(v) {
				if one.check(e) != nil {
					return fmt.Errorf("invalid value %s; valid values are: %s", e, strings.Join(values, ", "))
				}
			}
			return nil
		},
		desc: "[" + strings.Join(values, ", ") + "]",
	}
}

var throttledReplicaRE = regexp.MustCompile(`^([0-9]+:[0-9]+)?$`)

// throttledReplicas accepts "*" or partition:broker pairs, as Kafka's
// ThrottledReplicaListValidator.
func throttledReplicas() validator {
	return validator{
		check: func(v string) error {
			elems := listElems(v)
			if len(elems) == 1 && elems[0] == "*" {
				return nil
			}
			for _, e := range elems {
				if !throttledReplicaRE.MatchString(e) {
					return errors.New("must be the literal '*' or a list of replicas in the form [PartitionId]:[BrokerId],[PartitionId]:[BrokerId],...")
				}
			}
			return nil
		},
		desc: "[partitionId]:[brokerId],[partitionId]:[brokerId],...",
	}
}

var versionRE = regexp.MustCompile(`^[0-9]+\.[0-9]+(\.[0-9]+)?(\.[0-9]+)?(-IV[0-9]+)?$`)

// kafkaVersion accepts strings shaped like a Kafka MetadataVersion
// ("0.10.2", "2.8", "3.0-IV1"); Brook writes only the v2 format whatever
// is set.
func kafkaVersion() validator {
	return validator{
		check: func(v string) error {
			if !versionRE.MatchString(v) {
				return fmt.Errorf("%s is not a valid Kafka version", v)
			}
			return nil
		},
		desc: "[0.8.0, 0.8.1, 0.8.2, 0.9.0, 0.10.0-IV0, ..., 3.9-IV0]",
	}
}

func gzipLevel() validator {
	return validator{
		check: func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil {
				return err
			}
			if n != -1 && (n < 1 || n > 9) {
				return errors.New("value must be -1 or between 1 and 9")
			}
			return nil
		},
		desc: "[1,...,9] or -1",
	}
}
