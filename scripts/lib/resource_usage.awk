# Reads `cuobjdump --dump-resource-usage PROGRAM` and prints one tab-separated line per
# kernel and architecture, for scripts/resources.sh:
#
#   <arch> <registers> <shared bytes> <local bytes> <stack bytes> <mangled name>
#
# cuobjdump prints, for each embedded ELF image:
#   arch = sm_90
#   ...
#   Resource usage:
#    Function _Z6kernelPfi:
#     REG:16 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:364 TEXTURE:0 SURFACE:0 SAMPLER:0
# Portable awk (mawk, gawk, busybox).

function value(line, key,    pos, rest) {
  pos = index(line, key ":")
  if (pos == 0) return 0
  rest = substr(line, pos + length(key) + 1)
  sub(/[^0-9].*$/, "", rest)
  return rest + 0
}

/^[ \t]*arch[ \t]*=/ {
  arch = $0
  sub(/^[^=]*=[ \t]*/, "", arch)
  sub(/[ \t\r]+$/, "", arch)
  next
}

/^[ \t]*Function [^ ]+:[ \t\r]*$/ {
  name = $0
  sub(/^[ \t]*Function /, "", name)
  sub(/:[ \t\r]*$/, "", name)
  next
}

/REG:[0-9]+/ {
  if (name == "") next
  printf "%s\t%d\t%d\t%d\t%d\t%s\n", (arch == "" ? "?" : arch), value($0, "REG"), value($0, "SHARED"),
         value($0, "LOCAL"), value($0, "STACK"), name
  name = ""
}
