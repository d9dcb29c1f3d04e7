#!/usr/bin/env python3
"""Counts a module's matmul and convolution FLOPs from HLO text, by hand.

This is the independent check behind docs/real-graphs.md: it reads the text
with its own small regular expressions (it shares no code with gopt's
importer) and counts

  dot          2 * (output elements) * (product of the lhs contracting dims)
  convolution  2 * (output elements) * (kernel spatial elements)
                 * (input features / feature_group_count)

for every instruction of every computation reachable from ENTRY through
call / fusion / while / conditional (a while body counts once: pass
--trip N to scale loops by hand). Elementwise arithmetic is reported apart
(one FLOP per output element of add, subtract, multiply, divide, maximum,
minimum, power, sqrt, rsqrt, exp, log, logistic, tanh, negate) so the
reader can compare either total with `gopt inspect`.

Usage: hlo_flop_count.py FILE.hlo [--json]
"""

import json
import re
import sys

SHAPE = re.compile(r"^\s*(\(.*?\)|[a-z0-9]+\[[0-9,]*\](?:\{[^}]*\})?)\s*")
DIMS = re.compile(r"([a-z]+[0-9]*)\[([0-9,]*)\]")
INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
COMP = re.compile(r"^\s*(ENTRY\s+)?%?([\w.\-]+)\s*(\(.*\)\s*->.*)?\{\s*$")
ELEMENTWISE = {
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "power",
    "sqrt", "rsqrt", "exponential", "log", "logistic", "tanh", "negate",
}


def dims_of(shape_text):
  """Returns the dims of an array shape text like 'f32[3,4]{1,0}'."""
  m = DIMS.search(shape_text)
  if not m:
    return None
  return [int(d) for d in m.group(2).split(",") if d]


def product(values):
  out = 1
  for v in values:
    out *= v
  return out


def split_top(text):
  """Splits 'a, b(c, d), e' at top-level commas."""
  parts, depth, cur = [], 0, []
  for ch in text:
    if ch in "([{":
      depth += 1
    elif ch in ")]}":
      depth -= 1
    if ch == "," and depth == 0:
      parts.append("".join(cur).strip())
      cur = []
    else:
      cur.append(ch)
  if cur:
    parts.append("".join(cur).strip())
  return parts


def parse(text):
  """Returns (computations, entry name); a computation is a list of dicts."""
  comps, entry, current = {}, None, None
  for line in text.splitlines():
    line = re.sub(r"/\*.*?\*/", "", line)
    if current is None:
      m = COMP.match(line)
      if m and "=" not in line.split("{")[0]:
        current = m.group(2)
        comps[current] = []
        if m.group(1):
          entry = current
      continue
    if line.strip() == "}":
      current = None
      continue
    m = INSTR.match(line)
    if not m:
      continue
    name, rest = m.group(1), m.group(2)
    sm = SHAPE.match(rest)
    if not sm:
      continue
    shape = sm.group(1)
    rest = rest[sm.end():]
    om = re.match(r"([\w\-]+)\((.*)$", rest)
    if not om:
      continue
    opcode = om.group(1)
    depth, i = 1, 0
    body = om.group(2)
    while i < len(body) and depth:
      if body[i] == "(":
        depth += 1
      elif body[i] == ")":
        depth -= 1
      i += 1
    operands = [o.split()[-1].lstrip("%") for o in split_top(body[:i - 1]) if o]
    attrs = body[i:]
    comps[current].append(
        dict(name=name, shape=shape, opcode=opcode, operands=operands,
             attrs=attrs))
  return comps, entry


def attr(attrs, key):
  m = re.search(r"\b" + key + r"=\{([^}]*)\}", attrs)
  return [int(v) for v in m.group(1).split(",") if v] if m else []


def count(comps, name, seen_stack=()):
  """Returns (dot_conv_flops, elementwise_flops) of computation `name`."""
  shapes = {i["name"]: i["shape"] for i in comps.get(name, [])}
  mm = ew = 0
  for ins in comps.get(name, []):
    op, out = ins["opcode"], dims_of(ins["shape"])
    if op == "dot":
      lhs = dims_of(shapes.get(ins["operands"][0], ""))
      k = product(lhs[d] for d in attr(ins["attrs"], "lhs_contracting_dims"))
      mm += 2 * product(out) * k
    elif op == "convolution":
      lhs_shape = dims_of(shapes.get(ins["operands"][0], ""))
      rhs_shape = dims_of(shapes.get(ins["operands"][1], ""))
      labels = re.search(r"dim_labels=(\w+)_(\w+)->(\w+)", ins["attrs"])
      kernel = labels.group(2)
      spatial = product(rhs_shape[i] for i, c in enumerate(kernel)
                        if c not in "io")
      in_feat = rhs_shape[kernel.index("i")]
      mm += 2 * product(out) * spatial * in_feat
      del lhs_shape
    elif op in ELEMENTWISE and out is not None:
      ew += product(out)
    for callee in re.findall(
        r"(?:to_apply|calls|body|condition|branch_computations)="
        r"\{?%?([\w.\-]+)", ins["attrs"]):
      if op in ("reduce", "reduce-window", "scatter", "select-and-scatter",
                "sort", "map", "all-reduce", "reduce-scatter"):
        continue  # scalar combiners: not matmul work
      if callee in seen_stack:
        continue
      sub_mm, sub_ew = count(comps, callee, seen_stack + (name,))
      mm += sub_mm
      ew += sub_ew
  return mm, ew


def main(argv):
  if len(argv) < 2:
    print(__doc__)
    return 2
  text = open(argv[1], encoding="utf-8").read()
  comps, entry = parse(text)
  if entry is None:
    print("no ENTRY computation in", argv[1], file=sys.stderr)
    return 1
  mm, ew = count(comps, entry)
  if "--json" in argv:
    print(json.dumps({"matmul_conv_flops": mm, "elementwise_flops": ew,
                      "total": mm + ew}))
  else:
    print(f"matmul+conv FLOPs: {mm}\nelementwise FLOPs: {ew}\n"
          f"total:             {mm + ew}")
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
