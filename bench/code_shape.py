#!/usr/bin/env python3
"""The code's shape that issue 47 sets limits on: every function of 100 lines or more in crates/
(outside test modules and tests/ folders), and the lines of the files it names. Prints a table;
changes nothing. Usage: bench/code_shape.py [--min N]"""
import argparse
import glob
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FN = re.compile(r'^(\s*)(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)')


def long_functions(path, least):
    lines = open(path).read().split('\n')
    end = len(lines)
    for i, line in enumerate(lines[:-1]):
        if line.strip() == '#[cfg(test)]' and lines[i + 1].lstrip().startswith('mod '):
            end = i
            break
    i = 0
    while i < end:
        m = FN.match(lines[i])
        if not m:
            i += 1
            continue
        j = i
        while j < end and not lines[j].rstrip().endswith(('{', ';')):
            j += 1
        if j >= end or lines[j].rstrip().endswith(';'):
            i = j + 1
            continue
        k = j + 1
        while k < end and lines[k] != m.group(1) + '}':
            k += 1
        if k - i + 1 >= least:
            yield k - i + 1, i + 1, m.group(7)
        i = k + 1


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--min', type=int, default=100, help='the shortest function listed')
    a = ap.parse_args()
    found = []
    for path in glob.glob(os.path.join(ROOT, 'crates', '**', '*.rs'), recursive=True):
        rel = os.path.relpath(path, ROOT)
        if '/tests/' in rel:
            continue
        found += [(n, rel, at, name) for n, at, name in long_functions(path, a.min)]
    print(f'| lines | function | file:line |\n|---:|---|---|')
    for n, rel, at, name in sorted(found, reverse=True):
        print(f'| {n} | {name} | {rel}:{at} |')
    print('\n| lines | file |\n|---:|---|')
    files = ['crates/engine/src/worker/mod.rs', 'crates/engine/src/worker/http2.rs']
    files += sorted(glob.glob('crates/load/src/prepare/*.rs', root_dir=ROOT))
    for f in files:
        print(f'| {sum(1 for _ in open(os.path.join(ROOT, f)))} | {f} |')


if __name__ == '__main__':
    main()
