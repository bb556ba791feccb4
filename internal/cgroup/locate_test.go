package cgroup

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLocate(t *testing.T) {
	hostRootV2 := files{
		"/proc/self/cgroup":                 "0::/\n",
		"/proc/self/mountinfo":              mountinfoV2Host,
		"/sys/fs/cgroup/cgroup.controllers": "cpuset cpu io memory hugetlb pids rdma misc\n",
	}
	tests := []struct {
		name  string
		files files
		want  Group
		ok    bool
	}{{
		name:  "v1 group on a hybrid host: the v1 memory controller, not the unified mount, limits",
		files: v1Exec(),
		want:  Group{Version: V1, Path: "/kubepods/burstable/pod1/exec1", Dir: "/sys/fs/cgroup/memory/kubepods/burstable/pod1/exec1"},
		ok:    true,
	}, {
		name: "v1 root cgroup: the mount point itself",
		files: files{
			"/proc/self/cgroup":    procCgroupHybrid("/"),
			"/proc/self/mountinfo": mountinfoHybrid,
		},
		want: Group{Version: V1, Path: "/", Dir: "/sys/fs/cgroup/memory"},
		ok:   true,
	}, {
		name: "v1 in a Docker container without a cgroup namespace: the mount's root is the container's group",
		files: files{
			"/proc/self/cgroup":    "12:pids:/docker/4be1c0ffee\n4:memory:/docker/4be1c0ffee\n2:cpu,cpuacct:/docker/4be1c0ffee\n0::/system.slice/docker.service\n",
			"/proc/self/mountinfo": mountinfoV1Docker,
		},
		want: Group{Version: V1, Path: "/docker/4be1c0ffee", Dir: "/sys/fs/cgroup/memory"},
		ok:   true,
	}, {
		name: "v1 memory co-mounted with other controllers in one hierarchy",
		files: files{
			"/proc/self/cgroup":    "3:cpu,memory,cpuacct:/yarn/container_01\n0::/\n",
			"/proc/self/mountinfo": "40 31 0:37 / /cgroup/cpu,memory rw,relatime - cgroup cgroup rw,cpu,memory,cpuacct\n",
		},
		want: Group{Version: V1, Path: "/yarn/container_01", Dir: "/cgroup/cpu,memory/yarn/container_01"},
		ok:   true,
	}, {
		name: "v1 mount point with a space, escaped by mountinfo",
		files: files{
			"/proc/self/cgroup":    "4:memory:/g\n",
			"/proc/self/mountinfo": `35 31 0:32 / /mnt/cg\040mem rw,relatime - cgroup cgroup rw,memory` + "\n",
		},
		want: Group{Version: V1, Path: "/g", Dir: "/mnt/cg mem/g"},
		ok:   true,
	}, {
		name:  "v2 group: its directory, and the directories whose memory.max count up to the mount",
		files: v2Exec(),
		want: Group{Version: V2, Path: "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/cri-containerd-abc.scope",
			Dir: v2Container,
			LimitDirs: []string{v2Container, v2Pod, "/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice",
				"/sys/fs/cgroup/kubepods.slice", "/sys/fs/cgroup"}},
		ok: true,
	}, {
		name: "v2 in a container's cgroup namespace: \"0::/\" is the container's group, mounted at /sys/fs/cgroup",
		files: files{
			"/proc/self/cgroup":                 "0::/\n",
			"/proc/self/mountinfo":              mountinfoV2Container,
			"/sys/fs/cgroup/cgroup.controllers": "cpuset cpu io memory hugetlb pids rdma misc\n",
		},
		want: Group{Version: V2, Path: "/", Dir: "/sys/fs/cgroup", LimitDirs: []string{"/sys/fs/cgroup"}},
		ok:   true,
	}, {
		name:  "v2 host root: located (Read then finds no memory.current and the caller falls back)",
		files: hostRootV2,
		want:  Group{Version: V2, Path: "/", Dir: "/sys/fs/cgroup", LimitDirs: []string{"/sys/fs/cgroup"}},
		ok:    true,
	}, {
		name: "v2 on a hybrid host's unified mount, when v1 has no memory controller mounted",
		files: files{
			"/proc/self/cgroup":    "0::/user.slice/app\n",
			"/proc/self/mountinfo": "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate\n",
			"/sys/fs/cgroup/unified/user.slice/app/cgroup.controllers": "memory pids\n",
		},
		want: Group{Version: V2, Path: "/user.slice/app", Dir: "/sys/fs/cgroup/unified/user.slice/app",
			LimitDirs: []string{"/sys/fs/cgroup/unified/user.slice/app", "/sys/fs/cgroup/unified/user.slice", "/sys/fs/cgroup/unified"}},
		ok: true,
	}, {
		name: "v2 bind mount of a subtree: the mount whose root holds the group most closely wins",
		files: files{
			"/proc/self/cgroup": "0::/kubepods/pod1/c1\n",
			"/proc/self/mountinfo": "30 23 0:26 / /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw\n" +
				"31 23 0:26 /kubepods/pod1 /pod-cgroup rw,relatime - cgroup2 cgroup2 rw\n",
			"/pod-cgroup/c1/cgroup.controllers": "memory\n",
		},
		want: Group{Version: V2, Path: "/kubepods/pod1/c1", Dir: "/pod-cgroup/c1", LimitDirs: []string{"/pod-cgroup/c1", "/pod-cgroup"}},
		ok:   true,
	}, {
		name: "hybrid host with the v1 memory controller unmounted: the unified group has no memory controller",
		files: files{
			"/proc/self/cgroup":    procCgroupHybrid("/system.slice/x.service"),
			"/proc/self/mountinfo": "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate\n",
			"/sys/fs/cgroup/unified/system.slice/x.service/cgroup.controllers": "hugetlb\n",
		},
	}, {
		name:  "v2 group whose parent does not delegate the memory controller",
		files: v2Exec().with(v2Container+"/cgroup.controllers", "cpu io pids\n"),
	}, {
		name:  "no /proc/self/cgroup (not Linux, no /proc)",
		files: files{},
	}, {
		name:  "a /proc/self/cgroup with neither a memory controller nor a v2 line",
		files: files{"/proc/self/cgroup": "3:cpu:/\n2:pids:/\n", "/proc/self/mountinfo": mountinfoHybrid},
	}, {
		name: "group above the cgroup namespace's root: no mount holds it",
		files: files{
			"/proc/self/cgroup":                 "0::/../sibling\n",
			"/proc/self/mountinfo":              mountinfoV2Container,
			"/sys/fs/cgroup/cgroup.controllers": "memory\n",
		},
	}, {
		name: "no cgroup mount holds the process's group",
		files: files{
			"/proc/self/cgroup":    "4:memory:/other\n",
			"/proc/self/mountinfo": "888 883 0:35 /docker/4be1c0ffee /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, ok, err := Locate(tt.files.reader())
			require.NoError(t, err)
			require.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, g)
		})
	}
}

