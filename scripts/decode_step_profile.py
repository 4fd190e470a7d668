"""Where one decode step's time goes, from an Nsight Systems profile of `gpt2`.

usage: nsys profile -t cuda --cuda-graph-trace=node -o step build/ch09/bin/gpt2 ... --decode=fused
       nsys export --type sqlite -o step.sqlite step.nsys-rep
       python3 scripts/decode_step_profile.py step.sqlite

Takes the kernels of the replayed graphs (the steps begin at the embedding kernel), ten
steps from the middle of the run, and prints per kernel of the step (the layers' kernels by
their place in the layer): calls per step, the mean duration (first CTA's start to the last
CTA's end: with programmatic launches a kernel starts before the one before it has ended),
and the end-to-end time, from the previous kernel's end to this one's, which adds up to the
step: the share of the step each kernel's place in the chain costs.
"""
import collections
import sqlite3
import sys

db = sqlite3.connect(sys.argv[1])
cols = [r[1] for r in db.execute("pragma table_info(CUPTI_ACTIVITY_KIND_KERNEL)")]
gn = "k.graphNodeId" if "graphNodeId" in cols else "0"
rows = db.execute(
    f"select k.start, k.end, s.value, {gn} from CUPTI_ACTIVITY_KIND_KERNEL k "
    "join StringIds s on k.shortName = s.id order by k.start"
).fetchall()
graph = [r for r in rows if r[3]]
print("kernels", len(rows), "in graphs", len(graph))
rows = graph or rows
idx = [i for i, r in enumerate(rows) if "embedding" in r[2]]
steps = [rows[a:b] for a, b in zip(idx, idx[1:])]
steps = steps[-12:-2] if len(steps) > 12 else steps[1:]
print(
    "steps",
    len(steps),
    "kernels/step",
    [len(s) for s in steps][:3],
    "step us",
    [round((s[-1][1] - s[0][0]) / 1e3, 1) for s in steps][:6],
    "start-to-start us",
    [round((b[0][0] - a[0][0]) / 1e3, 1) for a, b in zip(steps, steps[1:])][:6],
)
agg = collections.OrderedDict()
for st in steps:
    prev = st[0][0]
    L = (len(st) - 3) // 5
    for i, (s, e, n, _) in enumerate(st):
        key = f"layer op {(i - 1) % 5}: {n[:36]}" if 1 <= i <= 5 * L else n[:48]
        a = agg.setdefault(key, [0, 0.0, 0.0, 0.0])
        a[0] += 1
        a[1] += e - s
        a[2] += e - prev
        a[3] += max(0, s - prev)
        prev = max(prev, e)
ns = len(steps)
print(f"{'kernel':48s} per-step  dur-us  end-to-end-us  gap-us  total-end-to-end-us/step")
for n, (c, d, inc, gap) in agg.items():
    print(f"{n:48s} {c / ns:6.0f} {d / c / 1e3:8.2f} {inc / c / 1e3:10.2f} {gap / c / 1e3:8.2f} {inc / ns / 1e3:10.1f}")
# per-layer position pattern in one middle step: (name, start offset, dur, end delta)
st = steps[len(steps) // 2]
print("one step, kernels 1..13 (start, dur, end-delta us):")
prev = st[0][1]
for s, e, n, _ in st[1:14]:
    print(f"  {n[:40]:40s} {(s - st[0][0]) / 1e3:8.2f} {(e - s) / 1e3:7.2f} {(e - prev) / 1e3:7.2f}")
    prev = e
