# The README's commands. CMake does the building; this file only sequences it.
BUILD      ?= build
BUILD_ASAN ?= build-asan
JOBS       ?= 2

.PHONY: all deps configure test test-asan demo bench clean

all: $(BUILD)/syno

deps:
	@bash scripts/deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release

$(BUILD)/syno: deps $(BUILD)/CMakeCache.txt FORCE
	cmake --build $(BUILD) -j $(JOBS)

test: $(BUILD)/syno
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# The same suite under AddressSanitizer + UndefinedBehaviorSanitizer.
test-asan: deps
	cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=Debug -DSYNO_SANITIZE=ON
	cmake --build $(BUILD_ASAN) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1 ctest --test-dir $(BUILD_ASAN) --output-on-failure -j $(JOBS)

demo: $(BUILD)/syno
	@bash scripts/demo.sh $(BUILD)/syno

bench: $(BUILD)/syno
	@bash scripts/bench.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD_ASAN)

FORCE:
