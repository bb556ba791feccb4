package cgroup

import (
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// realFile reads a file copied from a real kernel into testdata/real.
func realFile(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "real", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// FuzzRead feeds arbitrary contents to every file a Reading parses, for
// both versions, and checks the Reading against refReading, the figures
// the documentation of Reading and Read describe computed the slow and
// obvious way (strings and strconv): the same Reading, or an error exactly
// when the reference has none. On v1 the same files are also read by a
// Sampler from real files on disk, which must give the same Reading (its
// own buffer and its growth past 8 KiB included). Seeds: a real cgroup v1
// tree of this project's test machine (testdata/real/v1-root) and the
// fixtures' formats.
func FuzzRead(f *testing.F) {
	f.Add(realFile(f, "v1-root/memory.stat"), realFile(f, "v1-root/memory.usage_in_bytes"),
		realFile(f, "v1-root/memory.oom_control"), "", realFile(f, "v1-root/memory.limit_in_bytes"))
	f.Add(statV1(1200*mib, 1800*mib, 16*mib, 8*mib, 2*mib, 4*gib), "3221225472\n", oomControlV1(1), "", "4294967296\n")
	f.Add(statV2(1800*mib, 1300*mib, 3*mib, 1*mib, 16*mib, 8*mib, 2*mib), "3221225472\n", eventsV2(1), pressure("12.34"), "max\n")
	f.Add("total_rss 1\nanon 2\n", "1", "oom_kill 99999999999999999999", "some avg10=1.5.5", "-1")
	f.Add("\x00\n\n  \ntotal_rss\t5\nanon  6\n", " 7 ", "oom_kill\n", "some avg10=", "")
	f.Fuzz(func(t *testing.T, stat, usage, events, psi, limit string) {
		d1 := "/sys/fs/cgroup/memory/g"
		d2 := "/sys/fs/cgroup/g"
		tree := files{
			d1 + "/memory.stat": stat, d1 + "/memory.usage_in_bytes": usage, d1 + "/memory.oom_control": events,
			d1 + "/memory.limit_in_bytes": limit,
			d2 + "/memory.stat":           stat, d2 + "/memory.current": usage, d2 + "/memory.events": events,
			d2 + "/memory.pressure": psi, d2 + "/memory.max": limit, "/sys/fs/cgroup/memory.max": limit,
		}
		for _, g := range []Group{
			{Version: V1, Path: "/g", Dir: d1},
			{Version: V2, Path: "/g", Dir: d2, LimitDirs: []string{d2, "/sys/fs/cgroup"}},
		} {
			r, err := g.Read(tree.reader())
			want, ok := refReading(g.Version, stat, usage, events, psi, []string{limit, limit})
			if ok != (err == nil) {
				t.Fatalf("%v: Read: %+v, %v; the reference: %+v, ok %v", g.Version, r, err, want, ok)
			}
			if err != nil {
				if r != (Reading{}) {
					t.Fatalf("%v: a Reading with an error: %+v", g.Version, r)
				}
				continue
			}
			if !sameReading(r, want) {
				t.Fatalf("%v: Read %+v\nthe reference %+v", g.Version, r, want)
			}
		}
		// The Sampler reads real files: the same Reading.
		dir := t.TempDir()
		for name, content := range map[string]string{"memory.stat": stat, "memory.usage_in_bytes": usage,
			"memory.oom_control": events, "memory.limit_in_bytes": limit} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		g := Group{Version: V1, Path: "/g", Dir: dir}
		s, err := NewSampler(g)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		r1, err1 := g.Read(os.ReadFile)
		r2, err2 := s.Read()
		if (err1 == nil) != (err2 == nil) || r1 != r2 {
			t.Fatalf("Read %+v, %v; Sampler.Read %+v, %v", r1, err1, r2, err2)
		}
	})
}

// sameReading compares two Readings, the pressure within float rounding.
func sameReading(a, b Reading) bool {
	pa, pb := a.PressureSome10, b.PressureSome10
	a.PressureSome10, b.PressureSome10 = 0, 0
	return a == b && math.Abs(pa-pb) <= 1e-9*math.Max(1, math.Abs(pb))
}

// refNumber parses what the kernel writes as a byte count: digits only,
// a value that fits in an int64.
func refNumber(s string) (int64, bool) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// refTrim trims what the kernel's files may end lines with.
func refTrim(s string) string { return strings.Trim(s, " \t\n\r") }

// refReading is Reading as documented, for files with the given contents
// (limits: memory.limit_in_bytes, or memory.max of each LimitDir). ok is
// false where Read must fail: usage not a number, no anonymous-memory
// figure.
func refReading(v Version, stat, usage, events, psi string, limits []string) (Reading, bool) {
	r := Reading{Limit: -1, Usage: -1, Unreclaimable: -1, Anon: -1, Shmem: -1, KernelStack: -1,
		Sock: -1, Dirty: -1, Writeback: -1, File: -1, OOMKills: -1, PressureSome10: -1}
	var ok bool
	if r.Usage, ok = refNumber(refTrim(usage)); !ok {
		return Reading{}, false
	}
	limit := func(n int64) {
		if n < 1<<62 && (r.Limit < 0 || n < r.Limit) {
			r.Limit = n
		}
	}
	keys := map[string]*int64{"anon": &r.Anon, "shmem": &r.Shmem, "kernel_stack": &r.KernelStack, "sock": &r.Sock,
		"file_dirty": &r.Dirty, "file_writeback": &r.Writeback, "file": &r.File}
	if v == V1 {
		keys = map[string]*int64{"total_rss": &r.Anon, "total_shmem": &r.Shmem, "total_dirty": &r.Dirty,
			"total_writeback": &r.Writeback, "total_cache": &r.File}
	}
	for _, line := range strings.Split(stat, "\n") {
		k, val, _ := strings.Cut(line, " ")
		n, ok := refNumber(refTrim(val))
		if !ok || k == "" {
			continue
		}
		if dst := keys[k]; dst != nil {
			*dst = n
		}
		if v == V1 && k == "hierarchical_memory_limit" {
			limit(n)
		}
	}
	if r.Anon < 0 {
		return Reading{}, false
	}
	for _, l := range limits[:map[Version]int{V1: 1, V2: 2}[v]] {
		if n, ok := refNumber(refTrim(l)); ok {
			limit(n)
		}
	}
	for _, line := range strings.Split(events, "\n") {
		k, val, _ := strings.Cut(line, " ")
		if n, ok := refNumber(refTrim(val)); ok && k == "oom_kill" {
			r.OOMKills = n
			break
		}
	}
	if v == V2 {
		r.PressureSome10 = refPressure(psi)
	}
	// The sum of the parts, saturating: figures are a file's claims, and
	// no sum of claims may wrap negative.
	sum := new(big.Int)
	for _, p := range []int64{r.Anon, r.Shmem, r.KernelStack, r.Sock, r.Dirty, r.Writeback} {
		sum.Add(sum, big.NewInt(max(p, 0)))
	}
	r.Unreclaimable = math.MaxInt64
	if sum.IsInt64() {
		r.Unreclaimable = sum.Int64()
	}
	return r, true
}

// refPressure is avg10 of the first "some" line that has one, -1 when none
// or malformed.
func refPressure(psi string) float64 {
	for _, line := range strings.Split(psi, "\n") {
		rest, ok := strings.CutPrefix(line, "some ")
		if !ok {
			continue
		}
		for _, field := range strings.Split(rest, " ") {
			v, ok := strings.CutPrefix(field, "avg10=")
			if !ok {
				continue
			}
			whole, frac, dot := strings.Cut(v, ".")
			if _, ok := refNumber(whole); !ok || dot && !isDigits(frac) {
				return -1
			}
			if len(frac) > 18 {
				v = whole + "." + frac[:18]
			}
			p, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return -1
			}
			return p
		}
	}
	return -1
}

func isDigits(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }

// FuzzProcessResident feeds arbitrary /proc/<pid>/status contents to
// ProcessResident and checks the figure against the documented one:
// RssAnon + RssShmem when RssAnon is there, else VmRSS, in bytes, from "N
// kB" values; an error wrapping ErrMalformed exactly when neither is
// there. Seeds: this machine's /proc/self/status and the fixtures'.
func FuzzProcessResident(f *testing.F) {
	f.Add(realFile(f, "proc/status"))
	f.Add(status("VmRSS:\t 3000000 kB\nRssAnon:\t 2500000 kB\nRssFile:\t  450000 kB\nRssShmem:\t   50000 kB\n"))
	f.Add(status("VmRSS:\t 3000000 kB\n"))
	f.Add("RssAnon:\t9007199254740991 kB\nRssShmem: 1 kB")
	f.Fuzz(func(t *testing.T, content string) {
		got, err := ProcessResident(files{"/proc/self/status": content}.reader())
		fig := map[string]int64{}
		for _, line := range strings.Split(content, "\n") {
			k, v, _ := strings.Cut(line, ":")
			num, unit, _ := strings.Cut(refTrim(v), " ")
			n, ok := refNumber(num)
			if !ok || refTrim(unit) != "kB" || n > math.MaxInt64>>10 {
				continue
			}
			fig[k] = n << 10
		}
		anon, hasAnon := fig["RssAnon"]
		rss, hasRSS := fig["VmRSS"]
		switch {
		case hasAnon:
			if want := anon + fig["RssShmem"]; err != nil || got != want {
				t.Fatalf("ProcessResident %d, %v; want RssAnon + RssShmem = %d", got, err, want)
			}
		case hasRSS:
			if err != nil || got != rss {
				t.Fatalf("ProcessResident %d, %v; want VmRSS = %d", got, err, rss)
			}
		default:
			if err == nil {
				t.Fatalf("ProcessResident %d from a status with neither RssAnon nor VmRSS", got)
			}
		}
	})
}

// FuzzLocate feeds arbitrary /proc/self/cgroup and mountinfo contents to
// Locate: it must never panic, and a group it finds must be consistent: a
// directory under the mount point of a mount of its version whose root is
// a prefix of the process's path, and on v2 limit directories that begin
// with it and climb to the mount point. Seeds: this machine's (cgroup v1)
// files and the fixtures' container and host layouts.
func FuzzLocate(f *testing.F) {
	f.Add(realFile(f, "proc/cgroup"), realFile(f, "proc/mountinfo"))
	f.Add(procCgroupHybrid("/kubepods/pod1"), mountinfoHybrid)
	f.Add("0::/\n", mountinfoV2Container)
	f.Add("0::/a/b/../../..\n", mountinfoV2Host)
	f.Add("4:memory:/docker/x/y\n", mountinfoV1Docker)
	f.Add("4:memory:/\\040\n", `1 2 3:4 /\1 /\0401 rw - cgroup c rw,memory`)
	f.Fuzz(func(t *testing.T, cgroup, mountinfo string) {
		read := func(name string) ([]byte, error) {
			switch name {
			case "/proc/self/cgroup":
				return []byte(cgroup), nil
			case "/proc/self/mountinfo":
				return []byte(mountinfo), nil
			}
			return []byte("memory\n"), nil // every cgroup.controllers delegates memory
		}
		g, ok, err := Locate(read)
		if err != nil || !ok {
			return
		}
		if g.Dir == "" || (g.Version == V2 && (len(g.LimitDirs) == 0 || g.LimitDirs[0] != g.Dir)) {
			t.Fatalf("inconsistent Group %+v", g)
		}
		if g.Version == V1 && g.LimitDirs != nil {
			t.Fatalf("a v1 Group with limit directories: %+v", g)
		}
		for i := 1; i < len(g.LimitDirs); i++ {
			if !strings.HasPrefix(g.LimitDirs[i-1], g.LimitDirs[i]) {
				t.Fatalf("limit directory %q is not an ancestor of %q: %+v", g.LimitDirs[i], g.LimitDirs[i-1], g)
			}
		}
	})
}
