#!/usr/bin/env python3
"""Counts a module's matmul and convolution FLOPs from HLO text, by hand.

This is the independent check behind docs/real-graphs.md: it reads the text
with its own small regular expressions (it shares no code with gopt's
importer) and counts

  dot          2 * (output elements) * (product of the lhs contracting dims)
  convolution  2 * (output elements) * (kernel spatial elements)
                 * (input features / feature_group_count)

for every instruction of every computation reachable from ENTRY through
call / fusion / while / conditional. A while body counts once per trip and
its condition once per trip plus the final test; the trip count is the
loop's `known_trip_count` in backend_config, else read from the loop itself:
the condition's ROOT compares one tuple element (the counter) with a
constant or with a tuple element the body passes through unchanged, the
body's ROOT tuple adds a constant to the counter, and the while operand is
a tuple whose counter (and bound) elements are constants. Loops of any
other form count once, and are named on stderr.

Elementwise arithmetic is reported apart (one FLOP per output element of
add, subtract, multiply, divide, maximum, minimum, power, sqrt, rsqrt, exp,
log, logistic, tanh, negate), and the other elementwise ops (compare,
select, clamp, convert, abs, floor, sign, and, or, ...) apart again, so the
reader can compare any total with `gopt inspect`: `total` is matmul, conv
and arithmetic; `total_all` adds the other elementwise ops (the count to use
for control-heavy scalar programs, where those are the work).

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
OTHER_ELEMENTWISE = {
    "compare", "select", "clamp", "convert", "abs", "sign", "floor", "ceil",
    "round-nearest-afz", "round-nearest-even", "and", "or", "xor", "not",
    "remainder", "atan2", "sine", "cosine", "tan", "exponential-minus-one",
    "log-plus-one", "is-finite", "erf", "cbrt", "shift-left",
    "shift-right-logical", "shift-right-arithmetic", "popcnt",
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
             attrs=attrs, root=line.lstrip().startswith("ROOT")))
  return comps, entry


def attr(attrs, key):
  m = re.search(r"\b" + key + r"=\{([^}]*)\}", attrs)
  return [int(v) for v in m.group(1).split(",") if v] if m else []


def callees(attrs, key):
  """The computations an instruction names after `key=`."""
  return re.findall(key + r"=\{?%?([\w.\-]+)", attrs)


def by_name(comps, name):
  return {i["name"]: i for i in comps.get(name, [])}


def root_of(comps, name):
  """The ROOT instruction of computation `name` (its last when unmarked)."""
  instructions = comps.get(name, [])
  roots = [i for i in instructions if i["root"]]
  return roots[0] if roots else (instructions[-1] if instructions else None)


def constant_value(ins):
  """The integer value of a scalar `constant(N)`, else None."""
  if ins is None or ins["opcode"] != "constant" or not ins["operands"]:
    return None
  try:
    return int(ins["operands"][0])
  except ValueError:
    return None


def element_read(ins):
  """The tuple index a get-tuple-element reads, else None."""
  if ins is None or ins["opcode"] != "get-tuple-element":
    return None
  m = re.search(r"index=(\d+)", ins["attrs"])
  return int(m.group(1)) if m else None


def trip_count(comps, caller, ins):
  """How many times while `ins` (in computation `caller`) runs its body:
  the backend_config's known_trip_count, else read from the loop's counter;
  None when the loop has another form."""
  known = re.search(r'"known_trip_count":\{"n":"(\d+)"\}', ins["attrs"])
  if known:
    return int(known.group(1))
  cond = callees(ins["attrs"], "condition")
  body = callees(ins["attrs"], "body")
  if not cond or not body or not ins["operands"]:
    return None
  caller_ins = by_name(comps, caller)
  cond_ins, body_ins = by_name(comps, cond[0]), by_name(comps, body[0])
  init = caller_ins.get(ins["operands"][0])
  test, body_root = root_of(comps, cond[0]), root_of(comps, body[0])
  if (test is None or test["opcode"] != "compare" or init is None or
      init["opcode"] != "tuple" or body_root is None or
      body_root["opcode"] != "tuple"):
    return None

  def initial(element):
    if element is None or element >= len(init["operands"]):
      return None
    return constant_value(caller_ins.get(init["operands"][element]))

  def next_value(element):
    return body_ins.get(body_root["operands"][element])

  def step(element):
    out = next_value(element)
    if out is None or out["opcode"] not in ("add", "subtract"):
      return None
    a, b = (body_ins.get(o) for o in out["operands"][:2])
    if element_read(a) != element:
      if out["opcode"] == "subtract" or element_read(b) != element:
        return None
      a, b = b, a
    value = constant_value(b)
    if value is None:
      return None
    return -value if out["opcode"] == "subtract" else value

  def bound(side):
    value = constant_value(side)
    element = element_read(side)
    if value is None and element is not None:
      if element_read(next_value(element)) == element:  # passed through
        value = initial(element)
    return value

  direction = re.search(r"direction=(\w+)", test["attrs"]).group(1)
  sides = [cond_ins.get(o) for o in test["operands"][:2]]
  mirrored = {"LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE", "NE": "NE"}
  for counter_side, d in ((0, direction), (1, mirrored.get(direction))):
    counter = element_read(sides[counter_side])
    if counter is None or d is None:
      continue
    start, by = initial(counter), step(counter)
    limit = bound(sides[1 - counter_side])
    if start is None or limit is None or not by:
      continue
    if d in ("LT", "LE") and by > 0:
      span = limit - start + (1 if d == "LE" else 0)
      return max(0, -(-span // by))
    if d in ("GT", "GE") and by < 0:
      span = start - limit + (1 if d == "GE" else 0)
      return max(0, -(-span // -by))
    if d == "NE" and (limit - start) % by == 0 and (limit - start) // by >= 0:
      return (limit - start) // by
  return None


def count(comps, name, seen_stack=()):
  """Returns (dot_conv, arithmetic, other_elementwise) FLOPs of computation
  `name`, loops scaled by their trip counts."""
  shapes = {i["name"]: i["shape"] for i in comps.get(name, [])}
  totals = [0, 0, 0]
  for ins in comps.get(name, []):
    op, out = ins["opcode"], dims_of(ins["shape"])
    if op == "dot":
      lhs = dims_of(shapes.get(ins["operands"][0], ""))
      k = product(lhs[d] for d in attr(ins["attrs"], "lhs_contracting_dims"))
      totals[0] += 2 * product(out) * k
    elif op == "convolution":
      rhs_shape = dims_of(shapes.get(ins["operands"][1], ""))
      labels = re.search(r"dim_labels=(\w+)_(\w+)->(\w+)", ins["attrs"])
      kernel = labels.group(2)
      spatial = product(rhs_shape[i] for i, c in enumerate(kernel)
                        if c not in "io")
      in_feat = rhs_shape[kernel.index("i")]
      totals[0] += 2 * product(out) * spatial * in_feat
    elif op in ELEMENTWISE and out is not None:
      totals[1] += product(out)
    elif op in OTHER_ELEMENTWISE and out is not None:
      totals[2] += product(out)
    if op in ("reduce", "reduce-window", "scatter", "select-and-scatter",
              "sort", "map", "all-reduce", "reduce-scatter"):
      continue  # scalar combiners: not counted per element
    runs = {}
    if op == "while":
      trips = trip_count(comps, name, ins)
      if trips is None:
        print(f"note: while {ins['name']} in {name}: no trip count read; "
              "counted once", file=sys.stderr)
        trips = 1
      runs = {c: trips for c in callees(ins["attrs"], "body")}
      runs.update({c: trips + 1 for c in callees(ins["attrs"], "condition")})
    else:
      for key in ("to_apply", "calls", "branch_computations"):
        runs.update({c: 1 for c in callees(ins["attrs"], key)})
    for callee, times in runs.items():
      if callee in seen_stack:
        continue
      sub = count(comps, callee, seen_stack + (name,))
      for i in range(3):
        totals[i] += times * sub[i]
  return tuple(totals)


def main(argv):
  if len(argv) < 2:
    print(__doc__)
    return 2
  text = open(argv[1], encoding="utf-8").read()
  comps, entry = parse(text)
  if entry is None:
    print("no ENTRY computation in", argv[1], file=sys.stderr)
    return 1
  mm, ew, other = count(comps, entry)
  if "--json" in argv:
    print(json.dumps({"matmul_conv_flops": mm, "elementwise_flops": ew,
                      "other_elementwise_flops": other, "total": mm + ew,
                      "total_all": mm + ew + other}))
  else:
    print(f"matmul+conv FLOPs: {mm}\nelementwise FLOPs: {ew}\n"
          f"other elementwise: {other}\n"
          f"total:             {mm + ew}\n"
          f"total_all:         {mm + ew + other}")
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
