// Command javaconsts writes the Java copies of the constants the Go side
// shares with the Java module (package internal/javaconsts renders them)
// under the repository root given by -root. go generate runs it from
// internal/bridge (stats.go):
//
//	go generate ./internal/bridge/
//
// It writes a file only when its content changed, and prints each file it
// wrote.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nativepool/nativepool/internal/javaconsts"
)

func main() {
	root := flag.String("root", ".", "the repository root (the directory holding spark/)")
	flag.Parse()
	if err := write(*root); err != nil {
		fmt.Fprintln(os.Stderr, "javaconsts:", err)
		os.Exit(1)
	}
}

// write writes every rendered file under root.
func write(root string) error {
	if _, err := os.Stat(filepath.Join(root, "spark")); err != nil {
		return fmt.Errorf("no Java module under %s: %w", root, err)
	}
	for _, f := range javaconsts.Render() {
		path := filepath.Join(root, filepath.FromSlash(f.Path))
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, f.Text) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("writing %s: %w", f.Path, err)
		}
		if err := os.WriteFile(path, f.Text, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", f.Path, err)
		}
		fmt.Println("javaconsts: wrote", f.Path)
	}
	return nil
}
