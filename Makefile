# The two commands a fresh machine needs: `make demo` and `make test`. Everything else is a
# step they use.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
SWITCHYARD := $(BUILD)/tools/switchyard
DEMO_MODEL := $(BUILD)/demo/squeezenet1_1.onnx

.PHONY: all deps build test unit conformance models demo test-sanitize bench format clean

all: build

deps:
	scripts/install-deps

build: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

# Every test: unit, error handling, conformance (ONNX backend suite) and reference models.
test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

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

bench: build
	bench/run_cpu_bench.sh

format:
	clang-format -i $$(git ls-files '*.cc' '*.h' '*.hpp')

clean:
	rm -rf $(BUILD) $(BUILD)-sanitize
