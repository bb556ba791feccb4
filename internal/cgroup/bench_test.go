package cgroup

import (
	"io/fs"
	"os"
	"testing"
)

// BenchmarkRead measures one sample: parsing alone on fixture files held in
// memory, a Sampler on fixture files on disk, and on this machine's real
// memory cgroup both Group.Read with os.ReadFile and a Sampler (skipped
// where the process has no memory cgroup).
func BenchmarkRead(b *testing.B) {
	inMemory := func(f files) ReadFunc {
		m := make(map[string][]byte, len(f))
		for k, v := range f {
			m[k] = []byte(v)
		}
		return func(name string) ([]byte, error) {
			if c, ok := m[name]; ok {
				return c, nil
			}
			return nil, fs.ErrNotExist
		}
	}
	for _, fx := range []struct {
		name  string
		files files
	}{{"fixture-v1", v1Exec()}, {"fixture-v2", v2Exec()}} {
		b.Run(fx.name+"/parse", func(b *testing.B) {
			read := inMemory(fx.files)
			g, ok, err := Locate(read)
			if err != nil || !ok {
				b.Fatal(ok, err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := g.Read(read); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fx.name+"/disk-sampler", func(b *testing.B) {
			benchSampler(b, onDisk(b, fx.files))
		})
	}

	g, ok, err := Locate(os.ReadFile)
	if err != nil || !ok {
		b.Logf("no memory cgroup here (ok=%v, err=%v): real-group benchmarks skipped", ok, err)
		return
	}
	name := "real-" + map[Version]string{V1: "v1", V2: "v2"}[g.Version]
	b.Run(name+"/os.ReadFile", func(b *testing.B) {
		if _, err := g.Read(os.ReadFile); err != nil {
			b.Skipf("%s: %v", g.Dir, err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := g.Read(os.ReadFile); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(name+"/sampler", func(b *testing.B) { benchSampler(b, g) })
	b.Run("real/ProcessResident", func(b *testing.B) {
		if _, err := ProcessResident(os.ReadFile); err != nil {
			b.Skip(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ProcessResident(os.ReadFile); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchSampler measures Sampler.Read on g.
func benchSampler(b *testing.B, g Group) {
	s, err := NewSampler(g)
	if err != nil {
		b.Skipf("%s: %v", g.Dir, err)
	}
	defer s.Close()
	if _, err := s.Read(); err != nil {
		b.Skipf("%s: %v", g.Dir, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Read(); err != nil {
			b.Fatal(err)
		}
	}
}
