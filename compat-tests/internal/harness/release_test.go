package harness

import (
	"slices"
	"testing"
)

func TestReleaseArgs(t *testing.T) {
	cases := []struct {
		name    string
		release Release
		tool    string
		args    []string
		want    []string
	}{
		{"4.x unchanged", Kafka4, "kafka-console-producer.sh",
			[]string{"--reader-property", "parse.key=true", "--command-property", "acks=all"},
			[]string{"--reader-property", "parse.key=true", "--command-property", "acks=all"}},
		{"default release unchanged", "", "kafka-console-consumer.sh",
			[]string{"--formatter-property", "print.key=true"},
			[]string{"--formatter-property", "print.key=true"}},
		{"3.9 console producer", Kafka39, "kafka-console-producer.sh",
			[]string{"--topic", "t", "--reader-property", "parse.key=true", "--command-property", "acks=all"},
			[]string{"--topic", "t", "--property", "parse.key=true", "--producer-property", "acks=all"}},
		{"3.9 console consumer", Kafka39, "kafka-console-consumer.sh",
			[]string{"--formatter-property", "print.key=true", "--command-property", "a=b"},
			[]string{"--property", "print.key=true", "--consumer-property", "a=b"}},
		{"3.9 perf tools", Kafka39, "kafka-producer-perf-test.sh",
			[]string{"--num-records", "10", "--command-property", "acks=all"},
			[]string{"--num-records", "10", "--producer-props", "acks=all"}},
		{"3.9 consumer perf", Kafka39, "kafka-consumer-perf-test.sh",
			[]string{"--num-records", "10"}, []string{"--messages", "10"}},
		// Only the console and perf tools renamed options.
		{"3.9 other tool", Kafka39, "kafka-topics.sh",
			[]string{"--command-property", "--reader-property"},
			[]string{"--command-property", "--reader-property"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := slices.Clone(c.args)
			if got := c.release.Args(c.tool, in); !slices.Equal(got, c.want) {
				t.Errorf("Args(%s, %q) = %q, want %q", c.tool, c.args, got, c.want)
			}
			if !slices.Equal(in, c.args) {
				t.Errorf("Args changed its input to %q", in)
			}
		})
	}
}

func TestReleaseHome(t *testing.T) {
	t.Setenv("BROOK_CACHE", "/cache")
	for r, want := range map[Release]string{Kafka4: "/cache/kafka", Kafka39: "/cache/kafka3"} {
		if got, err := r.Home(); err != nil || got != want {
			t.Errorf("%s.Home() = %q, %v; want %q", r, got, err, want)
		}
	}
}
