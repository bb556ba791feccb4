package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Tests against the real kernel: a child process (this test binary run
// again as a helper) moved into a v1 memory cgroup the test creates,
// allocating and writing files on command. They need root and a writable
// v1 memory controller, and are skipped without them. Each cgroup is
// removed when its test ends, pass or fail: the helper is killed by its
// PID, anything left in the group is moved to the parent, and the
// directory is removed.

// helperEnv makes the test binary run runHelper instead of the tests.
const helperEnv = "NP_CGTEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(runHelper(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// runHelper runs the helper's commands, one a line, answering each with a
// line "ok [result]" or "err message":
//
//	ping                              answer
//	alloc MIB                         map MIB MiB of anonymous memory, populated by the kernel
//	allocwatch MIB FILE THRESHOLD     the same, 1 MiB at a time, reading FILE (a usage) after each;
//	                                  the result is the wall times, in ns, before mapping the MiB
//	                                  after which it first read >= THRESHOLD and after that read:
//	                                  the crossing happened between the two
//	free                              unmap all of it
//	freewatch FILE THRESHOLD          the same, one mapping at a time, reading FILE after each; the
//	                                  result is the wall times, in ns, before unmapping the one
//	                                  after which it first read < THRESHOLD and after that read
//	spill MIB PATH                    write MIB MiB to PATH and fsync it: clean page cache
//
// The kernel populates the mappings (MAP_POPULATE), so the helper's own
// writes, and the race detector's shadow of them, do not add to what it
// holds. It exits at the end of its input, so it never outlives the test.
func runHelper(in io.Reader, out io.Writer) int {
	var maps [][]byte
	answer := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	mapMiB := func(n int) error {
		b, err := unix.Mmap(-1, 0, n<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
		if err == nil {
			maps = append(maps, b)
		}
		return err
	}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		n := 0
		if len(f) > 1 {
			n, _ = strconv.Atoi(f[1])
		}
		switch f[0] {
		case "ping":
			answer("ok")
		case "alloc":
			if err := mapMiB(n); err != nil {
				answer("err %v", err)
				continue
			}
			answer("ok")
		case "allocwatch":
			threshold, _ := strconv.ParseInt(f[3], 10, 64)
			var before, after int64
			var err error
			for range n {
				start := time.Now().UnixNano()
				if err = mapMiB(1); err != nil {
					break
				}
				if b, rerr := os.ReadFile(f[2]); after == 0 && rerr == nil {
					if u, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); u >= threshold {
						before, after = start, time.Now().UnixNano()
					}
				}
			}
			if err != nil {
				answer("err %v", err)
				continue
			}
			answer("ok %d %d", before, after)
		case "free", "freewatch":
			var threshold, before, after int64
			if f[0] == "freewatch" {
				threshold, _ = strconv.ParseInt(f[2], 10, 64)
			}
			for _, m := range maps {
				start := time.Now().UnixNano()
				unix.Munmap(m)
				if threshold == 0 || after != 0 {
					continue
				}
				if b, rerr := os.ReadFile(f[1]); rerr == nil {
					if u, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); u < threshold {
						before, after = start, time.Now().UnixNano()
					}
				}
			}
			maps = nil
			answer("ok %d %d", before, after)
		case "spill":
			if err := spill(f[2], n); err != nil {
				answer("err %v", err)
				continue
			}
			answer("ok")
		default:
			answer("err unknown command %q", f[0])
		}
	}
	return 0
}

// spill writes n MiB to path and fsyncs it, as an operator's spill does.
// Its buffer is small so that what it adds to the helper's anonymous
// memory (the buffer, and under the race detector its shadow) stays far
// below what the test tells apart.
func spill(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	buf := make([]byte, 64<<10)
	for i := range buf {
		buf[i] = byte(i)
	}
	for range n << 4 {
		if _, err := f.Write(buf); err != nil {
			f.Close()
			return err
		}
	}
	return errors.Join(f.Sync(), f.Close())
}

// helper is a running helper process.
type helper struct {
	cmd    *exec.Cmd
	pid    int
	in     io.Writer
	out    *bufio.Scanner
	waited bool
}

