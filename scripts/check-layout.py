#!/usr/bin/env python3
"""The layout of a module tree (src/lab by default) drawn as its imports, and two rules on it:

1. No arrow runs back up: a module never names one of its ancestors (a child takes a name from
   the sibling that defines it, never through its parent's face). Tests are left out: a test
   module reads the module it tests.
2. The rooms at each level form no circle: collapse every folder's subtree into one node; among
   the children of one folder the imports go one way only.

Paths are read as rs-import-circles.py reads them: `use` paths and `crate::…`/`super::…` paths
in code (inside functions too), with `use` groups split. Prints one line a broken rule and exits
1 if any; with --draw, prints the rooms' arrows (`room -> room`) as well.
usage: check-layout.py [SRC] [--root lab] [--draw]
"""
import os
import re
import sys

args = [a for a in sys.argv[1:] if not a.startswith('--')]
SRC = args[0] if args else 'src'
ROOT = tuple(sys.argv[sys.argv.index('--root') + 1].split('::')) if '--root' in sys.argv else ('lab',)
DRAW = '--draw' in sys.argv

files = {}  # module path -> file
for dirpath, _, names in os.walk(SRC):
    for name in names:
        if not name.endswith('.rs'):
            continue
        path = os.path.join(dirpath, name)
        rel = os.path.relpath(path, SRC)[:-3].split(os.sep)
        if rel[-1] == 'mod':
            rel = rel[:-1]
        if rel in (['lib'], ['main']) or (rel and rel[0] == 'bin'):
            continue
        files[tuple(rel)] = path


def is_test(module):
    return module[-1] in ('tests', 'test_support')


def resolve(path):
    path = list(path)
    while path:
        if tuple(path) in files:
            return tuple(path)
        path.pop()
    return None


def strip_tests(src):
    """The source without its inline test module and comments."""
    src = re.sub(r'#\[cfg\(test\)\]\s*mod \w+\s*\{.*', '', src, flags=re.S)
    src = re.sub(r'(?m)//[^\n]*', '', src)
    return src


def use_targets(module, body, is_dir):
    """Module paths a `use` body names, relative to `module`."""
    body = re.sub(r'\s+', '', body)
    head = re.match(r'(crate|super|self)((?:::\w+)*)', body)
    if not head:
        first = re.match(r'(\w+)((?:::\w+)*)', body)
        if not first or (module + (first.group(1),)) not in files:
            return []
        body = 'self::' + body
        head = re.match(r'(crate|super|self)((?:::\w+)*)', body)
    kind, rest = head.group(1), [s for s in head.group(2).split('::') if s]
    base = [] if kind == 'crate' else list(module) if kind == 'self' else list(module[:-1])
    while rest and rest[0] == 'super':
        base, rest = base[:-1], rest[1:]
    tail = body[head.end():]
    if not tail.startswith('::{'):
        return [base + rest]
    inner = tail[3:-1] if tail.endswith('}') else tail[3:]
    depth, cur, parts = 0, '', []
    for ch in inner:
        if ch == ',' and depth == 0:
            parts.append(cur)
            cur = ''
            continue
        depth += ch == '{'
        depth -= ch == '}'
        cur += ch
    parts.append(cur)
    out = []
    for part in parts:
        segs = re.match(r'(\w+(?:::\w+)*)', part)
        if segs and segs.group(1) != 'self':
            out.append(base + rest + segs.group(1).split('::'))
        elif segs:
            out.append(base + rest)
    return out


edges = {m: set() for m in files if m[:len(ROOT)] == ROOT and not is_test(m)}
for module in edges:
    path = files[module]
    is_dir = path.endswith(('mod.rs', 'lib.rs'))
    src = strip_tests(open(path, encoding='utf-8').read())
    targets = []
    # re-exports (`pub use`) hand names on: a face's own `pub use child::X` is no arrow up
    for m in re.finditer(r'(?<![\w)])use\s+([^;]+);', src):
        if re.search(r'pub(\([^)]*\))?\s+$', src[max(0, m.start() - 16):m.start()]):
            continue
        targets += use_targets(module, m.group(1), is_dir)
    code = re.sub(r'(?m)^\s*(pub(\([^)]*\))?\s+)?(use|mod)\b[^;]*;', '', src)
    for m in re.finditer(r'\bcrate((?:::\w+)+)', code):
        targets.append([x for x in m.group(1).split('::') if x])
    for m in re.finditer(r'(?<![:\w])(super|self)((?:::\w+)+)', code):
        segs = [x for x in m.group(2).split('::') if x]
        base = list(module[:-1]) if m.group(1) == 'super' else list(module)
        while segs and segs[0] == 'super':
            base, segs = base[:-1], segs[1:]
        targets.append(base + segs)
    for target in targets:
        found = resolve(target)
        if found is not None and found != module and not is_test(found):
            edges[module].add(found)

problems = []
# Rule 1: no module names an ancestor.
for module, targets in sorted(edges.items()):
    for target in sorted(targets):
        if module[:len(target)] == target:
            problems.append('arrow up: %s names its ancestor %s' % (files[module], files[target]))


# Rule 2: at each folder, its children's subtrees form no circle.
def room_of(module, folder):
    """The child of `folder` whose subtree holds `module`, or None."""
    if module[:len(folder)] != folder or len(module) <= len(folder):
        return None
    return module[:len(folder) + 1]


folders = sorted({m[:i] for m in edges for i in range(len(ROOT), len(m))})
for folder in folders:
    arrows = {}
    for module, targets in edges.items():
        a = room_of(module, folder)
        if a is None:
            continue
        for target in targets:
            b = room_of(target, folder)
            if b is not None and b != a:
                arrows.setdefault(a, set()).add(b)
    if DRAW and arrows:
        print('%s:' % '::'.join(folder))
        for a in sorted(arrows):
            print('  %s -> %s' % (a[-1], ', '.join(sorted(b[-1] for b in arrows[a]))))
    # circles among the rooms (Tarjan)
    index, low, stack, on, counter, circles = {}, {}, [], set(), [0], []

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in arrows.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(comp)

    for v in sorted(arrows):
        if v not in index:
            visit(v)
    for comp in circles:
        problems.append('circle in %s: %s' % (
            '::'.join(folder), ' <-> '.join(sorted(c[-1] for c in comp))))

for line in problems:
    print(line)
sys.exit(1 if problems else 0)
