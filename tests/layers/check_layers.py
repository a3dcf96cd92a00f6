#!/usr/bin/env python3
"""The layers only call down (docs/architecture.md).

Checks two things and fails naming every violation:
  1. includes: every #include of a syno header from src/<module>/ and from
     include/syno/<header>.h names a module that module may use;
  2. calls: every syno_* symbol a layer's static library leaves undefined is
     defined in a library that layer may use (nm), so a call upward fails even
     when it hides behind a forward declaration.
Usage: check_layers.py SOURCE_DIR [BUILD_DIR]"""
import os
import re
import subprocess
import sys

# Which module a public header belongs to.
HEADER = {
    "error": "base", "clock": "base", "cpus": "base", "alloc": "base", "opt": "base", "strbuf": "base", "lex": "base", "rng": "base", "hash": "base", "grow": "base", "proc": "base", "file": "base",
    "size": "size", "graph": "graph", "signature": "graph", "lower": "lower", "normal": "lower",
    "space": "space", "flopsgame": "space", "codegen": "codegen", "exec": "exec", "kernels": "kernels", "dnnl": "dnnl",
    "nn": "nn", "train": "nn", "data": "nn", "backbone": "model",
    "search": "search", "pool": "search", "driver": "search", "evalproto": "search",
    "store": "store", "dist": "dist", "syno": "cli",
}
CORE = {"base", "size", "graph", "lower"}
# What each module may include or call (itself included).
ALLOWED = {
    "base": {"base"},
    "size": {"base", "size"},
    "graph": {"base", "size", "graph"},
    "lower": CORE,
    "space": CORE | {"space"},
    "codegen": CORE | {"codegen"},
    "dnnl": {"base", "dnnl"},
    "exec": CORE | {"dnnl", "exec"},
    "kernels": CORE | {"codegen", "kernels"},
    "nn": {"base", "dnnl", "nn"},
    "model": CORE | {"dnnl", "exec", "kernels", "nn", "model"},
    "store": {"base", "store"},
    "search": CORE | {"space", "store", "search"},
    "dist": {"base", "search", "dist"},
}
ALLOWED["cli"] = set(HEADER.values()) | set(ALLOWED)
# Static libraries and the modules they hold (CMakeLists.txt).
LIBS = {
    "syno_base": {"base"}, "syno_core": {"size", "graph", "lower", "space", "codegen"},
    "syno_dnnl": {"dnnl"}, "syno_exec": {"exec"}, "syno_kernels": {"kernels"}, "syno_nn": {"nn"}, "syno_model": {"model"}, "syno_search": {"search", "store"},
    "syno_dist": {"dist"},
}

INC = re.compile(r'^\s*#\s*include\s+[<"]([^>"]+)[>"]', re.M)


def target_module(inc, here):
    m = re.match(r"syno/(\w+)\.h$", inc)
    if m:
        return HEADER.get(m.group(1), "?" + m.group(1))
    m = re.match(r"\.\./(\w+)/", inc)
    if m:
        return m.group(1)
    return None  # a system header or one of the module's own


def check_includes(src):
    bad = []
    files = []
    for mod in sorted(os.listdir(os.path.join(src, "src"))):
        d = os.path.join(src, "src", mod)
        for f in sorted(os.listdir(d)):
            if f.endswith((".c", ".h")):
                files.append((mod, os.path.join(d, f)))
    for f in sorted(os.listdir(os.path.join(src, "include", "syno"))):
        name = f[:-2]
        files.append((HEADER.get(name, "?" + name), os.path.join(src, "include", "syno", f)))
    for mod, path in files:
        if mod not in ALLOWED:
            bad.append(f"{path}: module '{mod}' has no place in the layers")
            continue
        for inc in INC.findall(open(path, encoding="utf-8").read()):
            t = target_module(inc, mod)
            if t and t not in ALLOWED[mod]:
                bad.append(f"{os.path.relpath(path, src)}: {mod} includes {inc} ({t}), a layer above or beside it")
    return bad, len(files)


def symbols(lib):
    out = subprocess.run(["nm", "-g", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
    defined = {l.split()[-1] for l in out.splitlines() if len(l.split()) == 3}
    out = subprocess.run(["nm", "-g", "-u", lib], capture_output=True, text=True, check=True).stdout
    undef = {l.split()[-1] for l in out.splitlines() if l.strip() and not l.endswith(":")}
    return defined, undef


def check_calls(build):
    bad = []
    defined, undef = {}, {}
    for lib in LIBS:
        path = os.path.join(build, f"lib{lib}.a")
        if not os.path.exists(path):
            return [f"{path} is missing: build first"]
        defined[lib], undef[lib] = symbols(path)
    for lib, mods in LIBS.items():
        may = set().union(*(ALLOWED[m] for m in mods))
        for sym in sorted(undef[lib] - defined[lib]):
            if not sym.startswith("syno_"):
                continue
            owner = [l for l in LIBS if sym in defined[l]]
            if owner and not (LIBS[owner[0]] & may):
                bad.append(f"lib{lib}.a calls {sym}, defined in lib{owner[0]}.a, a layer above or beside it")
    return bad


def main():
    src = sys.argv[1]
    bad, n = check_includes(src)
    if len(sys.argv) > 2:
        bad += check_calls(sys.argv[2])
    for b in bad:
        print(b)
    print(f"{n} files and {len(LIBS)} libraries checked: {len(bad)} violations")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
