import json,sys,math
# usage: ratios.py BENCH.json...: per graph go-zeroshot / best-baseline of a
# `gopt bench --json` file, and their geomean (an invalid or OOM zero-shot
# plan counts 10x; graphs where no baseline fits are left out)
for f in sys.argv[1:]:
    d=json.load(open(f))
    by={}
    for r in d['rows']:
        by.setdefault(r['graph'],{})[r['method'].split(' ')[0]]=r
    rs=[]; parts=[]
    for g,m in by.items():
        z=m.get('go-zeroshot'); b=m.get('best-baseline')
        if not z or not b or not b.get('valid') or b.get('oom') or 'step_time_s' not in b: continue
        r=z['step_time_s']/b['step_time_s'] if z.get('valid') and not z.get('oom') else 10
        rs.append(r); parts.append(f"{g.split('.')[0]}={r:.3f}")
    print(f.split('/')[-1], d['topology'], f"geomean={math.exp(sum(map(math.log,rs))/len(rs)):.4f}", ' '.join(parts))
