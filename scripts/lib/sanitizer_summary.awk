# Reads the output of one compute-sanitizer run (any tool) plus the GoogleTest output mixed
# into it, and prints tab-separated lines for scripts/sanitize.sh:
#
#   SUMMARY <findings reported by the tool's summary line, or -1 when it printed none>
#   TESTS   <passed> <failed> <skipped>        (-1 each when no GoogleTest summary was seen)
#   FINDING <count> <message> <kernel> <location>   (identical findings grouped)
#
# Handles both layouts of the "at" line that compute-sanitizer versions print:
#   at kernel(float *, int)+0x70 in /path/file.cu:25        (newer)
#   at 0x00000070 in /path/file.cu:25:kernel(float *, int)  (older)
# and no source line at all when the program was built without -lineinfo.
#
# usage: awk -v root=/path/to/repo -f sanitizer_summary.awk LOG
# Portable awk (mawk, gawk, busybox): no gawk extensions.

function trim(s) {
  sub(/^[ \t]+/, "", s)
  sub(/[ \t\r]+$/, "", s)
  return s
}

# Shortens a demangled kernel name: no return type, no "(anonymous namespace)::", no
# argument list: "void (anonymous namespace)::k<1>(float *, int)" -> "k<1>".
function short_kernel(k,    depth, i, c) {
  k = trim(k)
  sub(/^void /, "", k)
  gsub(/\(anonymous namespace\)::/, "", k)
  if (substr(k, length(k), 1) != ")") return k
  depth = 0
  for (i = length(k); i > 0; --i) {
    c = substr(k, i, 1)
    if (c == ")") depth++
    else if (c == "(") {
      depth--
      if (depth == 0) return substr(k, 1, i - 1)
    }
  }
  return k
}

function short_path(p) {
  if (root != "" && index(p, root "/") == 1) return substr(p, length(root) + 2)
  return p
}

# Splits the text after "at " into g_kernel and g_where.
function parse_at(s,    pos, rest, tail, n, parts, i) {
  s = trim(s)
  sub(/ \[[0-9]+ hazards?\]$/, "", s)
  g_kernel = ""
  g_where = "no source line (build with -lineinfo)"
  pos = index(s, " in ")
  if (pos == 0) {  # "kernel+0x70": no line information
    g_kernel = s
    sub(/\+0x[0-9a-fA-F]+$/, "", g_kernel)
    g_kernel = short_kernel(g_kernel)
    return
  }
  rest = substr(s, pos + 4)
  tail = substr(s, 1, pos - 1)
  if (tail ~ /^0x[0-9a-fA-F]+$/) {
    # Older layout: "0x70 in file.cu:25:kernel(...)" (or "0x70 in kernel(...)" without lines).
    if (match(rest, /:[0-9]+:/)) {
      g_where = short_path(substr(rest, 1, RSTART + RLENGTH - 2))
      g_kernel = short_kernel(substr(rest, RSTART + RLENGTH))
    } else {
      g_kernel = short_kernel(rest)
    }
    return
  }
  # Newer layout: "kernel(...)+0x70 in file.cu:25".
  g_kernel = tail
  sub(/\+0x[0-9a-fA-F]+$/, "", g_kernel)
  g_kernel = short_kernel(g_kernel)
  g_where = short_path(rest)
}

function flush_record() {
  if (cur_msg == "") return
  if (cur_kernel == "") cur_kernel = "-"
  if (cur_where == "") cur_where = "-"
  key = cur_msg SUBSEP cur_kernel SUBSEP cur_where
  if (!(key in count)) order[++norder] = key
  count[key]++
  cur_msg = cur_kernel = cur_where = ""
}

BEGIN {
  summary = -1
  passed = failed = skipped = -1
  norder = 0
}

{ sub(/\r$/, "") }

# GoogleTest's closing lines.
/^\[  PASSED  \] [0-9]+ test/ { split($0, w, " "); passed = w[4] + 0 }
/^\[  FAILED  \] [0-9]+ test/ { split($0, w, " "); failed = w[4] + 0 }
/^\[  SKIPPED \] [0-9]+ test/ { split($0, w, " "); skipped = w[4] + 0 }

# The tool's own count.
/^========= ERROR SUMMARY: [0-9]+ error/ {
  flush_record()
  split($0, w, " ")
  summary = w[4] + 0
  next
}
/^========= RACECHECK SUMMARY: / {
  flush_record()
  # "N hazards displayed (E errors, W warnings)": count errors and warnings.
  e = 0; wn = 0
  if (match($0, /\([0-9]+ error/)) e = substr($0, RSTART + 1, RLENGTH - 7) + 0
  if (match($0, /, [0-9]+ warning/)) wn = substr($0, RSTART + 2, RLENGTH - 10) + 0
  summary = e + wn
  next
}
/^========= LEAK SUMMARY: / { flush_record(); next }

# A new report starts with exactly one space after the marker.
/^========= [^ ]/ {
  flush_record()
  line = substr($0, 11)
  if (line ~ /^(COMPUTE-SANITIZER|Target application returned|Error: process didn't terminate|This tool|Saved host backtrace)/) next
  if (line ~ /(Race|race) reported between/) {
    # racecheck, analysis mode: "Error: Race reported between Write access at ... in f:40"
    kind = line
    sub(/ reported between.*/, "", kind)
    what = line
    sub(/^.*reported between /, "", what)
    sub(/ at .*/, "", what)
    pos = index(line, " access at ")
    if (pos > 0) {
      parse_at(substr(line, pos + 11))
      cur_kernel = g_kernel
      cur_where = g_where
    }
    cur_msg = kind " between " what
    in_race = 1
    next
  }
  cur_msg = trim(line)
  in_race = 0
  next
}

# Details of the current report (indented).
/^=========  +/ {
  if (cur_msg == "") next
  detail = trim(substr($0, 10))
  if (in_race && detail ~ /^and .* access at /) {
    acc = detail
    sub(/^and /, "", acc)
    sub(/ at .*/, "", acc)
    cur_msg = cur_msg " and " acc
    pos = index(detail, " access at ")
    parse_at(substr(detail, pos + 11))
    if (g_where != cur_where) {
      n = split(g_where, parts, ":")
      cur_where = cur_where " / line " parts[n]
    }
    next
  }
  if (cur_kernel == "" && (detail ~ /^at / || detail ~ /^(Read|Write) Thread .* at /)) {
    parse_at(substr(detail, index(detail, "at ") + 3))
    cur_kernel = g_kernel
    cur_where = g_where
    next
  }
  if (cur_kernel == "" && detail ~ /^Host Frame/) {
    cur_kernel = "(host API call)"
  }
  next
}

END {
  flush_record()
  print "SUMMARY\t" summary
  print "TESTS\t" passed "\t" failed "\t" skipped
  for (i = 1; i <= norder; ++i) {
    split(order[i], f, SUBSEP)
    print "FINDING\t" count[order[i]] "\t" f[1] "\t" f[2] "\t" f[3]
  }
}
