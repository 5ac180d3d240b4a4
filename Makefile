# The two commands a fresh machine needs: `make demo` and `make test`. Everything else is a
# step they use.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
SWITCHYARD := $(BUILD)/tools/switchyard
DEMO_MODEL := $(BUILD)/demo/squeezenet1_1.onnx

FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
# The short fuzz run `make test` ends with (seconds per target).
TEST_FUZZ_SECONDS ?= 20

.PHONY: all deps build test unit conformance models demo test-sanitize test-tsan fuzz bench format clean

all: build

deps:
	scripts/install-deps

build: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

# Every test: unit, error handling, conformance (ONNX backend suite) and reference models.
# Ends with a short fuzz run of every target (tests/fuzz), so CI replays the saved crashes and
# looks for new ones.
test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	$(MAKE) fuzz FUZZ_SECONDS=$(TEST_FUZZ_SECONDS)

unit: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L unit

conformance: build
	cd $(BUILD) && ctest --output-on-failure -L conformance

models: build
	cd $(BUILD) && ctest --output-on-failure -L models

$(DEMO_MODEL): examples/make_demo_model.py
	mkdir -p $(dir $@)
	/usr/bin/python3 examples/make_demo_model.py $@

# The main job on the bundled example: what `info` shows, the placement, outputs and time.
demo: build $(DEMO_MODEL)
	$(SWITCHYARD) info $(DEMO_MODEL)
	@echo
	$(SWITCHYARD) run $(DEMO_MODEL) --dim batch=1 --seed 7 --iterations 10 --outputs $(BUILD)/demo/outputs.npz
	@echo
	@echo "# The same model on a simulated accelerator that lacks two of its ops: placement says so."
	$(SWITCHYARD) run $(DEMO_MODEL) --dim batch=1 --seed 7 --iterations 10 --sim-config examples/demo_sim.json --device sim:0

# Unit and error tests under AddressSanitizer + UBSan (not part of CI).
test-sanitize: deps
	cmake -S . -B $(BUILD)-sanitize -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSWITCHYARD_SANITIZE=ON -DSWITCHYARD_BUILD_BENCH=OFF -DSWITCHYARD_CUDA=OFF
	cmake --build $(BUILD)-sanitize -j $(JOBS)
	cd $(BUILD)-sanitize && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS) -L unit

# libFuzzer targets under ASan and UBSan, built with clang in their own folder; each runs
# FUZZ_SECONDS after replaying tests/fuzz/regressions. Fails when any target finds a crash.
fuzz: deps
	CC=clang-16 CXX=clang++-16 cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Fuzz \
	  -DSWITCHYARD_FUZZ=ON -DSWITCHYARD_CUDA=OFF -DSWITCHYARD_BUILD_TESTS=OFF -DSWITCHYARD_BUILD_BENCH=OFF
	nice -n 10 cmake --build $(FUZZ_BUILD) --target fuzz_targets -j $(JOBS)
	BUILD_FUZZ=$(FUZZ_BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run_fuzz.sh

# Concurrent runs under ThreadSanitizer (clang-16 from Debian): the public-API stress test, the
# executable tests, runs in flight (run_async, overlapping devices) and the variables' tests, in
# their own build folder. Not part of CI (a third full build).
test-tsan: deps
	cmake -S . -B $(BUILD)-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_C_COMPILER=clang-16 -DCMAKE_CXX_COMPILER=clang++-16 -DSWITCHYARD_TSAN=ON \
	  -DSWITCHYARD_BUILD_BENCH=OFF -DSWITCHYARD_CUDA=OFF
	cmake --build $(BUILD)-tsan -j $(JOBS) --target runtime_concurrency_test runtime_executable_test \
	  runtime_async_run_test runtime_overlap_test builder_state_test
	for t in runtime_concurrency_test runtime_executable_test runtime_async_run_test \
	  runtime_overlap_test builder_state_test; do \
	  TSAN_OPTIONS="suppressions=$(CURDIR)/tests/tsan.supp halt_on_error=1 history_size=4" \
	    $(BUILD)-tsan/tests/$$t || exit 1; \
	done

bench: build
	bench/run_cpu_bench.sh

format:
	clang-format -i $$(git ls-files '*.cc' '*.h' '*.hpp')

clean:
	rm -rf $(BUILD) $(BUILD)-sanitize $(BUILD)-tsan $(FUZZ_BUILD)
