package testutil

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// ErrNoModuleRoot is returned when no go.mod is found above the working
// directory.
var ErrNoModuleRoot = errors.New("testutil: go.mod not found above the working directory")

// ModuleRoot returns the directory of Brook's go.mod, found by walking up
// from the working directory (a test runs in its package's directory).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ErrNoModuleRoot
		}
		dir = parent
	}
}

// Build compiles the main package pkg (a path relative to the module root,
// like "./cmd/brook") into a new temporary directory. It suits TestMain,
// where no *testing.T exists; remove deletes the directory.
func Build(pkg string) (bin string, remove func(), err error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "brook-build-")
	if err != nil {
		return "", nil, fmt.Errorf("build %s: %w", pkg, err)
	}
	remove = func() { os.RemoveAll(dir) }
	bin = filepath.Join(dir, filepath.Base(pkg))
	if err := goBuild(root, pkg, bin); err != nil {
		remove()
		return "", nil, err
	}
	return bin, remove, nil
}

// BrookBinary is BuildBrook for TestMain: $BROOK_BIN when set (remove then
// does nothing), else ./cmd/brook built into a temp dir that remove deletes.
func BrookBinary() (bin string, remove func(), err error) {
	if bin, ok, err := brookBinFromEnv(); ok || err != nil {
		return bin, func() {}, err
	}
	return Build("./cmd/brook")
}

// MainWithBrook is a process-level test package's TestMain: it resolves
// the brook binary (BrookBinary) into *bin, runs the tests, removes a
// binary it built and exits with the tests' status.
func MainWithBrook(m *testing.M, bin *string) {
	b, remove, err := BrookBinary()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*bin = b
	code := m.Run()
	remove()
	os.Exit(code)
}

// brookBinFromEnv resolves $BROOK_BIN; ok is false when it is unset.
func brookBinFromEnv() (bin string, ok bool, err error) {
	env := os.Getenv("BROOK_BIN")
	if env == "" {
		return "", false, nil
	}
	abs, err := filepath.Abs(env)
	if err != nil {
		return "", true, fmt.Errorf("BROOK_BIN %q: %w", env, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return "", true, fmt.Errorf("BROOK_BIN: %w", err)
	}
	return abs, true, nil
}

// BuildBrook returns a brook binary for this test: $BROOK_BIN when set
// (make builds bin/brook once and passes it), else ./cmd/brook compiled into
// t.TempDir(). Go's build cache makes repeated builds cheap, but a package
// with many process tests should build once in TestMain with Build.
func BuildBrook(t testing.TB) string {
	t.Helper()
	bin, ok, err := brookBinFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		return bin
	}
	return buildInto(t, "./cmd/brook")
}

func buildInto(t testing.TB, pkg string) string {
	t.Helper()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	if err := goBuild(root, pkg, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

func goBuild(root, pkg, out string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, msg)
	}
	return nil
}
