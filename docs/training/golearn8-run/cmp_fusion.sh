#!/bin/bash
# cmp_fusion.sh: best-baseline per graph with the build before greedy-join (OLD, default /tmp/old/gopt: that
# commit's gopt) and this build (build/bin/gopt); every real graph and generator preset, both machines.
cd "$(dirname "$0")/../../.."
OLD=${OLD:-/tmp/old/gopt}
D=../shared/data
for T in v100x4-nvlink h100x8-nvlink; do
  for f in $D/hlo/*.hlo $D/onnx/*.onnx $D/tf_graphdef/*.pb $D/tfjs/*.json $(build/bin/gopt generate list | sed -n 's/^  \([a-z0-9_-]*\):.*/gen:\1/p'); do
    dims=""
    case "$(basename $f)" in ch_ppocr*) dims="--dim=p2o.DynamicDimension.1=48,p2o.DynamicDimension.2=192";; silero*) dims="--dim=sequence=512";; esac
    for B in old new; do
      bin=$OLD; [ $B = new ] && bin=build/bin/gopt
      $bin bench --topology=$T --graph=$f --methods=best-baseline,single+fifo+greedy --json $dims 2>/dev/null > /tmp/cmp-$B.json
    done
    python3 - "$T" "$f" <<'PY'
import json,sys
def get(p):
    try: d=json.load(open(p))
    except Exception: return {}
    return {r['method']:r for r in d['rows']}
o=get('/tmp/cmp-old.json'); n=get('/tmp/cmp-new.json')
def st(r,m):
    x=r.get(m,{})
    if not x.get('valid') or x.get('oom',True): return None
    return x['step_time_s']*1e3
ob,nb=st(o,'best-baseline'),st(n,'best-baseline'); og,ng=st(o,'single+fifo+greedy'),st(n,'single+fifo+greedy')
f=lambda v: '-' if v is None else '%.4f'%v
r=lambda a,b: '-' if (a is None or b is None) else '%.3f'%(b/a)
print('%s %s | best %s -> %s (%s) | single+greedy %s -> %s (%s)'%(sys.argv[1],sys.argv[2].split('/')[-1],f(ob),f(nb),r(ob,nb),f(og),f(ng),r(og,ng)))
PY
  done
done
