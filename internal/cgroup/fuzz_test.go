package cgroup

import (
	"testing"
)

// FuzzRead feeds arbitrary contents to every file a Reading parses, for
// both versions: Read must never panic, and a Reading it returns must be
// consistent (usage and anonymous memory present, the unreclaimable sum at
// least its anonymous part, absent figures -1 rather than other negatives).
func FuzzRead(f *testing.F) {
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
			if err != nil {
				if r != (Reading{}) {
					t.Fatalf("%v: a Reading with an error: %+v", g.Version, r)
				}
				continue
			}
			if r.Usage < 0 || r.Anon < 0 || r.Unreclaimable < r.Anon || r.Limit < -1 || r.PressureSome10 < -1 {
				t.Fatalf("%v: inconsistent Reading %+v", g.Version, r)
			}
			for _, n := range []int64{r.Shmem, r.KernelStack, r.Sock, r.Dirty, r.Writeback, r.File, r.OOMKills} {
				if n < -1 {
					t.Fatalf("%v: negative figure in %+v", g.Version, r)
				}
			}
		}
	})
}

// FuzzLocate feeds arbitrary /proc/self/cgroup and mountinfo contents to
// Locate: it must never panic, and a group it finds must have a directory,
// and on v2 limit directories that begin with it.
func FuzzLocate(f *testing.F) {
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
	})
}
