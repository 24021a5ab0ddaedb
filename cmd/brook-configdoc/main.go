// Command brook-configdoc writes docs/configuration.md from the config
// table, so the reference never drifts from the code. Run it from the
// module root:
//
//	go run ./cmd/brook-configdoc          # rewrite docs/configuration.md
//	go run ./cmd/brook-configdoc -check   # exit 1 if the file is stale
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/brook-mq/brook/config"
)

func main() {
	out := flag.String("o", config.DocPath, "file to write")
	check := flag.Bool("check", false, "only report whether the file is up to date")
	flag.Parse()
	if err := run(*out, *check); err != nil {
		fmt.Fprintln(os.Stderr, "brook-configdoc:", err)
		os.Exit(1)
	}
}

func run(path string, check bool) error {
	want := config.Markdown()
	if check {
		got, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("check %s: %w", path, err)
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("%s is stale; run go run ./cmd/brook-configdoc", path)
		}
		return nil
	}
	if err := os.WriteFile(path, want, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