// do sends one command and returns the result of its answer.
func (h *helper) do(command string) (string, error) {
	if _, err := fmt.Fprintln(h.in, command); err != nil {
		return "", err
	}
	if !h.out.Scan() {
		return "", fmt.Errorf("helper: no answer to %q: %v", command, h.out.Err())
	}
	line := h.out.Text()
	if rest, ok := strings.CutPrefix(line, "ok"); ok {
		return strings.TrimSpace(rest), nil
	}
	return "", fmt.Errorf("helper: %q: %s", command, line)
}

// must is do, failing the test on an error.
func (h *helper) must(t *testing.T, command string) string {
	t.Helper()
	res, err := h.do(command)
	require.NoError(t, err)
	return res
}

// v1MemoryMount returns the mount point of this process's v1 memory
// controller, skipping the test when there is none it may write to.
func v1MemoryMount(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test creates a memory cgroup and moves a process into it")
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Skipf("no /proc/self/mountinfo: %v", err)
	}
	for _, m := range parseMountinfo(mi) {
		if m.version == V1 {
			return m.point
		}
	}
	t.Skip("no cgroup-v1 memory controller mounted")
	return ""
}

// newV1Cgroup creates the v1 memory cgroup np-cgtest-<pid>-<name> under the
// controller's mount point, limited to limit bytes, and removes it when the
// test ends. It skips the test when the controller is not writable.
func newV1Cgroup(t *testing.T, name string, limit int64) (dir, parent string) {
	t.Helper()
	parent = v1MemoryMount(t)
	dir = filepath.Join(parent, fmt.Sprintf("np-cgtest-%d-%s", os.Getpid(), name))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("no writable cgroup-v1 memory controller at %s: %v", parent, err)
	}
	t.Cleanup(func() { removeCgroup(t, dir, parent) })
	require.NoError(t, os.WriteFile(dir+"/memory.limit_in_bytes", []byte(strconv.FormatInt(limit, 10)), 0o644))
	return dir, parent
}

