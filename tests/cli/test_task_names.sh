#!/usr/bin/env bash
# The task table (include/syno/task.h, src/task/task.c) is the one list of backbone and data
# set names: outside it, no source of src/ or bench/ compares a name with a backbone's or a
# data set's (strcmp with "gpt", "kjv", ...) or spells out a list of them. A name may stand
# alone as a default ("resnet", "digits"), and the model's builder table (src/model/backbone.c,
# how each backbone is built) names each one; a test there builds every name of the table.
# usage: test_task_names.sh SYNO (the binary is not used: this reads the sources)
src=$(cd "$(dirname "$0")/../.." && pwd)
names='resnet18|resnet|resnet34|resnext29|densenet121|efficientnetv2s|vgg|gpt|digits|fashion-mnist|kjv|cifar10|cifar100|cifar100-coarse|images'
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

files=$(find "$src/src" "$src/bench" -name '*.c' -not -path "$src/src/task/*")
# 1. a comparison with a name
hits=$(grep -nE "str(n)?cmp\([^;]*\"($names)\"" $files)
[ -z "$hits" ] && ok || bad "names compared outside the task table:
$hits"
# 2. a list: two or more names in one initializer (the builder table aside)
hits=$(grep -nE "\"($names)\",[^\"]*\"($names)\"" $files | grep -v "^$src/src/model/backbone.c:[0-9]*: *{\"")
[ -z "$hits" ] && ok || bad "name lists outside the task table:
$hits"
# 3. the builder table names only backbones of the task table
for n in $(sed -n 's/^ *{"\([a-z0-9]*\)", F_.*/\1/p' "$src/src/model/backbone.c"); do
  grep -q "{\"$n\", SYNO_TASK_" "$src/src/task/task.c" && ok || bad "the model builds '$n', which the task table does not have"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
