# Helpers both cluster scripts source (run.sh, lost-executor.sh). The sourcing script defines
# say <message>, its own prefixed line on stdout, and the array failed.

check() { # check <name> <function>
	if "$2"; then echo "PASS $1"; else echo "FAIL $1"; failed+=("$1"); fi
}

stamp_of() { # stamp_of <jar> <key>: a value of the jar's line stamp
	python3 -c 'import sys, zipfile
for l in zipfile.ZipFile(sys.argv[1]).read("org/nativepool/native/version.properties").decode().splitlines():
    if l.startswith(sys.argv[2] + "="): print(l.split("=", 1)[1])' "$1" "$2"
}

descendants() { # descendants <pid>: every process below it, read from /proc (no procps needed)
	local s line rest pid ppid p c
	local -A kids=()
	for s in /proc/[0-9]*/stat; do
		{ line=$(<"$s"); } 2>/dev/null || continue
		rest=${line##*) } # the fields after "(comm)", which may hold spaces: state ppid ...
		read -r _ ppid _ <<<"$rest"
		pid=${s#/proc/}
		kids[$ppid]+="${pid%/stat} "
	done
	local queue=("$1") out=()
	while ((${#queue[@]} > 0)); do
		p=${queue[0]}
		queue=("${queue[@]:1}")
		for c in ${kids[$p]:-}; do
			out+=("$c")
			queue+=("$c")
		done
	done
	echo "${out[@]:-}"
}

wait_for() { # wait_for <seconds> <file> <pattern> [pid]: fails early if pid has exited
	local deadline=$(($(date +%s) + $1))
	until grep -q -- "$3" "$2" 2>/dev/null; do
		if (($(date +%s) >= deadline)) || { [[ -n ${4:-} ]] && ! kill -0 "$4" 2>/dev/null; }; then
			say "no '$3' in $2 after $1 s" >&2
			tail -20 "$2" >&2 || true
			return 1
		fi
		sleep 0.5
	done
}
