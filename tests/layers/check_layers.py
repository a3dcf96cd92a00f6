#!/usr/bin/env python3
"""The layers only call down (docs/architecture.md).

Checks two things and fails naming every violation:
  1. includes: every #include of a syno header from src/<module>/ and from
     include/syno/<header>.h names a module that module may use;
  2. calls, per module: every symbol an object file of src/<module>/ leaves
     undefined that another object of the project defines is defined in a module
     this one may use (nm on build/CMakeFiles/*.dir/src/<module>/*.o), so a call
     upward fails even when it hides behind a forward declaration, and even
     between two modules that share one static library.
Usage: check_layers.py SOURCE_DIR [BUILD_DIR]
       check_layers.py --self-test   plants a call from size up to space in one
                                     library and fails unless the check finds it"""
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
    "store": "store", "dist": "dist", "task": "task", "worker": "worker", "syno": "cli",
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
    "task": {"base", "task"},
    "model": CORE | {"dnnl", "exec", "kernels", "nn", "task", "model"},
    "store": {"base", "store"},
    "search": CORE | {"space", "store", "task", "search"},
    "dist": {"base", "search", "dist"},
    "worker": CORE | {"codegen", "dnnl", "exec", "kernels", "nn", "task", "model", "space", "store", "search", "worker"},
}
ALLOWED["cli"] = set(HEADER.values()) | set(ALLOWED)

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


def object_symbols(obj):
    """The external symbols an object file defines, and those it leaves undefined."""
    out = subprocess.run(["nm", "-g", obj], capture_output=True, text=True, check=True).stdout
    defined, undef = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] not in ("U", "w", "v"):
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            undef.add(parts[1])
    return defined, undef


OBJ = re.compile(r"[\\/]src[\\/](\w+)[\\/][^\\/]+\.o$")


def check_calls(build):
    """Per module: each object's undefined project symbols must be defined in a module it may use."""
    objs = []
    for root, _, names in os.walk(os.path.join(build, "CMakeFiles")):
        for n in names:
            m = OBJ.search(os.path.join(root, n))
            if m:
                objs.append((m.group(1), os.path.join(root, n)))
    if not objs:
        return [f"no object files of src/ under {build}/CMakeFiles: build first"]
    owner, need = {}, []
    for mod, obj in objs:
        defined, undef = object_symbols(obj)
        for sym in defined:
            owner.setdefault(sym, mod)
        need.append((mod, obj, undef))
    bad = []
    for mod, obj, undef in need:
        if mod not in ALLOWED:
            continue  # an include violation already names it
        for sym in sorted(undef):
            o = owner.get(sym)
            if o and o not in ALLOWED[mod]:
                bad.append(f"{os.path.relpath(obj, build)} ({mod}) calls {sym}, defined in {o}, a layer above or beside it")
    return bad


def self_test():
    """A planted call across modules inside one library must be found."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        for mod, text in (("size", "int syno_space_planted(void);\nint syno_size_planted(void) { return syno_space_planted(); }\n"),
                          ("space", "int syno_space_planted(void) { return 1; }\n")):
            src = os.path.join(d, f"{mod}.c")
            open(src, "w").write(text)
            obj = os.path.join(d, "CMakeFiles", "syno_core.dir", "src", mod, f"{mod}.c.o")
            os.makedirs(os.path.dirname(obj))
            subprocess.run(["cc", "-c", src, "-o", obj], check=True)
        bad = check_calls(d)
    found = any("(size) calls syno_space_planted, defined in space" in b for b in bad)
    print("planted call from size to space inside syno_core:", "found" if found else "NOT FOUND", bad)
    return 0 if found and len(bad) == 1 else 1


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    src = sys.argv[1]
    bad, n = check_includes(src)
    if len(sys.argv) > 2:
        bad += check_calls(sys.argv[2])
    for b in bad:
        print(b)
    print(f"{n} files and the object files of every module checked: {len(bad)} violations")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
