package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"testing"
	"time"
)

// fakeProc is a /proc of stat files, pid -> line.
type fakeProc map[int]string

func (p fakeProc) read(name string) ([]byte, error) {
	var pid int
	if _, err := fmt.Sscanf(name, "/proc/%d/stat", &pid); err != nil {
		return nil, fmt.Errorf("unexpected read %s", name)
	}
	line, ok := p[pid]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return []byte(line), nil
}

func (p fakeProc) list() ([]int, error) {
	pids := make([]int, 0, len(p))
	for pid := range p {
		pids = append(pids, pid)
	}
	return pids, nil
}

// stat is a /proc/<pid>/stat line as Linux writes it, with the fields a
// Tree reads set and the others plausible.
func stat(pid int, comm string, ppid, session int, rssPages int64) string {
	return fmt.Sprintf("%d (%s) S %d %d %d 0 -1 4194560 1402 0 0 0 3 1 0 0 20 0 1 0 4211 9510912 %d 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
		pid, comm, ppid, pid, session, rssPages)
}

const page = 4096

// yarnContainer is a NodeManager (a JVM in its own session) and one
// container it launched with setsid: the launch script's bash leads the
// container's session, the executor JVM is its child, and the JVM's
// PySpark daemon has a worker. An unrelated process shares nothing.
func yarnContainer() fakeProc {
	return fakeProc{
		1:   stat(1, "init", 0, 1, 100),
		100: stat(100, "java", 1, 100, 50_000),   // the NodeManager
		200: stat(200, "bash", 100, 100, 800),    // default_container_executor.sh
		300: stat(300, "bash", 200, 300, 900),    // launch_container.sh, setsid: leads session 300
		400: stat(400, "java", 300, 300, 70_000), // the executor
		500: stat(500, "python3", 400, 300, 5_000),
		600: stat(600, "python3", 500, 300, 30_000), // a worker the daemon forked
		700: stat(700, "sleep", 1, 700, 10),
	}
}

func TestTreeReaderSumsTheContainersSessionLeaderAndEveryDescendant(t *testing.T) {
	tr, err := NewTreeReader(yarnContainer().read, yarnContainer().list, 400, page, 0).Read()
	if err != nil {
		t.Fatal(err)
	}
	want := Tree{Root: 300, Resident: (900 + 70_000 + 5_000 + 30_000) * page, Self: 70_000 * page, Processes: 4,
		Others: []TreeProcess{{600, "python3", 30_000 * page}, {500, "python3", 5_000 * page}, {300, "bash", 900 * page}}}
	if fmt.Sprint(tr) != fmt.Sprint(want) {
		t.Fatalf("got  %+v\nwant %+v", tr, want)
	}
}

func TestTreeReaderRootsAtItselfWhenItLeadsItsSession(t *testing.T) {
	p := yarnContainer()
	p[400] = stat(400, "java", 300, 400, 70_000) // a session of its own: no shell above it counts
	tr, err := NewTreeReader(p.read, p.list, 400, page, 0).Read()
	if err != nil {
		t.Fatal(err)
	}
	if tr.Root != 400 || tr.Processes != 3 || tr.Resident != (70_000+5_000+30_000)*page {
		t.Fatalf("%+v: want the JVM and its workers, not the shell above it", tr)
	}
}

func TestTreeReaderStopsBelowAnAncestorThatIsNoLaunchShell(t *testing.T) {
	// Without setsid the container shares the NodeManager's session: the
	// walk up stops at the NodeManager's JVM, never counting it.
	p := yarnContainer()
	for pid, s := range map[int]string{
		200: stat(200, "bash", 100, 100, 800),
		300: stat(300, "bash", 200, 100, 900),
		400: stat(400, "java", 300, 100, 70_000),
		500: stat(500, "python3", 400, 100, 5_000),
		600: stat(600, "python3", 500, 100, 30_000),
	} {
		p[pid] = s
	}
	tr, err := NewTreeReader(p.read, p.list, 400, page, 0).Read()
	if err != nil {
		t.Fatal(err)
	}
	if tr.Root != 200 || tr.Resident != (800+900+70_000+5_000+30_000)*page {
		t.Fatalf("%+v: want the tree of the wrapper script 200, not the NodeManager 100", tr)
	}
}

func TestTreeReaderCountsANewProcessFromTheNextRescan(t *testing.T) {
	p := yarnContainer()
	delete(p, 600)
	now := time.Unix(1000, 0)
	r := NewTreeReader(p.read, p.list, 400, page, time.Second)
	r.now = func() time.Time { return now }
	first, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	p[600] = stat(600, "python3", 500, 300, 30_000)
	now = now.Add(999 * time.Millisecond)
	if again, _ := r.Read(); again.Resident != first.Resident {
		t.Fatalf("before the rescan: %d, want %d (the new worker not yet listed)", again.Resident, first.Resident)
	}
	now = now.Add(time.Millisecond)
	if later, _ := r.Read(); later.Resident != first.Resident+30_000*page {
		t.Fatalf("after the rescan: %d, want %d", later.Resident, first.Resident+30_000*page)
	}
}

func TestTreeReaderCountsNothingForAMemberThatExited(t *testing.T) {
	p := yarnContainer()
	r := NewTreeReader(p.read, p.list, 400, page, time.Hour)
	if _, err := r.Read(); err != nil {
		t.Fatal(err)
	}
	delete(p, 600)
	tr, err := r.Read()
	if err != nil || tr.Processes != 3 || tr.Resident != (900+70_000+5_000)*page {
		t.Fatalf("%+v, %v: want the three left", tr, err)
	}
}

func TestTreeReaderFailsWithoutItsOwnProcess(t *testing.T) {
	p := yarnContainer()
	if _, err := NewTreeReader(p.read, p.list, 999, page, 0).Read(); err == nil {
		t.Fatal("read a tree for a process that does not exist")
	}
}

func TestParseStatReadsACommWithSpacesAndParentheses(t *testing.T) {
	s, err := parseStat([]byte(stat(42, "a) (b c", 7, 9, 123)))
	if err != nil {
		t.Fatal(err)
	}
	if s != (procStat{comm: "a) (b c", ppid: 7, session: 9, rss: 123}) {
		t.Fatalf("%+v", s)
	}
}

func TestParseStatRejectsTruncatedLines(t *testing.T) {
	for _, line := range []string{"", "42 (java", "42 (java) S 1 42 42 0"} {
		if _, err := parseStat([]byte(line)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: %v, want ErrMalformed", line, err)
		}
	}
}

// TestTreeReaderCountsThisProcessesChild reads the real /proc: a child of
// the test process is in its tree, with the rss the kernel reports.
func TestTreeReaderCountsThisProcessesChild(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep:", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	r := NewTreeReader(os.ReadFile, ProcPIDs, os.Getpid(), int64(os.Getpagesize()), 0)
	var tr Tree
	var child *TreeProcess
	// until the child has exec'd sleep and touched its pages
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var err error
		if tr, err = r.Read(); err != nil {
			t.Fatal(err)
		}
		child = nil
		for i := range tr.Others {
			if tr.Others[i].PID == cmd.Process.Pid {
				child = &tr.Others[i]
			}
		}
		if child != nil && child.Command == "sleep" && child.Resident > 0 {
			break
		}
	}
	if child == nil || child.Command != "sleep" || child.Resident <= 0 {
		t.Fatalf("%+v: no sleep %d with resident pages", tr, cmd.Process.Pid)
	}
	if tr.Self <= 0 || tr.Resident < tr.Self+child.Resident {
		t.Fatalf("%+v: the tree holds less than this process and its child", tr)
	}
}