// removeCgroup moves whatever is left in dir to parent and removes dir,
// retrying while the kernel still holds it (a killed process's exit).
func removeCgroup(t *testing.T, dir, parent string) {
	var err error
	for range 250 {
		if b, rerr := os.ReadFile(dir + "/cgroup.procs"); rerr == nil {
			for _, pid := range strings.Fields(string(b)) {
				if werr := os.WriteFile(parent+"/cgroup.procs", []byte(pid), 0o644); werr != nil {
					t.Logf("moving %s out of %s: %v", pid, dir, werr)
				}
			}
		}
		if err = unix.Rmdir(dir); err == nil || errors.Is(err, unix.ENOENT) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("cgroup %s left behind: %v", dir, err)
}

// startHelper starts a helper and moves it into the cgroup dir. The helper
// is killed, by its PID, when the test ends.
func startHelper(t *testing.T, dir string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1", "GOMAXPROCS=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	h := &helper{cmd: cmd, pid: cmd.Process.Pid, in: in, out: bufio.NewScanner(out)}
	t.Cleanup(func() {
		if !h.waited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	require.NoError(t, os.WriteFile(dir+"/cgroup.procs", []byte(strconv.Itoa(h.pid)), 0o644))
	h.must(t, "ping")
	return h
}

// locateHelper is Locate from the helper's point of view.
func locateHelper(t *testing.T, h *helper, dir string) Group {
	t.Helper()
	g, ok, err := LocateProc(os.ReadFile, fmt.Sprintf("/proc/%d", h.pid))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, V1, g.Version)
	require.Equal(t, dir, g.Dir)
	return g
}

// read is g.Read(os.ReadFile), failing the test on an error.
func read(t *testing.T, g Group) Reading {
	t.Helper()
	r, err := g.Read(os.ReadFile)
	require.NoError(t, err)
	return r
}

// notTmpfs skips the test when dir is on tmpfs, where a file is shared
// memory, not page cache.
func notTmpfs(t *testing.T, dir string) {
	t.Helper()
	var st unix.Statfs_t
	require.NoError(t, unix.Statfs(dir, &st))
	if st.Type == unix.TMPFS_MAGIC {
		t.Skipf("%s is tmpfs: a spill there is shared memory, not page cache", dir)
	}
}

func mibs(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/float64(mib)) }

func TestRealV1ReadSeesAnonymousMemoryAndNotCleanPageCache(t *testing.T) {
	dir, _ := newV1Cgroup(t, "read", 512*mib)
	h := startHelper(t, dir)
	g := locateHelper(t, h, dir)
	proc := fmt.Sprintf("/proc/%d", h.pid)
	s, err := NewSampler(g)
	require.NoError(t, err)
	defer s.Close()

	r0 := read(t, g)
	assert.Equal(t, 512*mib, r0.Limit)
	assert.Equal(t, int64(0), r0.OOMKills)
	assert.Equal(t, -1.0, r0.PressureSome10)
	res0, err := ProcessResidentProc(os.ReadFile, proc)
	require.NoError(t, err)

	h.must(t, "alloc 64")
	r1 := read(t, g)
	res1, err := ProcessResidentProc(os.ReadFile, proc)
	require.NoError(t, err)
	t.Logf("64 MiB allocated: Anon +%s, Unreclaimable +%s, Usage +%s; the helper's RssAnon+RssShmem +%s",
		mibs(r1.Anon-r0.Anon), mibs(r1.Unreclaimable-r0.Unreclaimable), mibs(r1.Usage-r0.Usage), mibs(res1-res0))
	assert.InDelta(t, 64*mib, r1.Anon-r0.Anon, float64(4*mib))
	assert.InDelta(t, 64*mib, r1.Unreclaimable-r0.Unreclaimable, float64(4*mib))
	assert.GreaterOrEqual(t, r1.Usage-r0.Usage, 62*mib)
	assert.InDelta(t, 64*mib, res1-res0, float64(4*mib))

	sr, err := s.Read()
	require.NoError(t, err)
	assert.InDelta(t, r1.Anon, sr.Anon, float64(2*mib), "the Sampler reads the same group")
	assert.Equal(t, r1.Limit, sr.Limit)

	spillDir := t.TempDir()
	notTmpfs(t, spillDir)
	h.must(t, "spill 30 "+filepath.Join(spillDir, "spill"))
	r2 := read(t, g)
	t.Logf("30 MiB spilled and fsynced: Usage +%s, File +%s, Unreclaimable %+d KiB (Dirty %d KiB, Writeback %d KiB)",
		mibs(r2.Usage-r1.Usage), mibs(r2.File-r1.File), (r2.Unreclaimable-r1.Unreclaimable)>>10, r2.Dirty>>10, r2.Writeback>>10)
	assert.GreaterOrEqual(t, r2.Usage-r1.Usage, 28*mib, "page cache is charged to the group")
	assert.GreaterOrEqual(t, r2.File-r1.File, 28*mib)
	assert.InDelta(t, 0, r2.Unreclaimable-r1.Unreclaimable, float64(2*mib), "clean page cache is not unreclaimable")
	assert.Equal(t, int64(0), r2.OOMKills)
}

func TestRealV1NotifyAboveWakesOnCrossingsBothWays(t *testing.T) {
	dir, _ := newV1Cgroup(t, "notify", 512*mib)
	h := startHelper(t, dir)
	g := locateHelper(t, h, dir)
	base := runtime.NumGoroutine()

	threshold := read(t, g).Usage + 32*mib
	w, err := g.NotifyAbove(threshold)
	require.NoError(t, err)
	assert.False(t, received(w.C(), 200*time.Millisecond), "no wake-up while usage stays below")

	type answer struct {
		res string
		err error
	}
	answers := make(chan answer, 1)
	go func() {
		res, err := h.do(fmt.Sprintf("allocwatch 64 %s/memory.usage_in_bytes %d", dir, threshold))
		answers <- answer{res, err}
	}()
	require.True(t, received(w.C(), 10*time.Second), "a wake-up when usage crosses the threshold upwards")
	woke := time.Now()
	a := <-answers
	require.NoError(t, a.err)
	early, late := wakeLatency(t, a.res, woke)
	assert.GreaterOrEqual(t, read(t, g).Usage, threshold)
	t.Logf("upwards: woke %v to %v after usage crossed the threshold", early, late)

	frees := make(chan answer, 1)
	go func() {
		res, err := h.do(fmt.Sprintf("freewatch %s/memory.usage_in_bytes %d", dir, threshold))
		frees <- answer{res, err}
	}()
	require.True(t, received(w.C(), 10*time.Second), "a wake-up when usage crosses the threshold downwards")
	woke = time.Now()
	a = <-frees
	require.NoError(t, a.err)
	early, late = wakeLatency(t, a.res, woke)
	assert.Less(t, read(t, g).Usage, threshold)
	t.Logf("downwards: woke %v to %v after usage crossed the threshold", early, late)

	require.NoError(t, w.Close())
	require.NoError(t, w.Close())
	settledGoroutines(t, base)
}

// wakeLatency returns how long after the crossing the watch woke, at woke:
// the helper's answer gives the wall times between which the crossing
// happened, so the latency lies between woke minus the later (the result's
// lower bound, negative when the wake-up came before the helper's read
// returned) and woke minus the earlier.
func wakeLatency(t *testing.T, res string, woke time.Time) (low, high time.Duration) {
	t.Helper()
	var before, after int64
	_, err := fmt.Sscan(res, &before, &after)
	require.NoError(t, err, "answer %q", res)
	require.NotZero(t, after, "the helper saw usage cross the threshold")
	return woke.Sub(time.Unix(0, after)), woke.Sub(time.Unix(0, before))
}

func TestRealV1OOMKillIsCounted(t *testing.T) {
	dir, _ := newV1Cgroup(t, "oom", 64*mib)
	h := startHelper(t, dir)
	g := locateHelper(t, h, dir)
	require.Equal(t, int64(0), read(t, g).OOMKills)

	_, err := h.do("alloc 128")
	require.Error(t, err, "the helper cannot answer: the OOM killer took it")
	err = h.cmd.Wait()
	h.waited = true
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	st, ok := exit.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	require.True(t, st.Signaled() && st.Signal() == syscall.SIGKILL, "killed by SIGKILL: %v", err)
	r := read(t, g)
	assert.Equal(t, int64(1), r.OOMKills)
	t.Logf("after the kill: OOMKills %d, Usage %s of Limit %s", r.OOMKills, mibs(r.Usage), mibs(r.Limit))
}

// unifiedGroup returns this process's group in the unified hierarchy, with
// no regard to where the memory controller is: PSI is cgroup core, so every
// v2 group has a memory.pressure, even on a hybrid host whose memory
// controller is v1's. It skips the test when there is none.
func unifiedGroup(t *testing.T) Group {
	t.Helper()
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Skipf("no /proc/self/cgroup: %v", err)
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	_, p := parseProcCgroup(cg)
	dir, _, ok := mountDir(parseMountinfo(mi), V2, p)
	if p == "" || !ok {
		t.Skip("no unified cgroup hierarchy mounted")
	}
	if _, err := os.Stat(dir + "/memory.pressure"); err != nil {
		t.Skipf("no PSI in the unified hierarchy: %v", err)
	}
	return Group{Version: V2, Path: p, Dir: dir, LimitDirs: []string{dir}}
}

func TestRealPressureTriggerWakesOnMemoryStalls(t *testing.T) {
	g := unifiedGroup(t)
	base := runtime.NumGoroutine()

	_, err := g.NotifyPressure(1000, 100_000)
	require.ErrorIs(t, err, errors.ErrUnsupported, "the kernel refuses a window below 500 ms")

	// 1 ms of stall in a 2 s window: a multiple of 2 s, which a process
	// without CAP_SYS_RESOURCE must use.
	w, err := g.NotifyPressure(1000, 2_000_000)
	if errors.Is(err, errors.ErrUnsupported) && os.Geteuid() != 0 {
		t.Skipf("no PSI trigger for this user: %v", err)
	}
	require.NoError(t, err)
	defer w.Close()

	// Stalls: a helper in a 32 MiB v1 memory group writing 256 MiB, so the
	// kernel reclaims its page cache, dirty pages included, on every charge.
	// The helper stays in this process's unified group, whose pressure the
	// trigger watches.
	dir, _ := newV1Cgroup(t, "psi", 32*mib)
	h := startHelper(t, dir)
	spillDir := t.TempDir()
	notTmpfs(t, spillDir)
	done := make(chan error, 1)
	start := time.Now()
	go func() { _, err := h.do("spill 256 " + filepath.Join(spillDir, "spill")); done <- err }()
	require.True(t, received(w.C(), 20*time.Second), "a wake-up once the reclaim stalls add up to 1 ms in 2 s")
	t.Logf("pressure trigger woke %v after the spill began", time.Since(start))
	require.NoError(t, <-done)
	if b, err := os.ReadFile(g.Dir + "/memory.pressure"); err == nil {
		p, _ := pressureSome10(b)
		t.Logf("the unified group's memory.pressure, some avg10: %.2f%%", p)
	}

	require.NoError(t, w.Close())
	settledGoroutines(t, base)
}
