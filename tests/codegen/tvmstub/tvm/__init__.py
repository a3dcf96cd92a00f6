"""A stand-in for the few TVM names syno's TVM export uses, evaluated with numpy.

It is not TVM: it builds the same expression trees from te.placeholder, te.reduce_axis,
te.compute and te.sum, and evaluates them by numpy broadcasting over every point of the
compute's output and reduction axes. It checks what the export can get wrong (indices,
bounds, padding, the reduction axes, the Relax wiring), not what TVM would compile."""
import numpy as _np


class Expr:
    def _b(self, op, o, rev=False):
        o = _wrap(o)
        return Bin(op, o, self) if rev else Bin(op, self, o)

    def __add__(self, o): return self._b('+', o)
    def __radd__(self, o): return self._b('+', o, True)
    def __sub__(self, o): return self._b('-', o)
    def __rsub__(self, o): return self._b('-', o, True)
    def __mul__(self, o): return self._b('*', o)
    def __rmul__(self, o): return self._b('*', o, True)
    def __truediv__(self, o): return self._b('/', o)
    def __rtruediv__(self, o): return self._b('/', o, True)
    def __floordiv__(self, o): raise TypeError('use te.floordiv: // on TVM expressions is not floor division')
    def __mod__(self, o): raise TypeError('use te.floormod: % on TVM expressions is not floor remainder')
    def __neg__(self): return Bin('-', Const(0), self)
    def __ge__(self, o): return self._b('>=', o)
    def __gt__(self, o): return self._b('>', o)
    def __le__(self, o): return self._b('<=', o)
    def __lt__(self, o): return self._b('<', o)
    def __eq__(self, o): return self._b('==', o)
    def __ne__(self, o): return self._b('!=', o)
    __hash__ = object.__hash__

    def __bool__(self):
        raise TypeError('a TVM expression has no truth value (use te.all / if_then_else)')


def _wrap(o):
    if isinstance(o, Expr):
        return o
    if isinstance(o, (bool, int, float, _np.integer, _np.floating)):
        return Const(o)
    raise TypeError('not an expression: %r' % (o,))


class Const(Expr):
    def __init__(self, v): self.v = v
    def ev(self, env): return _np.asarray(self.v)


class Var(Expr):
    def __init__(self, name, extent):
        self.name, self.extent = name, extent
    def ev(self, env): return env[self]


_OPS = {'+': _np.add, '-': _np.subtract, '*': _np.multiply, '/': _np.true_divide,
        '>=': _np.greater_equal, '>': _np.greater, '<=': _np.less_equal, '<': _np.less,
        '==': _np.equal, '!=': _np.not_equal, 'floordiv': _np.floor_divide, 'floormod': _np.mod}


class Bin(Expr):
    def __init__(self, op, a, b): self.op, self.a, self.b = op, a, b
    def ev(self, env):
        a, b = self.a.ev(env), self.b.ev(env)
        if self.op in ('floordiv', 'floormod') and _np.any(b == 0):
            raise ZeroDivisionError('floordiv/floormod by zero')
        return _OPS[self.op](a, b)


class All(Expr):
    def __init__(self, args): self.args = [_wrap(a) for a in args]
    def ev(self, env):
        r = _np.asarray(True)
        for a in self.args:
            r = _np.logical_and(r, a.ev(env))
        return r


class IfThenElse(Expr):
    def __init__(self, c, t, f): self.c, self.t, self.f = _wrap(c), _wrap(t), _wrap(f)
    def ev(self, env):
        # TVM evaluates only the taken branch; NaN from an untaken out-of-bounds read is dropped here.
        return _np.where(self.c.ev(env), self.t.ev(env), self.f.ev(env))


class Load(Expr):
    def __init__(self, t, idx): self.t, self.idx = t, [_wrap(i) for i in idx]
    def ev(self, env):
        if self.t not in env:  # an earlier stage's compute: evaluated once, where it is read
            env[self.t] = self.t.evaluate(env)
        data = env[self.t]
        if len(self.idx) != data.ndim:
            raise IndexError('%s has %d axes, read with %d indices' % (self.t.name, data.ndim, len(self.idx)))
        ins = _np.asarray(True)
        ix = []
        for i, n in zip(self.idx, data.shape):
            v = _np.asarray(i.ev(env)).astype(_np.int64)
            ins = _np.logical_and(ins, (v >= 0) & (v < n))
            ix.append(_np.clip(v, 0, n - 1))
        ix = _np.broadcast_arrays(*ix)
        # An out-of-bounds read is NaN: it must never reach the result.
        return _np.where(ins, data[tuple(ix)].astype(_np.float64), _np.nan)


class Reduce(Expr):
    def __init__(self, expr, axis): self.expr, self.axis = _wrap(expr), list(axis)
    def ev(self, env):
        raise TypeError('a reduction is allowed only at the top of a te.compute')


class Tensor:
    def __init__(self, shape, name, body=None, axes=None):
        self.shape, self.name, self.body, self.axes = tuple(int(s) for s in shape), name, body, axes
    def __getitem__(self, idx):
        if not isinstance(idx, tuple):
            idx = (idx,)
        return Load(self, idx)
    __hash__ = object.__hash__

    def evaluate(self, env):
        """The compute's value, given placeholder -> array in env."""
        body, red = self.body, []
        if isinstance(body, Reduce):
            body, red = body.expr, body.axis
        loops = list(self.axes) + red
        sub = dict(env)
        for k, v in enumerate(loops):
            shape = [1] * len(loops)
            shape[k] = v.extent
            sub[v] = _np.arange(v.extent, dtype=_np.int64).reshape(shape)
        full = tuple(v.extent for v in loops)
        val = _np.broadcast_to(_np.asarray(body.ev(sub), dtype=_np.float64), full)
        if red:
            val = val.sum(axis=tuple(range(len(self.axes), len(loops))))
        if _np.isnan(val).any():
            raise ValueError('%s read out of bounds' % self.name)
        return val.astype(_np.float32)


class IRModule(dict):
    pass


class _Device:
    pass


def cpu(n=0):
    return _Device()


class NDArray:
    def __init__(self, a): self.a = _np.asarray(a)
    def numpy(self): return self.a


class _Nd:
    @staticmethod
    def array(a, device=None):
        return NDArray(a)


nd = _Nd()

from . import tir, te, relax  # noqa: E402
