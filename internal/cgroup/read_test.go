package cgroup

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// locateAndRead is what the guard does: Locate once, then Read.
func locateAndRead(t *testing.T, f files) (Group, Reading, error) {
	t.Helper()
	g, ok, err := Locate(f.reader())
	require.NoError(t, err)
	require.True(t, ok, "the fixture has a memory cgroup")
	r, err := g.Read(f.reader())
	return g, r, err
}

func TestReadV1(t *testing.T) {
	d := "/sys/fs/cgroup/memory/kubepods/burstable/pod1/exec1"
	// The v1Exec figures: total_cache 1200 MiB, total_rss 1800 MiB, total_shmem
	// 16 MiB, total_dirty 8 MiB, total_writeback 2 MiB.
	exec := Reading{Limit: 4 * gib, Usage: 3 * gib, Unreclaimable: (1800 + 16 + 8 + 2) * mib,
		Anon: 1800 * mib, Shmem: 16 * mib, KernelStack: -1, Sock: -1, Dirty: 8 * mib, Writeback: 2 * mib,
		File: 1200 * mib, OOMKills: 0, PressureSome10: -1}
	with := func(r Reading, change func(*Reading)) Reading { change(&r); return r }
	tests := []struct {
		name  string
		files files
		want  Reading
	}{{
		name:  "group with a limit: every figure, Unreclaimable = total_rss + total_shmem + total_dirty + total_writeback",
		files: v1Exec(),
		want:  exec,
	}, {
		name: "unlimited (the kernel's 9223372036854771712) in the group and above: no limit",
		files: v1Exec().with(d+"/memory.limit_in_bytes", v1Unlimited+"\n",
			d+"/memory.stat", statV1(1200*mib, 1800*mib, 16*mib, 8*mib, 2*mib, 9223372036854771712)),
		want: with(exec, func(r *Reading) { r.Limit = -1 }),
	}, {
		name: "an ancestor's limit is tighter: hierarchical_memory_limit wins over memory.limit_in_bytes",
		files: v1Exec().with(d+"/memory.limit_in_bytes", v1Unlimited+"\n",
			d+"/memory.stat", statV1(1200*mib, 1800*mib, 16*mib, 8*mib, 2*mib, 3*gib)),
		want: with(exec, func(r *Reading) { r.Limit = 3 * gib }),
	}, {
		name: "the group's own limit is tighter than the hierarchy's figure (stale stat): the smaller counts",
		files: v1Exec().with(d+"/memory.limit_in_bytes", "1073741824\n",
			d+"/memory.stat", statV1(1200*mib, 1800*mib, 16*mib, 8*mib, 2*mib, 4*gib)),
		want: with(exec, func(r *Reading) { r.Limit = 1 * gib }),
	}, {
		name:  "missing memory.oom_control (kernels before 4.13 print no oom_kill either): OOMKills -1",
		files: v1Exec().without(d + "/memory.oom_control"),
		want:  with(exec, func(r *Reading) { r.OOMKills = -1 }),
	}, {
		name:  "memory.oom_control without oom_kill: OOMKills -1",
		files: v1Exec().with(d+"/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\n"),
		want:  with(exec, func(r *Reading) { r.OOMKills = -1 }),
	}, {
		name:  "OOM kills counted",
		files: v1Exec().with(d+"/memory.oom_control", oomControlV1(3)),
		want:  with(exec, func(r *Reading) { r.OOMKills = 3 }),
	}, {
		name:  "missing memory.limit_in_bytes: hierarchical_memory_limit alone",
		files: v1Exec().without(d + "/memory.limit_in_bytes"),
		want:  exec,
	}, {
		name: "process in the root cgroup: the whole machine, with no limit",
		files: files{
			"/proc/self/cgroup":                           procCgroupHybrid("/"),
			"/proc/self/mountinfo":                        mountinfoHybrid,
			"/sys/fs/cgroup/memory/memory.usage_in_bytes": "4730904576\n",
			"/sys/fs/cgroup/memory/memory.limit_in_bytes": v1Unlimited + "\n",
			"/sys/fs/cgroup/memory/memory.stat":           statV1(2428989440, 2301808640, 9736192, 20406272, 0, 9223372036854771712),
			"/sys/fs/cgroup/memory/memory.oom_control":    oomControlV1(0),
		},
		want: Reading{Limit: -1, Usage: 4730904576, Unreclaimable: 2301808640 + 9736192 + 20406272,
			Anon: 2301808640, Shmem: 9736192, KernelStack: -1, Sock: -1, Dirty: 20406272, Writeback: 0,
			File: 2428989440, OOMKills: 0, PressureSome10: -1},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, r, err := locateAndRead(t, tt.files)
			require.NoError(t, err)
			assert.Equal(t, V1, g.Version)
			assert.Equal(t, tt.want, r)
		})
	}
}

