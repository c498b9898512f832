#!/usr/bin/env bash
# Usage: bash tools/bench/cpu-breakdown.sh <command...>, e.g. `bash tools/bench/cpu-breakdown.sh npm run bench`:
# CPU seconds per process group (RabbitMQ, PostgreSQL, each service, the bench process) used while
# the command ran, sampled from /proc every second (a process that exits counts up to its last sample).
snap() { for p in /proc/[0-9]*; do pid=${p#/proc/}; { read -r st < $p/stat; } 2>/dev/null || continue; rest=${st#*) }; set -- $rest; cmd=$(tr '\0' ' ' < $p/cmdline 2>/dev/null | cut -c1-160); echo "$pid ${12} ${13} $cmd"; done; }
rm -f ${TMPDIR:-/tmp}/herald-cpu-samples.txt; snap > ${TMPDIR:-/tmp}/herald-cpu-before.txt
( while true; do snap >> ${TMPDIR:-/tmp}/herald-cpu-samples.txt; sleep 1; done ) & sampler=$!
"$@"
kill $sampler
python3 - <<'PY'
import os,re,collections
tmp=os.environ.get('TMPDIR','/tmp')
hz=100
def rows(f):
    for line in open(f):
        parts=line.rstrip('\n').split(' ',3)
        if len(parts)<4: parts+=['']
        try: yield parts[0],int(parts[1])+int(parts[2]),parts[3]
        except ValueError: pass
before={(p,c):t for p,t,c in rows(tmp+'/herald-cpu-before.txt')}
last={}
for p,t,c in rows(tmp+'/herald-cpu-samples.txt'):
    last[(p,c)]=max(t,last.get((p,c),0))
def group(cmd):
    if 'beam.smp' in cmd: return 'RabbitMQ (beam.smp)'
    if cmd.startswith('postgres'): return 'PostgreSQL (all backends)'
    m=re.search(r'dist/services/([^/]+)/main.mjs',cmd)
    if m: return 'service: '+m.group(1)
    if 'tools/bench' in cmd: return 'bench process (load generator + in-process sandboxes)'
    return 'other: '+(cmd.split(' ')[0] or '?')
groups=collections.Counter()
for k,t in last.items():
    d=t-before.get(k,0)
    if d>0: groups[group(k[1])]+=d/hz
tot=sum(groups.values())
for g,s in groups.most_common(20): print(f"{s:8.1f} s  {100*s/tot:5.1f}%  {g}")
print(f"{tot:8.1f} s  total CPU over the run")
PY
