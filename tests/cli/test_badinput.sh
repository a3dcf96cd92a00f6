#!/usr/bin/env bash
# The bad-input catalogue: malformed input across every syno command and every benchmark, as a
# new user would type it - unknown options, missing and malformed values, numbers out of
# range (wrapping, NaN, negative), contradictions, names not in a list, bad shapes, unknown
# variables, impossible limits, bad operator text, bad spec JSON, truncated and corrupt data
# files, foreign, damaged and truncated databases, missing files and output paths that cannot
# be written. Each case must exit 2 with exactly one line on stderr that contains the case's
# word (naming the problem), print nothing on stdout, and leave every file of the fixture
# directory byte for byte as it was, with no file added or removed. Prints how many cases it
# tried and how many passed; fails if any case failed.
set -u
SYNO=${1:?usage: test_badinput.sh path/to/syno}
BENCH=${SYNO_BENCH_DIR:-$(dirname "$SYNO")/bench}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fx=$tmp/fx # every file a case is given lives here
mkdir "$fx"
tried=0 passed=0

snapshot() { (cd "$fx" && find . -printf '%p %y\n' | sort && find . -type f -exec md5sum {} + | sort); }

# t WORD CMD... : one case of bad input (exit 2); tx, below, checks it.
t() { tx 2 "$@"; }

# ------------------------------------------------------------------ fixtures
# A real (small) search database, and damaged, truncated, foreign, junk, empty and newer ones.
# Its space holds no operator at depth 4: the search records the baseline alone and says so
# (exit 1).
"$SYNO" search --db "$fx/s.db" --budget 1 --epochs 1 --subset 100 --width 0.25 --depth 1 --confirm 0 \
  --min-speedup 0 --space-depth 4 --quiet 2>"$tmp/search.err"
[ $? -eq 1 ] && grep -q "no operator found" "$tmp/search.err" && [ -s "$fx/s.db" ] ||
  { echo "cannot make the fixture database:"; cat "$tmp/search.err"; exit 1; }
rm -f "$fx"/s-*.png
python3 - "$fx" <<'EOF'
import os, sqlite3, sys
fx = sys.argv[1]
good = open(os.path.join(fx, "s.db"), "rb").read()
page = 4096
assert len(good) >= 4 * page, len(good)
d = bytearray(good)
for i in range(3 * page + 8, 4 * page - 100, 7):  # the candidates table's page, not the header
    d[i] = 0xA5