func TestReadV2(t *testing.T) {
	kube := "/sys/fs/cgroup/kubepods.slice"
	// The v2Exec figures: anon 1800 MiB, file 1300 MiB, kernel_stack 3 MiB,
	// sock 1 MiB, shmem 16 MiB, file_dirty 8 MiB, file_writeback 2 MiB.
	exec := Reading{Limit: 4 * gib, Usage: 3 * gib, Unreclaimable: (1800 + 16 + 3 + 1 + 8 + 2) * mib,
		Anon: 1800 * mib, Shmem: 16 * mib, KernelStack: 3 * mib, Sock: 1 * mib, Dirty: 8 * mib, Writeback: 2 * mib,
		File: 1300 * mib, OOMKills: 1, PressureSome10: 12.34}
	with := func(r Reading, change func(*Reading)) Reading { change(&r); return r }
	container := files{
		"/proc/self/cgroup":                 "0::/\n",
		"/proc/self/mountinfo":              mountinfoV2Container,
		"/sys/fs/cgroup/cgroup.controllers": "cpu io memory pids\n",
		"/sys/fs/cgroup/memory.current":     "524288000\n",
		"/sys/fs/cgroup/memory.max":         "2147483648\n",
		"/sys/fs/cgroup/memory.stat":        statV2(300*mib, 200*mib, 1*mib, 0, 0, 0, 0),
		"/sys/fs/cgroup/memory.events":      eventsV2(0),
		"/sys/fs/cgroup/memory.pressure":    pressure("0.00"),
	}
	tests := []struct {
		name  string
		files files
		want  Reading
	}{{
		name: "group with memory.max: every figure, Unreclaimable = anon + shmem + kernel_stack + sock + " +
			"file_dirty + file_writeback, OOM kills from memory.events, pressure from memory.pressure",
		files: v2Exec(),
		want:  exec,
	}, {
		name:  "\"max\" everywhere, no memory.max at the root: no limit",
		files: v2Exec().with(v2Container+"/memory.max", "max\n", v2Pod+"/memory.max", "max\n"),
		want:  with(exec, func(r *Reading) { r.Limit = -1 }),
	}, {
		name:  "an ancestor is tighter than the group: the smallest memory.max of LimitDirs",
		files: v2Exec().with(kube+"/memory.max", "2147483648\n"),
		want:  with(exec, func(r *Reading) { r.Limit = 2 * gib }),
	}, {
		name:  "a huge memory.max is no limit either",
		files: v2Exec().with(v2Container+"/memory.max", "9223372036854771712\n", v2Pod+"/memory.max", "max\n"),
		want:  with(exec, func(r *Reading) { r.Limit = -1 }),
	}, {
		name:  "container in its own cgroup namespace (\"0::/\"): memory.max at the mount point is the container's limit",
		files: container,
		want: Reading{Limit: 2 * gib, Usage: 500 * mib, Unreclaimable: 301 * mib, Anon: 300 * mib, Shmem: 0,
			KernelStack: 1 * mib, Sock: 0, Dirty: 0, Writeback: 0, File: 200 * mib, OOMKills: 0, PressureSome10: 0},
	}, {
		name:  "memory.pressure without a some line, memory.events missing: both -1",
		files: v2Exec().with(v2Container+"/memory.pressure", "full avg10=3.00 avg60=1.00 avg300=0.20 total=1\n").without(v2Container + "/memory.events"),
		want:  with(exec, func(r *Reading) { r.PressureSome10, r.OOMKills = -1, -1 }),
	}, {
		name:  "memory.pressure missing (PSI disabled): -1",
		files: v2Exec().without(v2Container + "/memory.pressure"),
		want:  with(exec, func(r *Reading) { r.PressureSome10 = -1 }),
	}, {
		name:  "memory.pressure at 100%",
		files: v2Exec().with(v2Container+"/memory.pressure", pressure("100.00")),
		want:  with(exec, func(r *Reading) { r.PressureSome10 = 100 }),
	}, {
		name: "a kernel without kernel_stack and sock in memory.stat: those parts -1, not counted",
		files: v2Exec().with(v2Container+"/memory.stat",
			"anon 1048576\nfile 2097152\nfile_mapped 0\nfile_dirty 4096\nfile_writeback 0\nshmem 0\n"),
		want: with(exec, func(r *Reading) {
			r.Anon, r.File, r.Dirty, r.Writeback, r.Shmem, r.KernelStack, r.Sock = 1*mib, 2*mib, 4096, 0, 0, -1, -1
			r.Unreclaimable = 1*mib + 4096
		}),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, r, err := locateAndRead(t, tt.files)
			require.NoError(t, err)
			assert.Equal(t, V2, g.Version)
			assert.Equal(t, tt.want, r)
		})
	}
}

