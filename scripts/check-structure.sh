#!/usr/bin/env bash
# Checks the size rules of STYLE.md on the tracked C++ sources:
#   - no function over 150 lines (tests and generated code excepted);
#   - no file over 1,200 lines (generated code excepted);
#   - no research in product folders: no benchmark (*_benchmark.cc),
#     diagnostics or experiments source under graph/ simulator/ policy/
#     worker/ server/ engine/ (they live in benchmarks/ and tools/, training
#     code in training/);
#   - no client/ source includes a server/ header (the CLI runs engine/);
#   - no simulator/ source includes a generated proto header (*.pb.h) but
#     its edge files, *_proto.h and *_proto.cc (the simulator depends on
#     graph/ only; requests and files are converted at that edge).
#
#   scripts/check-structure.sh [REPO_ROOT]
#
# A function is measured from the first line of its declaration (template
# line included) to its closing brace, by a brace-depth scan of the .cc and
# .h files `git ls-files` lists, with comments, string and character
# literals and preprocessor lines removed first. Namespace and extern "C"
# braces do not count as depth; class bodies are scopes whose member
# function bodies are measured the same way. Prints one line per violation
# and exits 1 when there is any, 0 otherwise; exits 2 when the tree cannot
# be read.
set -euo pipefail

root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$root"
if ! files=$(git ls-files -- '*.cc' '*.h' 2>/dev/null); then
  echo "check-structure: $root is not a git checkout" >&2
  exit 2
fi

printf '%s\n' "$files" | python3 -c '
import re
import sys

MAX_FUNCTION_LINES = 150
MAX_FILE_LINES = 1200

def is_test(path):
    name = path.rsplit("/", 1)[-1]
    parts = path.split("/")
    return (name.endswith("_test.cc") or name.endswith("_test.h")
            or "test_util" in name or parts[0] == "tests"
            or "testing" in parts[:-1] or "test_util" in parts[:-1])

PRODUCT_FOLDERS = ("graph", "simulator", "policy", "worker", "server",
                   "engine")
# Folders client/ must not include from: the CLI runs the engine (engine/),
# never the gRPC server.
CLIENT_FORBIDDEN_INCLUDES = ("server/",)
INCLUDE = re.compile(r"^#include \"([^\"]+)\"", re.M)

def is_research(path):
    """A benchmark, diagnostics or experiments source."""
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return (stem.endswith("_benchmark") or "diagnostics" in stem
            or stem == "experiments" or stem.endswith("_experiments"))

def is_generated(path):
    return ".pb." in path or path.endswith("_generated.h")

def strip(text):
    """Blanks comments, literals and preprocessor lines, keeping newlines."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#":
            # A preprocessor line, with its continuations.
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append("\n")
                    i += 2
                    continue
                i += 1
            continue
        if c == "\n":
            out.append(c)
            line_start = True
            i += 1
            continue
        if c in " \t":
            out.append(c)
            i += 1
            continue
        line_start = False
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
            continue
        raw = re.match(r"(?:u8|u|U|L)?R\"([^()\\ ]{0,16})\(", text[i:i + 24])
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = ")" + raw.group(1) + "\""
            end = text.find(close, i + raw.end())
            end = n if end < 0 else end + len(close)
            out.append("\"" + re.sub(r"[^\n]", " ", text[i + 1:end - 1]) + "\"")
            i = end
            continue
        if c == "\"" or (c == "\x27" and not (i > 0 and text[i - 1].isalnum())):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c)
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)

def is_class_head(header):
    """True for the head of a class, struct or union definition."""
    head = header.strip()
    if head.startswith("template"):
        depth = 0
        for k, ch in enumerate(head):
            if ch == "<":
                depth += 1
            elif ch == ">":
                depth -= 1
                if depth == 0:
                    head = head[k + 1:].strip()
                    break
    return (re.match(r"(class|struct|union)\b", head) is not None
            and "(" not in head and "=" not in head)

def functions(code):
    """Yields (first_line, last_line) of every outermost function body."""
    scopes = ["scope"]  # "scope" (file, namespace, class) or "block"
    statement_start = None  # offset of the first character of the statement
    block_start = None      # offset where the outermost block began
    block_is_function = False
    depth_in_block = 0
    line = 1
    lines_at = []
    for ch in code:
        lines_at.append(line)
        if ch == "\n":
            line += 1
    i = 0
    n = len(code)
    while i < n:
        c = code[i]
        if depth_in_block > 0:
            if c == "{":
                depth_in_block += 1
            elif c == "}":
                depth_in_block -= 1
                if depth_in_block == 0:
                    rest = code[i + 1:i + 200].lstrip()
                    if rest[:1] in (",", "{"):
                        # A brace initializer of a constructor list: the
                        # function goes on.
                        depth_in_block = 0
                        i += 1
                        continue
                    if block_is_function:
                        yield lines_at[block_start], lines_at[i]
                    statement_start = None
                    block_start = None
            i += 1
            continue
        if c.isspace():
            i += 1
            continue
        if c == ";":
            statement_start = None
            block_start = None
            i += 1
            continue
        if statement_start is None:
            statement_start = i
        if c == "{":
            header = code[statement_start:i]
            if re.search(r"\bnamespace\b|\bextern\s*\"", header):
                scopes.append("namespace")
                statement_start = None
            elif is_class_head(header):
                scopes.append("class")
                statement_start = None
            else:
                if block_start is None:
                    block_start = statement_start
                    top = re.sub(r"\([^()]*\)", "()", header)
                    block_is_function = (
                        "(" in header and "=" not in top.split("(")[0]
                        and not re.search(r"\benum\b", header))
                depth_in_block = 1
            i += 1
            continue
        if c == "}":
            if len(scopes) > 1:
                scopes.pop()
            statement_start = None
            block_start = None
            i += 1
            continue
        i += 1

failures = 0
for path in sys.stdin.read().split():
    if is_generated(path):
        continue
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as error:
        print(f"check-structure: cannot read {path}: {error}", file=sys.stderr)
        sys.exit(2)
    if path.split("/", 1)[0] in PRODUCT_FOLDERS and is_research(path):
        print(f"{path}: research code in a product folder (benchmarks/, "
              "tools/ or training/)")
        failures += 1
    if path.startswith("client/"):
        for included in INCLUDE.findall(text):
            if included.startswith(CLIENT_FORBIDDEN_INCLUDES):
                print(f"{path}: includes {included} (client/ depends on "
                      "engine/, never on server/)")
                failures += 1
    if (path.startswith("simulator/") and
            not re.search(r"_proto(_test)?\.(h|cc)$", path)):
        for included in INCLUDE.findall(text):
            if included.endswith(".pb.h"):
                print(f"{path}: includes {included} (only simulator/*_proto.* "
                      "convert protos)")
                failures += 1
    num_lines = text.count("\n")
    if num_lines > MAX_FILE_LINES:
        print(f"{path}: {num_lines} lines (at most {MAX_FILE_LINES})")
        failures += 1
    if is_test(path):
        continue
    for first, last in functions(strip(text)):
        length = last - first + 1
        if length > MAX_FUNCTION_LINES:
            print(f"{path}:{first}: function of {length} lines "
                  f"(at most {MAX_FUNCTION_LINES})")
            failures += 1
if failures:
    print(f"check-structure: {failures} violation(s)")
    sys.exit(1)
print("check-structure: ok")
'
