"""Stand-in tvm.relax: a BlockBuilder recording emit_te calls, and a VM replaying them."""
import contextlib

import numpy as _np

from . import IRModule, NDArray, te


class Expr:
    pass


class TensorStructInfo:
    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(int(s) for s in shape), dtype


class Var(Expr):
    def __init__(self, name, struct_info):
        self.name, self.struct_info = name, struct_info


class Constant(Expr):
    def __init__(self, a):
        self.data = NDArray(a)
        self.struct_info = TensorStructInfo(a.shape, str(a.dtype))


def const(a, dtype=None):
    return Constant(_np.asarray(a, dtype=dtype))


class Function:
    def __init__(self, params):
        self.params, self.bindings, self.result = params, [], None


class BlockBuilder:
    def __init__(self):
        self.mod, self.func, self.in_dataflow = IRModule(), None, False

    @contextlib.contextmanager
    def function(self, name, params):
        assert self.func is None
        self.func = Function(list(params))
        yield
        assert self.func.result is not None, 'emit_func_output was not called'
        self.mod[name] = self.func
        self.func = None

    @contextlib.contextmanager
    def dataflow(self):
        self.in_dataflow = True
        yield
        self.in_dataflow = False

    def emit_te(self, fte, *args):
        holders = []
        for a in args:
            assert isinstance(a, Expr), 'emit_te takes relax expressions'
            holders.append(te.placeholder(a.struct_info.shape, 'float32', getattr(a, 'name', 'const')))
        out = fte(*holders)
        v = Var('lv%d' % len(self.func.bindings), TensorStructInfo(out.shape, 'float32'))
        self.func.bindings.append((v, out, list(zip(holders, args))))
        return v

    def emit_output(self, v):
        assert self.in_dataflow
        return v

    def emit_func_output(self, v):
        self.func.result = v

    def get(self):
        return self.mod


class _Exe:
    def __init__(self, mod): self.mod = mod


def build(mod, target=None):
    return _Exe(mod)


class VirtualMachine:
    def __init__(self, ex, dev): self.mod = ex.mod

    def __getitem__(self, name):
        f = self.mod[name]

        def call(*args):
            assert len(args) == len(f.params), (len(args), len(f.params))
            env = {}
            for p, a in zip(f.params, args):
                a = a.numpy()
                assert a.shape == p.struct_info.shape, (p.name, a.shape, p.struct_info.shape)
                env[p] = a
            for v, out, holders in f.bindings:
                tenv = {h: (arg.data.numpy() if isinstance(arg, Constant) else env[arg]) for h, arg in holders}
                env[v] = out.evaluate(tenv)
            return NDArray(env[f.result])
        return call