open(os.path.join(fx, "damaged.db"), "wb").write(bytes(d))
open(os.path.join(fx, "truncated.db"), "wb").write(good[: 2 * page + 100])
open(os.path.join(fx, "junk.db"), "wb").write(bytes((i * 7919) & 0xFF for i in range(3000)))
open(os.path.join(fx, "empty.db"), "wb").close()
c = sqlite3.connect(os.path.join(fx, "foreign.db"))
c.execute("CREATE TABLE t(x)"); c.execute("INSERT INTO t VALUES(1)"); c.commit(); c.close()
open(os.path.join(fx, "newer.db"), "wb").write(good)
c = sqlite3.connect(os.path.join(fx, "newer.db"))
c.execute("PRAGMA journal_mode=DELETE"); c.execute("PRAGMA user_version = 99"); c.commit(); c.close()
EOF
for f in "$fx"/*.db; do rm -f "$f-wal" "$f-shm"; done

# Spec files.
spec() { printf '%s\n' "$2" >"$fx/$1.json"; }
spec prims-array '{"preset": "conv2d", "primitives": ["stride"]}'
spec prims-string '{"preset": "conv2d", "primitives": "stride"}'
spec rules-array '{"preset": "conv2d", "rules": [true]}'
spec rules-string '{"preset": "conv2d", "rules": "U1"}'
spec caps-array '{"preset": "conv2d", "max_count": [1]}'
spec not-json '{"preset": "conv2d",'
spec not-object '[1, 2]'
spec unknown-field '{"preset": "conv2d", "frobnicate": 1}'
spec bad-shape '{"input": "[N, C", "output": "[N]"}'
spec flops-window '{"preset": "conv2d", "min_flops": 5e6, "max_flops": 1e6}'
spec depth-neg '{"preset": "conv2d", "depth": -1}'
spec depth-huge '{"preset": "conv2d", "depth": 1e300}'
spec preset-nope '{"preset": "conv3d"}'
spec tensors '{"preset": "conv2d", "max_tensors": 99}'
spec bind-num '{"preset": "conv2d", "bind": [1]}'
spec bind-var '{"preset": "conv2d", "bind": "Q=3"}'
spec prim-unknown '{"preset": "conv2d", "primitives": {"warp": true}}'
spec rule-unknown '{"preset": "conv2d", "rules": {"U9": false}}'
: >"$fx/empty.json"

# Data files: digits CSVs (truncated gzip, wrong field count, a pixel out of range, empty),
# Fashion-MNIST directories (junk, missing files) and a text corpus too short for a context.
head -c 2000 "$SRC/data/digits.csv.gz" >"$fx/truncated.csv.gz"
printf '1,2,3\n' >"$fx/fields.csv"
{ for i in $(seq 64); do printf '0,'; done; printf '3\n'; for i in $(seq 63); do printf '0,'; done; printf '99,3\n'; } >"$fx/pixel.csv"
: >"$fx/empty.csv"
mkdir "$fx/idx-junk" "$fx/idx-missing"
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  head -c 600 /dev/urandom | gzip >"$fx/idx-junk/$f.gz"
done
mkdir "$fx/images-junk"
for f in train-images train-labels test-images test-labels; do printf 'not an IDX file' >"$fx/images-junk/$f.idx"; done
printf 'ab' >"$fx/short.txt"
# An operator file, a regular file to put paths under, and a bad operator.
printf 'r0=sum(C_in); in[i0, share(r0, 1), i2, i3] expand[share(i1, 1)] w1[r0, i1]\n' >"$fx/op.txt"
printf 'not a directory\n' >"$fx/plain"
OP='r0=sum(C_in); in[i0, share(r0, 1), i2, i3] expand[share(i1, 1)] w1[r0, i1]'
BIND=N=2,C_in=4,C_out=8,H=9,W=9,k=3

# Hostile inputs: a FIFO, a directory, operator text nested 2000 deep, a NUL byte, strict JSON,
# damaged rows of a real database (text in a number column, an operator that does not parse,
# one nested 2000 deep).
mkfifo "$fx/fifo"
mkdir "$fx/adir"
python3 -c "print('in[' + 'div(' * 2000)" >"$fx/deep.txt"
printf 'in[i0\0, i1]' >"$fx/nul.txt"
spec dup '{"preset": "linear", "preset": "conv2d"}'
spec trail '{"preset": "conv2d"} {"preset": "linear"}'
spec u0 '{"preset": "conv2d\u0000xyz"}'
spec emptybind '{"preset": "conv2d", "bind": [""]}'
spec neg '{"preset": "conv2d", "max_expansion_repeat": -1}'
spec fixedpreset '{"preset": "conv2d", "fixed": [[0, 0]]}'
printf '{"preset": "conv2d"\0}' >"$fx/nul.json"
python3 - "$fx" "$OP" <<'EOF2'
import os, shutil, sqlite3, sys
fx, op = sys.argv[1], sys.argv[2]
# s.db holds the baseline alone: the damaged copies get a candidate 2 (the baseline's numbers
# and a real operator) to damage.
for name, sql, arg in (("nan", "UPDATE candidates SET accuracy = 'NaN' WHERE id = 2", None),
                       ("garbage", "UPDATE candidates SET op_text = 'in[[[[ frob(3)' WHERE id = 2", None),
                       ("deeprow", "UPDATE candidates SET op_text = ? WHERE id = 2", "in[" + "div(" * 2000)):
    path = os.path.join(fx, name + ".db")
    shutil.copy(os.path.join(fx, "s.db"), path)
    c = sqlite3.connect(path)
    c.execute("PRAGMA journal_mode=DELETE")
    cur = c.execute("SELECT * FROM candidates WHERE id = 1")
    row = dict(zip([d[0] for d in cur.description], cur.fetchone()))
    row.update(id=2, is_baseline=0, op_text=op, status=0)
    c.execute("INSERT INTO candidates (%s) VALUES (%s)" % (", ".join(row), ", ".join("?" * len(row))), list(row.values()))
    c.execute(sql, (arg,) if arg else ())
    c.commit()
    c.close()
EOF2
DEEP="in[$(python3 -c "print('shift(' * 70 + 'i0' + ')' * 70)"), i1, i2, i3]"

# tx STATUS WORD CMD... : a failure while working (STATUS 1) must also say so in one line, print
# nothing on stdout and leave the fixture files as they were. With TX_OUT=full the command's
# stdout is /dev/full, with TX_OUT=closed it is closed.
tx() {
  local want=$1 word=$2 why=""
  shift 2
  tried=$((tried + 1))
  snapshot >"$tmp/before"
  case "${TX_OUT:-}" in
    full) timeout 60 "$@" >/dev/full 2>"$tmp/err" </dev/null ;;
    closed) timeout 60 "$@" >&- 2>"$tmp/err" </dev/null ;;
    *) timeout 60 "$@" >"$tmp/out" 2>"$tmp/err" </dev/null ;;
  esac
  local st=$?
  [ -n "${TX_OUT:-}" ] && : >"$tmp/out"
  snapshot >"$tmp/after"
  if [ "$st" -ne "$want" ]; then why="exit $st, not $want"
  elif [ -s "$tmp/out" ]; then why="stdout not empty: $(head -c 200 "$tmp/out")"
  elif [ "$(wc -l <"$tmp/err")" -ne 1 ]; then why="stderr is $(wc -l <"$tmp/err") lines, not 1"
  elif ! grep -qF -- "$word" "$tmp/err"; then why="the message lacks '$word'"
  elif ! cmp -s "$tmp/before" "$tmp/after"; then why="the fixture files changed: $(diff "$tmp/before" "$tmp/after" | head -4 | tr '\n' ' ')"
  fi
  if [ -z "$why" ]; then
    passed=$((passed + 1))
  else
    echo "FAIL ($why): ${*#"$SYNO "}"
    head -c 600 "$tmp/err" | sed 's/^/    stderr: /'
  fi
}

# ------------------------------------------------------------------ syno
t "give a command" "$SYNO"
t "unknown command 'frobnicate'" "$SYNO" frobnicate
t "unknown command '--frob'" "$SYNO" --frob

# show
t "--builtin conv3d: must be one of" "$SYNO" show --builtin conv3d
t "--builtin: needs a value" "$SYNO" show --builtin
t "--builtin '': must be one of" "$SYNO" show --builtin ''
t "unknown variable 'Q'" "$SYNO" show --builtin conv2d --bind Q=3
t "is even" "$SYNO" show --builtin conv2d --bind k=4
t "divide" "$SYNO" show --builtin strided-conv2d --bind H=9
t "larger than the unfolded dim" "$SYNO" show --builtin conv2d --bind H=3,W=3,k=5
t "needs --input" "$SYNO" show 'in[i0]'
t "column 4" "$SYNO" show 'in[i0]' --input '[H W]' --output '[H]'
t "bogus" "$SYNO" show 'in[bogus(i0)]' --input '[H]' --output '[H]' --bind H=4
t "never produced" "$SYNO" show 'in[i0]' --input '[H]' --output '[H, W]' --bind H=4,W=4
t "no value for variable 'H'" "$SYNO" show 'in[i0]' --input '[H]' --output '[H]'
t "unknown option '--frob'" "$SYNO" show --builtin conv2d --frob
t "--emit tvm: must be one of pytorch, c" "$SYNO" show --builtin linear --emit tvm
t "--json and --emit exclude each other" "$SYNO" show --builtin conv2d --emit pytorch --json
t "--binding 3 does not exist" "$SYNO" show --builtin linear --emit c --binding 3
t "--binding -1: must be an integer" "$SYNO" show --builtin linear --binding -1
t "--binding x: must be an integer" "$SYNO" show --builtin linear --binding x
t "either --builtin or an operator text" "$SYNO" show --builtin conv2d 'in[i0]'
t "--preset conv3d: must be one of" "$SYNO" show "$OP" --preset conv3d
t "cannot be combined with --preset" "$SYNO" show "$OP" --preset conv2d --input '[N]'
t "--vars" "$SYNO" show 'in[i0]' --input '[H]' --output '[H]' --vars '1x'
t "N=abc" "$SYNO" show --builtin conv2d --bind N=abc
t "--bind: given more than 32 times" "$SYNO" show --builtin linear $(for i in $(seq 33); do printf -- '--bind N=%d ' "$i"; done)
t "--json=1: the flag takes no value" "$SYNO" show --builtin conv2d --json=1
t "no operator" "$SYNO" show
t "unexpected argument 'extra'" "$SYNO" show 'in[i0]' extra --input '[H]' --output '[H]'
t "--input: needs a value" "$SYNO" show 'in[i0]' --input --output '[H]'
t "share" "$SYNO" show 'in[share(i0, 1)]' --input '[H]' --output '[H]' --bind H=4

# run
# export: nothing is written when a case is refused (-o points into the fixture directory).
t "give --to LANG" "$SYNO" export --builtin linear -o "$fx/op.c"
t "--to onnx: must be one of pytorch, tvm, c, halide, dot" "$SYNO" export --to onnx --builtin linear
t "--png applies to --to dot only" "$SYNO" export --to c --png --builtin linear -o "$fx/op.png"
t "does not exist" "$SYNO" export --to c --builtin linear -o "$fx/nodir/op.c"
t "is a directory" "$SYNO" export --to c --builtin linear -o "$fx"
t "--binding 1 does not exist" "$SYNO" export --to tvm --builtin linear --binding 1 -o "$fx/op.py"
t "column 4" "$SYNO" export --to pytorch 'in[i0]' --input '[H W]' --output '[H]' -o "$fx/op.py"
t "found 'i1' at column 7" "$SYNO" export --to c 'in[i0 i1]' --input '[H, W]' --output '[H, W]' --bind H=2,W=2 -o "$fx/op.c"
t "give either --preset or --spec" "$SYNO" export --to c "$OP" --preset conv2d --spec "$fx/empty.json"
t "--spec" "$SYNO" export --to c "$OP" --spec "$fx/empty.json"
t "--seed x: must be a non-negative integer" "$SYNO" run --builtin conv2d --seed x
t "--seed -1: must be a non-negative integer" "$SYNO" run --builtin conv2d --seed -1
t "--seed 18446744073709551616" "$SYNO" run --builtin conv2d --seed 18446744073709551616
t "--binding 3 does not exist (the operator has 1)" "$SYNO" run --builtin conv2d --binding 3
t "unknown option '--frob'" "$SYNO" run --builtin conv2d --frob
t "unknown variable 'Q'" "$SYNO" run --builtin linear --bind Q=1
t "no operator" "$SYNO" run

# sample and space
t "--preset conv3d: must be one of" "$SYNO" sample --preset conv3d
t "exactly one of --preset NAME and --spec FILE" "$SYNO" sample
t "exactly one of --preset NAME and --spec FILE" "$SYNO" sample --preset conv2d --spec "$fx/op.txt"
t "-n 0: must be an integer" "$SYNO" sample --preset conv2d -n 0
t "-n -5: must be an integer" "$SYNO" sample --preset conv2d -n -5
t "-n 1e3: must be an integer" "$SYNO" sample --preset conv2d -n 1e3
t "--threads 0: must be an integer in 1..64" "$SYNO" sample --preset conv2d --threads 0
t "--threads 65: must be an integer in 1..64" "$SYNO" sample --preset conv2d --threads 65
t "--depth 0: must be an integer in 1..40" "$SYNO" sample --preset conv2d --depth 0
t "--depth 41: must be an integer in 1..40" "$SYNO" sample --preset conv2d --depth 41
t "'merg' is not a primitive" "$SYNO" sample --preset conv2d --max-count merg=1
t "the cap of split, 'x'" "$SYNO" space --preset conv2d --max-count split=x
t "max_count of share is 1" "$SYNO" sample --preset conv2d --max-count share=1
t "--spec /nonexistent.json: no such file" "$SYNO" sample --spec /nonexistent.json
t "is a directory" "$SYNO" sample --spec "$fx"
t "field 'primitives' must be an object" "$SYNO" sample --spec "$fx/prims-array.json"
t "field 'primitives' must be an object" "$SYNO" sample --spec "$fx/prims-string.json"
t "field 'rules' must be an object" "$SYNO" space --spec "$fx/rules-array.json"
t "field 'rules' must be an object" "$SYNO" space --spec "$fx/rules-string.json"
t "field 'max_count' must be an object" "$SYNO" sample --spec "$fx/caps-array.json"
t "not valid JSON" "$SYNO" sample --spec "$fx/not-json.json"
t "not valid JSON" "$SYNO" sample --spec "$fx/empty.json"
t "must be a JSON object" "$SYNO" sample --spec "$fx/not-object.json"
t "unknown field 'frobnicate'" "$SYNO" sample --spec "$fx/unknown-field.json"
t "input shape" "$SYNO" space --spec "$fx/bad-shape.json"
t "above max_flops" "$SYNO" sample --spec "$fx/flops-window.json"
t "depth -1 out of range" "$SYNO" sample --spec "$fx/depth-neg.json"
t "field 'depth' must be an integer" "$SYNO" sample --spec "$fx/depth-huge.json"
t "unknown preset 'conv3d'" "$SYNO" sample --spec "$fx/preset-nope.json"
t "max_tensors 99 out of range" "$SYNO" sample --spec "$fx/tensors.json"
t "field 'bind' must be" "$SYNO" sample --spec "$fx/bind-num.json"
t "unknown variable 'Q'" "$SYNO" sample --spec "$fx/bind-var.json"
t "'warp' is not a primitive" "$SYNO" sample --spec "$fx/prim-unknown.json"
t "'U9' is not a rule" "$SYNO" sample --spec "$fx/rule-unknown.json"
t "--bind goes into the spec file" "$SYNO" sample --spec "$fx/unknown-field.json" --bind N=2
t "unknown variable 'Q'" "$SYNO" sample --preset conv2d --bind Q=1
t "--seed -1: must be a non-negative integer" "$SYNO" sample --preset conv2d --seed -1
t "--duplicates needs --exhaustive" "$SYNO" space --preset conv2d --duplicates
t "--walks 0: must be an integer" "$SYNO" space --preset conv2d --walks 0
t "--walks x: must be an integer" "$SYNO" space --preset conv2d --walks x
t "--walks is for the estimate" "$SYNO" space --preset conv2d --exhaustive --walks 5
t "not valid JSON" "$SYNO" space --spec "$fx/junk.db"
t "unknown option '--frob'" "$SYNO" space --preset conv2d --frob
t "--depth abc: must be an integer" "$SYNO" space --preset conv2d --depth abc

# eval (the worker)
t "--backbone bert: must be one of resnet18, resnet, resnet34, resnext29, densenet121, efficientnetv2s, vgg, gpt" "$SYNO" eval --backbone bert
t "--preset linear: the resnet backbone's slots are convolutions" "$SYNO" eval --preset linear
t "--dataset imagenet: must be one of digits, fashion-mnist, kjv" "$SYNO" eval --dataset imagenet
t "the gpt backbone trains on kjv" "$SYNO" eval --backbone gpt --dataset digits
t "trains on images: digits, fashion-mnist, cifar10" "$SYNO" eval --backbone resnet --dataset kjv
t "--kernels tvm: must be one of exec, halide, best" "$SYNO" eval --kernels tvm
t "--kernels fast: must be one of exec, halide, best" "$SYNO" search --kernels fast --db "$fx/k.db"
t "--epochs 0: must be an integer" "$SYNO" eval --epochs 0
t "--lr nan: must be a finite number" "$SYNO" eval --lr nan
t "--time-limit -1: must be a finite number" "$SYNO" eval --time-limit -1
t "--repeats 5000: must be an integer in 1..1000" "$SYNO" eval --repeats 5000
t "--op" "$SYNO" eval --op 'in[bogus]' --plan
t "--plan and --confirm exclude each other" "$SYNO" eval --plan --confirm
t "--threads 300: must be an integer in 0..256" "$SYNO" eval --threads 300
t "--repeats 0: must be an integer" "$SYNO" eval --repeats 0
t "--min-speedup -1: must be a finite number" "$SYNO" eval --min-speedup -1
t "width must be in (0, 16] (got 17)" "$SYNO" eval --width 17
t "unexpected argument 'B'" "$SYNO" eval --op A B
t "--seed 1.5: must be a non-negative integer" "$SYNO" eval --seed 1.5

# search
S=("$SYNO" search --db "$fx/new.db")
t "give --db FILE for a new search or --resume FILE" "$SYNO" search
t "--lr nan: must be a finite number in (0, 100]" "${S[@]}" --lr nan
t "--lr -1: must be a finite number in (0, 100]" "${S[@]}" --lr -1
t "--subset -5: must be an integer in 0..100000000" "${S[@]}" --subset -5
t "--timeout -5: must be a finite number in (0, " "${S[@]}" --timeout -5
t "--timeout nan: must be a finite number in (0, " "${S[@]}" --timeout nan
t "--timeout 0: must be a finite number in (0, " "${S[@]}" --timeout 0
t "--width 0: must be a finite number in (0, 4096]" "${S[@]}" --width 0
t "--epochs 4294967297: must be an integer in 1..10000" "${S[@]}" --epochs 4294967297
t "--workers 4294967297: must be an integer in 1..256" "${S[@]}" --workers 4294967297
t "--workers 0: must be an integer in 1..256" "${S[@]}" --workers 0
t "--budget 4294967296: must be an integer in 0..1000000000" "${S[@]}" --budget 4294967296
t "--budget -1: must be an integer in 0..1000000000" "${S[@]}" --budget -1
t "--batch 1000000000000: must be an integer in 1..65536" "${S[@]}" --batch 1000000000000
t "--reward-lb 2: must be a finite number in [0, 1]" "${S[@]}" --reward-lb 2 --reward-ub 1
t "--reward-lb 0.9 must be below --reward-ub 0.5" "${S[@]}" --reward-lb 0.9 --reward-ub 0.5
t "--min-flops 0.5 is above --max-flops 0.2" "${S[@]}" --min-flops 0.5 --max-flops 0.2
t "--min-flops 0.95 is above --max-flops 0.9 (the default)" "${S[@]}" --min-flops 0.95
t "--backbone does not apply on --resume" "$SYNO" search --resume "$fx/s.db" --backbone vgg
t "--seed does not apply on --resume" "$SYNO" search --resume "$fx/s.db" --seed 3
t "--min-speedup does not apply on --resume" "$SYNO" search --resume "$fx/s.db" --min-speedup 2
t "not a syno results database (not an SQLite file)" "$SYNO" search --resume "$fx/junk.db"
t "another application" "$SYNO" search --resume "$fx/foreign.db"
t "is damaged" "$SYNO" search --resume "$fx/damaged.db"
t "is empty" "$SYNO" search --resume "$fx/empty.db"
t "newer than this syno" "$SYNO" search --resume "$fx/newer.db"
t "--resume /nonexistent.db: no such file" "$SYNO" search --resume /nonexistent.db
t "is a directory" "$SYNO" search --resume "$fx"
t "--db $fx/s.db: already exists" "$SYNO" search --db "$fx/s.db"
t "its directory /nonexistent-dir does not exist" "$SYNO" search --db /nonexistent-dir/x.db
t "its directory $fx/plain is not a directory" "$SYNO" search --db "$fx/plain/x.db"
t "--db and --resume exclude each other" "$SYNO" search --db "$fx/x.db" --resume "$fx/s.db"
t "--mpi and --workers exclude each other" "$SYNO" search --db "$fx/x.db" --mpi --workers 2
t "--ordered does not apply on --resume" "$SYNO" search --resume "$fx/s.db" --ordered
t "--stand-in does not apply on --resume" "$SYNO" search --resume "$fx/s.db" --stand-in
t "--backbone bert: must be one of resnet18, resnet, resnet34, resnext29, densenet121, efficientnetv2s, vgg, gpt" "${S[@]}" --backbone bert
t "--dataset imagenet: must be one of digits, fashion-mnist, kjv" "${S[@]}" --dataset imagenet
t "--preset linear: the resnet backbone's slots are convolutions" "${S[@]}" --preset linear
t "--preset conv2d: gpt's slots are linear layers" "${S[@]}" --backbone gpt --preset conv2d
t "--dataset kjv is text: it is for a language model (--backbone gpt)" "${S[@]}" --dataset kjv
t "--width 20: the resnet backbone's channel multiplier is at most 16" "${S[@]}" --width 20
t "--dataset digits: gpt trains on text (kjv)" "${S[@]}" --backbone gpt --dataset digits
t "--confirm ranks by accuracy; it is not available for gpt" "${S[@]}" --backbone gpt --confirm 2
t "gpt is rewarded by perplexity" "${S[@]}" --backbone gpt --reward-lb 0.5
t "--max-tensors 1: must be an integer in 2..4" "${S[@]}" --max-tensors 1
t "--max-tensors 5: must be an integer in 2..4" "${S[@]}" --max-tensors 5
t "'merg' is not a primitive" "${S[@]}" --max-count merg=1
t "--log /nonexistent-dir/log: its directory /nonexistent-dir does not exist" "${S[@]}" --log /nonexistent-dir/log
t "--seed 9007199254740993: must be an integer in 0..9007199254740992" "${S[@]}" --seed 9007199254740993
t "--pad 65: must be an integer in 0..64" "${S[@]}" --pad 65
t "--space-depth 0: must be an integer in 1..40" "${S[@]}" --space-depth 0
t "--confirm -1: must be an integer in 0..1000" "${S[@]}" --confirm -1
t "--min-speedup -1: must be a finite number" "${S[@]}" --min-speedup -1
t "--max-params -1: must be a finite number" "${S[@]}" --max-params -1
t "--time -1: must be a finite number" "${S[@]}" --time -1
t "--max-flops nan: must be a finite number" "${S[@]}" --max-flops nan
t "--random=1: the flag takes no value" "${S[@]}" --random=1
t "unexpected argument 'extra'" "${S[@]}" extra
t "unknown option '--frob'" "${S[@]}" --frob
t "--epochs: needs a value" "${S[@]}" --epochs

# report
t "give the results database with --db FILE" "$SYNO" report
t "not a syno results database (not an SQLite file)" "$SYNO" report --db "$fx/junk.db"
t "not a syno results database (not an SQLite file)" "$SYNO" report --table "$fx/s.db" --table "$fx/junk.db"
t "is damaged" "$SYNO" report --table "$fx/damaged.db"
t "--table and --csv exclude each other" "$SYNO" report --table "$fx/s.db" --csv
t "/nonexistent.db: no such results database" "$SYNO" report --table /nonexistent.db
t "another application" "$SYNO" report --db "$fx/foreign.db"
t "is damaged" "$SYNO" report --db "$fx/damaged.db"
t "is damaged" "$SYNO" report --db "$fx/truncated.db"
t "is empty" "$SYNO" report --db "$fx/empty.db"
t "newer than this syno" "$SYNO" report --db "$fx/newer.db"
t "--db /nonexistent.db: no such file" "$SYNO" report --db /nonexistent.db
t "is a directory" "$SYNO" report --db "$fx"
t "--top 0: must be an integer in 1..1000000" "$SYNO" report --db "$fx/s.db" --top 0
t "--top 99999999999: must be an integer in 1..1000000" "$SYNO" report --db "$fx/s.db" --top 99999999999
t "--json and --csv exclude each other" "$SYNO" report --db "$fx/s.db" --json --csv
t "--out /nonexistent-dir/sub: no such directory" "$SYNO" report --db "$fx/s.db" --out /nonexistent-dir/sub
t "--out $fx/plain: is not a directory" "$SYNO" report --db "$fx/s.db" --out "$fx/plain"
t "--out $fx/plain/sub" "$SYNO" report --db "$fx/s.db" --out "$fx/plain/sub"

# train
t "--epochs x: must be an integer in 1..10000" "$SYNO" train --epochs x
t "--epochs 0: must be an integer in 1..10000" "$SYNO" train --epochs 0
t "--backbone lenet: must be one of resnet18, resnet, resnet34, resnext29, densenet121, efficientnetv2s, vgg, gpt" "$SYNO" train --backbone lenet
t "--optimizer lion: must be one of sgd, adamw" "$SYNO" train --optimizer lion
t "--lr 0: must be a finite number in (0, 100]" "$SYNO" train --lr 0
t "--momentum 1: must be a finite number in [0, 0.9999]" "$SYNO" train --momentum 1
t "--wd 2: must be a finite number in [0, 1]" "$SYNO" train --wd 2
t "--width 0: must be a finite number" "$SYNO" train --width 0
t "width" "$SYNO" train --width 17
t "--heads 0: must be an integer" "$SYNO" train --backbone gpt --heads 0
t "are gpt options" "$SYNO" train --backbone resnet --context 32
t "nope.csv" "$SYNO" train --dataset /nonexistent/nope.csv
t "corrupt or truncated gzip" "$SYNO" train --dataset "$fx/truncated.csv.gz"
t "found 3 fields" "$SYNO" train --dataset "$fx/fields.csv"
t "pixel 64 is 99" "$SYNO" train --dataset "$fx/pixel.csv"
t "no samples" "$SYNO" train --dataset "$fx/empty.csv"
t "bad magic number" "$SYNO" train --dataset "$fx/idx-junk"
t "cannot read" "$SYNO" train --dataset "$fx/idx-missing"
t "train-images.idx: bad magic number 0x6e6f7420" env SYNO_IMAGES_DIR="$fx/images-junk" "$SYNO" train --dataset images
t "not an IDX file" env SYNO_IMAGES_DIR="$fx/images-junk" "$SYNO" search --dataset images --db "$fx/new.db"
t "train-images.idx: no such file" env SYNO_IMAGES_DIR="$fx/idx-missing" "$SYNO" eval --dataset images --plan
t "train-images.idx: no such file" env SYNO_IMAGES_DIR="$fx/idx-missing" "$SYNO" search --dataset images --db "$fx/new.db"
t "too short" "$SYNO" train --backbone gpt --dataset "$fx/short.txt"
t "operator" "$SYNO" train --op 'r0=sum(C_in); in[i0, share(r0, 1)'
t "--op-file /nonexistent/op.txt: no such file" "$SYNO" train --op-file /nonexistent/op.txt
t "is a directory" "$SYNO" train --op-file "$fx"
t "--op and --op-file exclude each other" "$SYNO" train --op "$OP" --op-file "$fx/op.txt"
t "has no candidate 999" "$SYNO" train --db "$fx/s.db" --id 999
t "--db and --id go together" "$SYNO" train --db "$fx/s.db"
t "drop --backbone" "$SYNO" train --db "$fx/s.db" --id 1 --backbone vgg
t "not a syno results database (not an SQLite file)" "$SYNO" train --db "$fx/junk.db" --id 1
t "is damaged" "$SYNO" train --db "$fx/damaged.db" --id 1
t "--id 0: must be an integer" "$SYNO" train --db "$fx/s.db" --id 0
t "--pad 65: must be an integer in 0..64" "$SYNO" train --pad 65
t "--subset -1: must be an integer" "$SYNO" train --subset -1
t "--time-limit -1: must be a finite number" "$SYNO" train --time-limit -1
t "--batch 0: must be an integer in 1..65536" "$SYNO" train --batch 0
t "--warmup 1.5: must be an integer" "$SYNO" train --warmup 1.5
t "unexpected argument 'extra'" "$SYNO" train extra
t "--preset conv3d: must be one of" "$SYNO" train --preset conv3d
t "linear slot operator" "$SYNO" train --backbone gpt --op "$OP"

# ------------------------------------------------------------------ hostile inputs, every command
# Spec files that are not files, or not strict JSON, for every command that takes --spec.
for c in show export run sample space; do
  case $c in
    show) argv=(show "$OP") ;;
    export) argv=(export --to c "$OP") ;;
    run) argv=(run "$OP") ;;
    sample) argv=(sample -n 1) ;;
    space) argv=(space --depth 2) ;;
  esac
  t "fifo is a FIFO, not a regular file" "$SYNO" "${argv[@]}" --spec "$fx/fifo"
  t "/dev/zero is a device, not a regular file" "$SYNO" "${argv[@]}" --spec /dev/zero
  t "adir" "$SYNO" "${argv[@]}" --spec "$fx/adir"
  t "field 'preset' is given twice" "$SYNO" "${argv[@]}" --spec "$fx/dup.json"
  t "data after the JSON object" "$SYNO" "${argv[@]}" --spec "$fx/trail.json"
  t "a string with a NUL byte" "$SYNO" "${argv[@]}" --spec "$fx/u0.json"
  t "field 'bind' has an empty binding" "$SYNO" "${argv[@]}" --spec "$fx/emptybind.json"
  t "field 'max_expansion_repeat' must be a number >= 0" "$SYNO" "${argv[@]}" --spec "$fx/neg.json"
  t "cannot be combined with 'vars', 'input', 'output' or 'fixed'" "$SYNO" "${argv[@]}" --spec "$fx/fixedpreset.json"
  t "is not valid JSON: a NUL byte" "$SYNO" "${argv[@]}" --spec "$fx/nul.json"
done
# Operator text nested too deep, on the command line and in files.
t "calls nested deeper than 64" "$SYNO" show "$DEEP" --preset conv2d
t "calls nested deeper than 64" "$SYNO" export --to pytorch "$DEEP" --preset conv2d
t "calls nested deeper than 64" "$SYNO" run "$DEEP" --preset conv2d --bind N=1,C_in=2,C_out=2,H=4
t "calls nested deeper than 64" "$SYNO" train --op "$DEEP"
t "calls nested deeper than 64" "$SYNO" eval --op "$DEEP"
t "calls nested deeper than 64" "$SYNO" train --op-file "$fx/deep.txt"
t "has a NUL byte at offset 5" "$SYNO" train --op-file "$fx/nul.txt"
t "fifo is a FIFO, not a regular file" "$SYNO" train --op-file "$fx/fifo"
t "/dev/zero is a device, not a regular file" "$SYNO" train --op-file /dev/zero
t "adir: is a directory, not a file" "$SYNO" train --op-file "$fx/adir"
# Data sets that are not files.
t "fifo is a FIFO, not a regular file" "$SYNO" train --dataset "$fx/fifo"
t "/dev/zero is a device, not a regular file" "$SYNO" train --dataset /dev/zero
t "fifo is a FIFO, not a regular file" "$SYNO" train --backbone gpt --dataset "$fx/fifo"
t "/dev/zero is a device, not a regular file" "$SYNO" train --backbone gpt --dataset /dev/zero
# Databases that are not files, or hold damaged rows, for every command that reads one.
for bad in fifo /dev/zero adir; do
  path=$bad word="not a regular file"
  [ "$bad" = /dev/zero ] || path="$fx/$bad"
  [ "$bad" = adir ] && word="adir"
  t "$word" "$SYNO" report --db "$path"
  t "$word" "$SYNO" report --table "$path"
  t "$word" "$SYNO" export --to pytorch --db "$path" --id 2
  t "$word" "$SYNO" train --db "$path" --id 2
  t "$word" "$SYNO" eval --db "$path" --id 2 --retime
  t "$word" "$SYNO" search --resume "$path"
done
for cmd in "report --db $fx/nan.db" "report --table $fx/nan.db" "export --to pytorch --db $fx/nan.db --id 2" \
           "export --to pytorch --db $fx/nan.db --best" "train --db $fx/nan.db --id 2" \
           "eval --db $fx/nan.db --id 2 --retime" "search --resume $fx/nan.db"; do
  read -ra argv <<<"$cmd"
  t "candidate 2 is damaged: column 'accuracy' holds text where a number belongs" "$SYNO" "${argv[@]}"
done
t "candidate 2 is damaged: its operator does not parse" "$SYNO" report --db "$fx/garbage.db"
t "candidate 2 is damaged: its operator does not parse" "$SYNO" report --db "$fx/deeprow.db"
t "candidate 2 is damaged: its operator does not parse" "$SYNO" search --resume "$fx/garbage.db"
t "calls nested deeper than 64" "$SYNO" train --db "$fx/deeprow.db" --id 2
t "calls nested deeper than 64" "$SYNO" export --to c --db "$fx/deeprow.db" --id 2
t "calls nested deeper than 64" "$SYNO" eval --db "$fx/deeprow.db" --id 2 --retime
t "candidate 2 is damaged: its operator does not parse" "$SYNO" export --to c --db "$fx/garbage.db" --id 2
t "candidate 2 is damaged: its operator does not parse" "$SYNO" train --db "$fx/garbage.db" --id 2
# Logs and output directories that are not what they should be.
tx 1 "fifo is not a regular file (a FIFO without a reader)" "$SYNO" search --db "$tmp/new.db" --log "$fx/fifo" --stand-in --budget 1
t "adir" "$SYNO" search --db "$tmp/new2.db" --log "$fx/adir" --stand-in --budget 1
t "fifo" "$SYNO" report --db "$fx/s.db" --out "$fx/fifo"
# Output that cannot be written: a full device, a closed stdout (exit 1, one line).
for cmd in "show --builtin conv2d" "show --builtin conv2d --json" "show --builtin linear --emit c" \
           "export --to pytorch --builtin conv2d" "run --builtin linear" "sample --preset conv2d -n 2" \
           "space --preset conv2d --depth 3" "report --db $fx/s.db --out $tmp" "report --db $fx/s.db --json --out $tmp" \
           "report --db $fx/s.db --csv --out $tmp" "train --list-slots"; do
  read -ra argv <<<"$cmd"
  TX_OUT=full tx 1 "No space left on device" "$SYNO" "${argv[@]}"
  TX_OUT=closed tx 1 "cannot" "$SYNO" "${argv[@]}"
done
# Out of memory, with the address space limited: a message and exit 1, promptly. (Not under
# AddressSanitizer, whose shadow memory alone exceeds the limit.)
if ! ldd "$SYNO" 2>/dev/null | grep -q libasan; then
  tx 1 "out of memory" bash -c 'ulimit -v 200000; exec "$0" "$@"' "$SYNO" run --builtin conv2d --bind N=64,C_in=64,C_out=64,H=256,W=256,k=3
  tx 1 "out of memory" bash -c 'ulimit -v 200000; exec "$0" "$@"' "$SYNO" train --epochs 1 --subset 100
fi
tx 1 "out of memory" "$SYNO" run --builtin linear --bind N=2147483648,C_in=2147483648,C_out=2

# ------------------------------------------------------------------ the benchmarks
t "unknown option '--frob'" "$BENCH/search" --frob
t "--budget 0: must be an integer in 1..1024" "$BENCH/search" --budget 0
t "unexpected argument 'extra'" "$BENCH/search" 5 digits 3 extra
t "either as an operand or as --budget" "$BENCH/search" --budget 5 6
t "DATASET imagenet: must be one of digits, fashion-mnist" "$BENCH/search" 5 imagenet
t "--dataset imagenet: must be one of digits, fashion-mnist" "$BENCH/op" --dataset imagenet
t "--pad 99: must be an integer in 0..64" "$BENCH/op" --pad 99
t "bogus" "$BENCH/op" --op 'in[bogus(i0)]'
t "--only e: must be one of a, b, c, d" "$BENCH/space" --only e
t "'X9' is not a rule" "$BENCH/space" --off U4,X9
t "--cap 0: must be a finite number" "$BENCH/space" --cap 0
t "--width 0: must be a finite number" "$BENCH/train" --width 0
t "--reps 101: must be an integer in 1..100" "$BENCH/train" --reps 101
t "--reps 0: must be an integer in 1..1000" "$BENCH/conv" --reps 0
t "--sample-reps -1: must be an integer in 0..1000" "$BENCH/exec" --sample-reps -1
t "unknown option '--frob'" "$BENCH/exec" --frob
t "--workers: '0' is not a worker count" "$BENCH/dist" --workers 1,0
t "--budget 0: must be an integer in 1..100000" "$BENCH/dist" --budget 0

echo "bad-input catalogue: $tried cases tried, $passed passed, $((tried - passed)) failed"
[ "$passed" -eq "$tried" ]