func TestLocateProcReadsTheGivenProcess(t *testing.T) {
	f := files{
		"/proc/4242/cgroup":    "4:memory:/np-cgtest-1\n0::/\n",
		"/proc/4242/mountinfo": mountinfoHybrid,
	}
	g, ok, err := LocateProc(f.reader(), "/proc/4242")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "/sys/fs/cgroup/memory/np-cgtest-1", g.Dir)
}

func TestLocateErrsWhenAFileCannotBeRead(t *testing.T) {
	denied := errors.New("permission denied")
	t.Run("mountinfo missing while cgroup lists a memory controller", func(t *testing.T) {
		_, ok, err := Locate(v1Exec().without("/proc/self/mountinfo").reader())
		require.ErrorIs(t, err, fs.ErrNotExist)
		assert.False(t, ok)
	})
	t.Run("cgroup unreadable", func(t *testing.T) {
		_, ok, err := Locate(func(string) ([]byte, error) { return nil, denied })
		require.ErrorIs(t, err, denied)
		assert.False(t, ok)
	})
	t.Run("v2 cgroup.controllers unreadable", func(t *testing.T) {
		f := v2Exec()
		read := func(name string) ([]byte, error) {
			if name == v2Container+"/cgroup.controllers" {
				return nil, denied
			}
			return f.reader()(name)
		}
		_, ok, err := Locate(read)
		require.ErrorIs(t, err, denied)
		assert.False(t, ok)
	})
}

func TestParseProcCgroupSkipsMalformedLines(t *testing.T) {
	v1, v2 := parseProcCgroup([]byte("garbage\n4:memory\n5:memory:relative\n::\n\n4:memory:/a:b\n0::/c\n0::/second\n"))
	assert.Equal(t, "/a:b", v1, "a path may hold a colon")
	assert.Equal(t, "/c", v2)
}

func TestParseMountinfoSkipsMalformedLines(t *testing.T) {
	m := parseMountinfo([]byte("short line\n1 2 3 4 5 6 - cgroup2\n1 2 3:4 / /x rw - cgroup\n" +
		"1 2 3:4 / /y rw shared:1 master:2 - cgroup cgroup rw,memory\n1 2 3:4 / /z rw -\n"))
	assert.Equal(t, []mount{{version: V2, root: "4", point: "5"}, {version: V1, root: "/", point: "/y"}}, m)
}