func TestReadHybridHostReadsTheV1Controller(t *testing.T) {
	// The unified hierarchy has files of its own (memory.pressure exists in
	// every v2 group), but the v1 controller is the one that limits.
	f := v1Exec().with("/sys/fs/cgroup/unified/kubepods/burstable/pod1/exec1/memory.pressure", pressure("50.00"),
		"/sys/fs/cgroup/unified/kubepods/burstable/pod1/exec1/cgroup.controllers", "hugetlb\n")
	g, r, err := locateAndRead(t, f)
	require.NoError(t, err)
	assert.Equal(t, V1, g.Version)
	assert.Equal(t, 4*gib, r.Limit)
	assert.Equal(t, -1.0, r.PressureSome10)
}

func TestReadErrors(t *testing.T) {
	d := "/sys/fs/cgroup/memory/kubepods/burstable/pod1/exec1"
	hostRoot := files{
		"/proc/self/cgroup":                 "0::/\n",
		"/proc/self/mountinfo":              mountinfoV2Host,
		"/sys/fs/cgroup/cgroup.controllers": "cpuset cpu io memory hugetlb pids rdma misc\n",
		"/sys/fs/cgroup/memory.stat":        statV2(5*gib, 9*gib, 40*mib, 2*mib, 300*mib, 60*mib, 0),
		"/sys/fs/cgroup/memory.pressure":    pressure("0.00"),
	}
	tests := []struct {
		name  string
		files files
		is    error
	}{
		{"v1 without memory.stat", v1Exec().without(d + "/memory.stat"), fs.ErrNotExist},
		{"v1 without memory.usage_in_bytes", v1Exec().without(d + "/memory.usage_in_bytes"), fs.ErrNotExist},
		{"v1 usage that is no number", v1Exec().with(d+"/memory.usage_in_bytes", "lots\n"), ErrMalformed},
		{"v1 usage that is negative", v1Exec().with(d+"/memory.usage_in_bytes", "-1\n"), ErrMalformed},
		{"v1 memory.stat without total_rss", v1Exec().with(d+"/memory.stat", "cache 1\nrss 2\ntotal_cache 3\n"), ErrMalformed},
		{"v2 without memory.current", v2Exec().without(v2Container + "/memory.current"), fs.ErrNotExist},
		{"v2 without memory.stat", v2Exec().without(v2Container + "/memory.stat"), fs.ErrNotExist},
		{"v2 memory.stat without anon", v2Exec().with(v2Container+"/memory.stat", "file 1\n"), ErrMalformed},
		{"v2 host root: no memory.current, the caller falls back to the process's own figures", hostRoot, fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, r, err := locateAndRead(t, tt.files)
			require.ErrorIs(t, err, tt.is)
			assert.Equal(t, Reading{}, r)
		})
	}
	t.Run("an error of read other than absence, even on an optional file", func(t *testing.T) {
		denied := errors.New("permission denied")
		f := v2Exec()
		g, ok, err := Locate(f.reader())
		require.NoError(t, err)
		require.True(t, ok)
		_, err = g.Read(func(name string) ([]byte, error) {
			if name == v2Pod+"/memory.max" {
				return nil, denied
			}
			return f.reader()(name)
		})
		require.ErrorIs(t, err, denied, "a limit that cannot be read must not read as no limit")
	})
	t.Run("a Group that was never located", func(t *testing.T) {
		_, err := Group{}.Read(files{}.reader())
		require.ErrorIs(t, err, ErrMalformed)
	})
}

