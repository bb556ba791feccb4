// Package writeback writes the files spills wrote to disk and drops them
// from the page cache, so that the memory a spill freed can leave the
// process's memory group.
//
// A spill moves bytes from anonymous memory into a file's page cache. Until
// those pages are written, they are dirty, and a memory group cannot
// reclaim a dirty page: under a cgroup's limit the spill has freed nothing
// yet. The kernel writes dirty pages back on its own schedule (after about
// 30 s, or when a global threshold is crossed), which is too late for a
// process at its limit. The pod guard therefore asks for the writeback of
// the spill files themselves, not of the whole system (sync(2) would wait
// for every other process's writes too): Dirs.WriteBack walks the
// directories spills write in (Spark's local directories, an engine's spill
// directory) for files modified recently, writes each one's dirty pages
// (sync_file_range, waiting for them) and then drops its clean pages
// (posix_fadvise POSIX_FADV_DONTNEED), which the group would otherwise keep
// charged until the kernel reclaims them under pressure. Dirs.WriteBackMapped
// does the same for the recently written files the process maps: an
// engine's native library, extracted into the temporary directory when it
// loads, is as dirty as a spill file.
//
// Where the platform has neither call (not Linux), WriteBack finds the
// files and does nothing with them. The package is pure Go (no cgo).
//
// # Where each job lives
//
//	dirs.go       Dirs: the directories, the walk, the result
//	mapped.go     MappedFiles, Dirs.WriteBackMapped: the files the process maps
//	              (native libraries extracted at load), from /proc/self/maps
//	sync_linux.go sync_file_range and posix_fadvise on one file
//	sync_other.go nothing, elsewhere
package writeback
