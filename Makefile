# The README's commands. CMake does the building; this file only sequences it.
# Each target first installs (as root, via apt) what it needs and no more:
# `make` only what the build needs; `make test` adds cmocka and PyTorch;
# `make fuzz` clang and libFuzzer.
BUILD      ?= build
BUILD_ASAN ?= build-asan
BUILD_FUZZ ?= build-fuzz
JOBS       ?= 2
# `make fuzz`: seconds per target, and the targets (tests/fuzz/fuzz_<t>.c).
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= sizes spec operator csv idx text db opt

.PHONY: all test test-asan valgrind fuzz demo bench clean FORCE

all: FORCE
	@bash scripts/deps.sh build
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j $(JOBS)

# The tests are configured only here (they need cmocka), so plain `make`
# builds on a machine without the test dependencies.
test: FORCE
	@bash scripts/deps.sh test
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DSYNO_TESTS=ON
	cmake --build $(BUILD) -j $(JOBS)
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# The same suite under AddressSanitizer + UndefinedBehaviorSanitizer.
test-asan: FORCE
	@bash scripts/deps.sh test
	cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=Debug -DSYNO_SANITIZE=ON -DSYNO_TESTS=ON
	cmake --build $(BUILD_ASAN) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1 ctest --test-dir $(BUILD_ASAN) --output-on-failure -j $(JOBS)

# valgrind memcheck on a short search (the driver, then one evaluation).
valgrind: all
	@bash scripts/deps.sh valgrind
	@bash scripts/valgrind.sh $(BUILD)

# Each parser a user can reach under libFuzzer with ASan+UBSan, FUZZ_SECONDS
# each, from a scratch copy of its committed corpus (docs/fuzz.md). Fails on
# any crash, leak, hang or runaway allocation.
fuzz: FORCE
	@bash scripts/deps.sh fuzz
	cmake -S . -B $(BUILD_FUZZ) -DCMAKE_C_COMPILER=clang-14 -DCMAKE_BUILD_TYPE=Debug -DSYNO_FUZZ=ON
	cmake --build $(BUILD_FUZZ) -j $(JOBS) --target fuzz
	@bash scripts/fuzz.sh $(BUILD_FUZZ) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

demo: all
	@bash scripts/deps.sh demo
	@bash scripts/demo.sh $(BUILD)/syno

bench: all
	@bash scripts/deps.sh bench
	@bash scripts/bench.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_FUZZ)

FORCE:
