package cgroup

import (
	"fmt"
	"io/fs"
	"maps"
)

// files is a fixture tree: absolute file name to content.
type files map[string]string

// reader reads the fixture tree as os.ReadFile reads the real one: an
// absent file is an *fs.PathError wrapping fs.ErrNotExist.
func (f files) reader() ReadFunc {
	return func(name string) ([]byte, error) {
		s, ok := f[name]
		if !ok {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		return []byte(s), nil
	}
}

// with returns a copy of f with the files of kv (name, content, name,
// content...) set.
func (f files) with(kv ...string) files {
	out := maps.Clone(f)
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// without returns a copy of f without the given files.
func (f files) without(names ...string) files {
	out := maps.Clone(f)
	for _, n := range names {
		delete(out, n)
	}
	return out
}

// Real-looking contents. The v1 formats are copied from a 6.x kernel's
// hybrid host (systemd's legacy layout, every v1 controller under
// /sys/fs/cgroup, the unified hierarchy at /sys/fs/cgroup/unified with no
// memory controller); the v2 ones follow the kernel's cgroup-v2
// documentation and a 6.x kernel's output.

// procCgroupHybrid is /proc/self/cgroup of a process in a v1 memory group
// at path on a hybrid host.
func procCgroupHybrid(path string) string {
	return "12:hugetlb:/\n11:perf_event:/\n10:rdma:/\n9:name=systemd:" + path + "\n8:pids:" + path +
		"\n7:blkio:" + path + "\n6:freezer:/\n5:devices:" + path + "\n4:memory:" + path +
		"\n3:cpuset:/\n2:cpu,cpuacct:" + path + "\n1:net_cls,net_prio:/\n0::" + path + "\n"
}

// mountinfoHybrid is /proc/self/mountinfo of a hybrid host: v1
// controllers and the unified hierarchy at /sys/fs/cgroup/unified.
const mountinfoHybrid = `22 27 0:21 / /proc rw,relatime - proc proc rw
23 27 0:22 / /sys rw,relatime - sysfs sysfs rw
24 27 0:6 / /dev rw,relatime - devtmpfs devtmpfs rw,size=12334096k,nr_inodes=3083524,mode=755
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
31 23 0:28 / /sys/fs/cgroup rw,relatime shared:9 - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:10 - cgroup cgroup rw,cpu,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,nosuid,nodev,noexec,relatime shared:12 - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:13 - cgroup cgroup rw,memory
36 31 0:33 / /sys/fs/cgroup/devices rw,nosuid,nodev,noexec,relatime shared:14 - cgroup cgroup rw,devices
38 31 0:35 / /sys/fs/cgroup/blkio rw,nosuid,nodev,noexec,relatime shared:16 - cgroup cgroup rw,blkio
39 31 0:36 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:17 - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:18 - cgroup cgroup rw,xattr,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:19 - cgroup2 cgroup2 rw,nsdelegate
`

// mountinfoV2Host is /proc/self/mountinfo of a host with only the unified
// hierarchy, at /sys/fs/cgroup.
const mountinfoV2Host = `22 27 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
23 27 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:2 - sysfs sysfs rw
27 1 254:1 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw,errors=remount-ro
30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`

// mountinfoV2Container is /proc/self/mountinfo inside a container with its
// own cgroup namespace (containerd, Kubernetes on cgroup v2): the
// container's group is the root of what is mounted at /sys/fs/cgroup.
const mountinfoV2Container = `1180 1068 0:312 / / rw,relatime master:420 - overlay overlay rw,lowerdir=/var/lib/containerd/l1,upperdir=/var/lib/containerd/u1,workdir=/var/lib/containerd/w1
1181 1180 0:315 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
1185 1180 0:317 / /sys ro,nosuid,nodev,noexec,relatime - sysfs sysfs ro
1186 1185 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup rw,nsdelegate,memory_recursiveprot
1190 1180 259:1 /var/lib/kubelet/pods/0f3c/volumes/spark-local /spark-local rw,relatime - ext4 /dev/nvme0n1p1 rw
`

// mountinfoV1Docker is /proc/self/mountinfo inside a Docker container on a
// v1 host without a cgroup namespace: the container's group, not the
// hierarchy's root, is what is mounted at /sys/fs/cgroup/memory.
const mountinfoV1Docker = `877 660 0:71 / / rw,relatime master:312 - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/A:/var/lib/docker/overlay2/l/B
878 877 0:74 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
882 877 0:78 / /sys ro,nosuid,nodev,noexec,relatime - sysfs sysfs ro
883 882 0:79 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - tmpfs tmpfs rw,mode=755
886 883 0:33 /docker/4be1c0ffee /sys/fs/cgroup/cpu,cpuacct ro,nosuid,nodev,noexec,relatime master:14 - cgroup cgroup rw,cpu,cpuacct
888 883 0:35 /docker/4be1c0ffee /sys/fs/cgroup/memory ro,nosuid,nodev,noexec,relatime master:16 - cgroup cgroup rw,memory
892 883 0:39 /docker/4be1c0ffee /sys/fs/cgroup/pids ro,nosuid,nodev,noexec,relatime master:20 - cgroup cgroup rw,pids
`

// statV1 is a v1 memory.stat with the given hierarchical figures (bytes)
// and hierarchical_memory_limit; the group's own figures and the other
// total_* lines are realistic filler.
func statV1(totalCache, totalRSS, totalShmem, totalDirty, totalWriteback, hierLimit int64) string {
	return fmt.Sprintf(`cache 11784192
rss 5124096
rss_huge 0
shmem 9736192
mapped_file 8155136
dirty 53248
writeback 0
workingset_refault_anon 0
workingset_refault_file 2842
swap 0
swapcached 0
pgpgin 54241
pgpgout 50113
pgfault 70020
pgmajfault 0
inactive_anon 0
active_anon 1531904
inactive_file 217088
active_file 1830912
unevictable 13328384
hierarchical_memory_limit %d
hierarchical_memsw_limit 9223372036854771712
total_cache %d
total_rss %d
total_rss_huge 0
total_shmem %d
total_mapped_file 64294912
total_dirty %d
total_writeback %d
total_workingset_refault_anon 0
total_workingset_refault_file 901422
total_swap 0
total_swapcached 0
total_pgpgin 75380207
total_pgpgout 74468163
total_pgfault 88238322
total_pgmajfault 12069
total_inactive_anon 2295390208
total_active_anon 2781184
total_inactive_file 1080209408
total_active_file 1339043840
total_unevictable 13328384
`, hierLimit, totalCache, totalRSS, totalShmem, totalDirty, totalWriteback)
}

// v1Unlimited is how v1 prints "no limit": the largest page multiple below
// 1<<63.
const v1Unlimited = "9223372036854771712"

// oomControlV1 is a v1 memory.oom_control with oom_kill kills.
func oomControlV1(kills int) string {
	return fmt.Sprintf("oom_kill_disable 0\nunder_oom 0\noom_kill %d\n", kills)
}

// statV2 is a v2 memory.stat with the given figures (bytes); the other
// lines are realistic filler from a 6.x kernel.
func statV2(anon, file, kernelStack, sock, shmem, fileDirty, fileWriteback int64) string {
	return fmt.Sprintf(`anon %d
file %d
kernel 23068672
kernel_stack %d
pagetables 4194304
sec_pagetables 0
percpu 1048576
sock %d
vmalloc 0
shmem %d
zswap 0
zswapped 0
file_mapped 16777216
file_dirty %d
file_writeback %d
swapcached 0
anon_thp 0
file_thp 0
shmem_thp 0
inactive_anon 1056964608
active_anon 409600
inactive_file 419430400
active_file 96468992
unevictable 0
slab_reclaimable 8388608
slab_unreclaimable 4194304
slab 12582912
workingset_refault_anon 0
workingset_refault_file 0
workingset_activate_anon 0
workingset_activate_file 0
workingset_restore_anon 0
workingset_restore_file 0
workingset_nodereclaim 0
pgscan 0
pgsteal 0
pgscan_kswapd 0
pgscan_direct 0
pgscan_khugepaged 0
pgsteal_kswapd 0
pgsteal_direct 0
pgsteal_khugepaged 0
pgfault 1234567
pgmajfault 12
pgrefill 0
pgactivate 0
pgdeactivate 0
pglazyfree 0
pglazyfreed 0
zswpin 0
zswpout 0
zswpwb 0
thp_fault_alloc 0
thp_collapse_alloc 0
thp_swpout 0
thp_swpout_fallback 0
`, anon, file, kernelStack, sock, shmem, fileDirty, fileWriteback)
}

// eventsV2 is a v2 memory.events with oom_kill kills.
func eventsV2(kills int) string {
	return fmt.Sprintf("low 0\nhigh 0\nmax 17\noom 2\noom_kill %d\noom_group_kill 0\n", kills)
}

// pressure is a PSI file with the given "some avg10".
func pressure(some10 string) string {
	return "some avg10=" + some10 + " avg60=4.05 avg300=1.10 total=8472213\nfull avg10=3.20 avg60=1.01 avg300=0.27 total=2311025\n"
}

const (
	mib = int64(1) << 20
	gib = int64(1) << 30
)

// v1Exec is a hybrid host with the process in the v1 memory group
// /kubepods/burstable/pod1/exec1, limited to 4 GiB.
func v1Exec() files {
	d := "/sys/fs/cgroup/memory/kubepods/burstable/pod1/exec1"
	return files{
		"/proc/self/cgroup":                         procCgroupHybrid("/kubepods/burstable/pod1/exec1"),
		"/proc/self/mountinfo":                      mountinfoHybrid,
		d + "/memory.usage_in_bytes":                "3221225472\n",
		d + "/memory.limit_in_bytes":                "4294967296\n",
		d + "/memory.stat":                          statV1(1200*mib, 1800*mib, 16*mib, 8*mib, 2*mib, 4*gib),
		d + "/memory.oom_control":                   oomControlV1(0),
		"/sys/fs/cgroup/unified/cgroup.controllers": "",
	}
}

// v2Pod is a v2 host with the process in a Kubernetes pod's container;
// only the pod's group (6 GiB) and the container's (4 GiB) have limits.
const (
	v2Pod       = "/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice"
	v2Container = v2Pod + "/cri-containerd-abc.scope"
)

func v2Exec() files {
	return files{
		"/proc/self/cgroup":                 "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/cri-containerd-abc.scope\n",
		"/proc/self/mountinfo":              mountinfoV2Host,
		v2Container + "/cgroup.controllers": "cpuset cpu io memory hugetlb pids rdma misc\n",
		v2Container + "/memory.current":     "3221225472\n",
		v2Container + "/memory.stat":        statV2(1800*mib, 1300*mib, 3*mib, 1*mib, 16*mib, 8*mib, 2*mib),
		v2Container + "/memory.events":      eventsV2(1),
		v2Container + "/memory.pressure":    pressure("12.34"),
		v2Container + "/memory.max":         "4294967296\n",
		v2Pod + "/memory.max":               "6442450944\n",
		"/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/memory.max": "max\n",
		"/sys/fs/cgroup/kubepods.slice/memory.max":                          "max\n",
		// The root cgroup has no memory.max, memory.current or memory.events.
		"/sys/fs/cgroup/cgroup.controllers": "cpuset cpu io memory hugetlb pids rdma misc\n",
		"/sys/fs/cgroup/memory.stat":        statV2(5*gib, 9*gib, 40*mib, 2*mib, 300*mib, 60*mib, 0),
		"/sys/fs/cgroup/memory.pressure":    pressure("0.00"),
	}
}
