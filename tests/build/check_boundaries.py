#!/usr/bin/python3
"""Fails when a source file under src/ includes a header across an arrow that
src/dependencies.txt does not allow.

    check_boundaries.py SRC_DIR            check the tree; exit 1 and name each
                                           forbidden include
    check_boundaries.py --self-test        check the checker on a tree of its
                                           own with one forbidden include

A file belongs to the longest folder of the table that holds it; an include
"x/y.h" names a header of the longest folder that holds x/y.h. Headers that
are not Shoal's (<...>, or a quoted path outside src/, such as the build's
generated files) are not checked.
"""
import os
import re
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCE_SUFFIXES = ('.h', '.cc', '.cu', '.cuh')


def read_table(path):
    """{folder: set of folders it may use}, from dependencies.txt."""
    table = {}
    with open(path, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            line = line.split('#', 1)[0].strip()
            if not line:
                continue
            if ':' not in line:
                raise SystemExit(f'{path}:{n}: expected "folder: folders..."')
            folder, uses = line.split(':', 1)
            table[folder.strip()] = set(uses.split())
    for folder, uses in table.items():
        for u in uses:
            if u not in table:
                raise SystemExit(f'{path}: {folder} may use {u}, which is not in the table')
    return table


def owner(path, table):
    """The longest folder of the table holding `path` (relative to src/)."""
    best = None
    for folder in table:
        if path.startswith(folder + '/') and (best is None or len(folder) > len(best)):
            best = folder
    return best


def check(src, table):
    """The forbidden includes under `src`, as messages."""
    problems = []
    for root, _, files in os.walk(src):
        for name in sorted(files):
            if not name.endswith(SOURCE_SUFFIXES):
                continue
            full = os.path.join(root, name)
            rel = os.path.relpath(full, src)
            mine = owner(rel, table)
            if mine is None:
                if '/' in rel:
                    problems.append(f'{rel}: its folder is not in dependencies.txt')
                continue
            with open(full, encoding='utf-8', errors='replace') as f:
                for n, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    target = m.group(1)
                    if not os.path.exists(os.path.join(src, target)):
                        continue  # not a header of src/ (generated, or a sibling of the file)
                    theirs = owner(target, table)
                    if theirs is None or theirs == mine or theirs in table[mine]:
                        continue
                    problems.append(f'{rel}:{n}: includes "{target}" ({theirs}), '
                                    f'but {mine} may use only: {" ".join(sorted(table[mine])) or "nothing"}')
    return problems


def self_test():
    """The checker finds a forbidden include and passes an allowed one."""
    with tempfile.TemporaryDirectory() as src:
        def write(path, text):
            os.makedirs(os.path.dirname(os.path.join(src, path)), exist_ok=True)
            with open(os.path.join(src, path), 'w', encoding='utf-8') as f:
                f.write(text)
        write('dependencies.txt', 'common:\nqueue: common\nworker: common queue\n')
        write('common/status.h', '#pragma once\n')
        write('queue/nats.h', '#include "common/status.h"\n')
        write('worker/worker.cc', '#include "queue/nats.h"\n#include <vector>\n')
        table = read_table(os.path.join(src, 'dependencies.txt'))
        if check(src, table):
            print('self-test FAILED: allowed includes reported:', check(src, table))
            return 1
        write('common/log.cc', '#include "common/status.h"\n#include "worker/worker.h"\n')
        write('worker/worker.h', '#pragma once\n')
        found = check(src, table)
        if len(found) != 1 or not found[0].startswith('common/log.cc:2:'):
            print('self-test FAILED: expected one forbidden include at common/log.cc:2, got', found)
            return 1
        print('self-test: the forbidden include was found:', found[0])
    return 0


def main(argv):
    if argv[1:] == ['--self-test']:
        return self_test()
    if len(argv) != 2:
        print(__doc__)
        return 2
    src = argv[1]
    table = read_table(os.path.join(src, 'dependencies.txt'))
    problems = check(src, table)
    for p in problems:
        print('FORBIDDEN', p)
    if problems:
        print(f'{len(problems)} include(s) cross a boundary src/dependencies.txt does not allow')
        return 1
    print(f'every include under {src} follows src/dependencies.txt ({len(table)} folders)')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