func TestReadSkipsMalformedLines(t *testing.T) {
	d := "/sys/fs/cgroup/memory/kubepods/burstable/pod1/exec1"
	stat := "\n\ngarbage\ntotal_rss\ntotal_rss abc\ntotal_rss -5\ntotal_rss 99999999999999999999\n" +
		"total_shmem 1 2\n total_dirty 7\ntotal_rss 1048576\ntotal_cache 2097152\ntotal_dirty 4096 \n"
	f := v1Exec().with(d+"/memory.stat", stat, d+"/memory.oom_control", "oom_kill x\noom_kill\n",
		d+"/memory.limit_in_bytes", "a lot\n")
	_, r, err := locateAndRead(t, f)
	require.NoError(t, err)
	assert.Equal(t, Reading{Limit: -1, Usage: 3 * gib, Unreclaimable: 1*mib + 4096, Anon: 1 * mib, Shmem: -1,
		KernelStack: -1, Sock: -1, Dirty: 4096, Writeback: -1, File: 2 * mib, OOMKills: -1, PressureSome10: -1}, r)

	for _, p := range []string{"some avg10=x avg60=1\n", "some avg10=1. avg60=1\n", "some avg10=.5\n", "some\n", "some avg10=\n"} {
		v, ok := pressureSome10([]byte(p))
		assert.False(t, ok, "%q gave %v", p, v)
	}
	v, ok := pressureSome10([]byte("some avg10=7"))
	assert.True(t, ok)
	assert.Equal(t, 7.0, v)
}

func TestParseInt(t *testing.T) {
	for s, want := range map[string]int64{"0": 0, "42": 42, "9223372036854775807": 1<<63 - 1, "9223372036854771712": 9223372036854771712} {
		n, ok := parseInt([]byte(s))
		assert.True(t, ok, s)
		assert.Equal(t, want, n, s)
	}
	for _, s := range []string{"", "-1", "+1", "1.5", "9223372036854775808", "18446744073709551615", "12345678901234567890123", " 1"} {
		_, ok := parseInt([]byte(s))
		assert.False(t, ok, s)
	}
}

// What the kernel cannot reclaim (UnreclaimableUsage) is the larger of
// memory.stat's sum and the usage less clean page cache: kernel memory charged to the group
// (absent from v1's memory.stat) counts as the OOM killer counts it.
func TestUnreclaimableUsageCountsKernelMemoryChargedToTheGroup(t *testing.T) {
	const mib = 1 << 20
	r := Reading{Usage: 1300 * mib, File: 100 * mib, Shmem: 4 * mib, Dirty: 20 * mib, Writeback: 6 * mib, Unreclaimable: 1200 * mib}
	assert.Equal(t, int64(1300*mib-70*mib), r.UnreclaimableUsage(), "clean page cache: 100 − 4 − 20 − 6 MiB")
	r.Usage = 1250 * mib
	assert.Equal(t, int64(1200*mib), r.UnreclaimableUsage(), "memory.stat's sum when larger (usage is batched per CPU)")
	r.Usage, r.File = -1, -1
	assert.Equal(t, int64(1200*mib), r.UnreclaimableUsage())
}
