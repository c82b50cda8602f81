# The two commands a newcomer runs (see README.md):
#   make up    install what is missing, build, start the all-in-one cluster
#   make test  the same set-up, then the whole test suite
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all setup configure build up test fuzz bench bench-runtimes bench-llamacpp bench-generation-agents bench-speculative bench-priority bench-upstream bench-encoders bench-extract bench-images bench-ocr bench-store bench-traces bench-self-service bench-fleet bench-residency bench-generation bench-overload bench-tune bench-lora chaos clean

all: build

setup:
	@scripts/setup

configure: setup
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

# Everything: the binary, every test, benchmark and fuzz target.
build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# Builds only what it runs (the shoal binary; the bundled models come from
# models/ and node_modules), so a first `make up` does not wait for the tests.
up: configure
	@echo "build: the shoal binary"
	@cmake --build $(BUILD) -j $(JOBS) --target shoal
	$(BUILD)/shoal up

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Every fuzz target for FUZZ_SECONDS each (clang + libFuzzer, in build-fuzz/);
# `make test` runs them for 10 s each. See docs/operations.md "Fuzzing".
FUZZ_SECONDS ?= 300
fuzz: setup
	scripts/fuzz $(FUZZ_SECONDS) --out build-fuzz/fuzz.json --figures docs/bench/overload-chaos.json

bench: build
	scripts/bench-serving-plane

# A runtime process against the same runtime in the worker, and one encoder
# in the native, ONNX Runtime and PyTorch runtimes (about three minutes).
bench-runtimes: build
	$(BUILD)/bench/runtimes_bench

# llama.cpp through Shoal against llama.cpp alone, F16 and Q8_0, concurrency
# 1, 8 and 32 (about five minutes).
bench-llamacpp: build
	$(BUILD)/bench/llamacpp_bench

# The native runtime against llama.cpp on the same f32 weights, free and held
# to a JSON schema, concurrency 1, 8 and 32 (about five minutes).
bench-generation-agents: build
	$(BUILD)/bench/generation_agents_bench

# Speculative decoding with and without drafts (an agreeing draft model, a
# disagreeing one, prompt lookup), concurrency 1 and 8 (about three minutes).
bench-speculative: build
	$(BUILD)/bench/speculative_bench

# Interactive latency beside a flood of batch work, with and without
# priority classes (about four minutes).
bench-priority: build
	$(BUILD)/bench/priority_bench

# Shoal in front of llama-server against llama-server alone: embeddings and
# generation at the knee (about five minutes, plus llama-server's first build).
bench-upstream: build
	$(BUILD)/bench/upstream_bench

# Shoal's encoder engine against PyTorch (f32 and bf16) and ONNX Runtime on the
# MiniLM-L6, BERT-base, ModernBERT-base and XLM-R-base shapes (about 30 minutes).
bench-encoders: build
	$(BUILD)/bench/encoders_bench --out docs/bench/encoders.json

# What NER, SPLADE and ColBERT add to an encoder forward pass (about three minutes, plus the
# bench models' first build).
bench-extract: build
	$(BUILD)/bench/extract_bench --out docs/bench/extract.json

# Decoding and preparing a 1 MP JPEG for CLIP, against PIL and numpy; then a
# ViT-B/16 image tower against PyTorch and ONNX Runtime (about five minutes).
bench-images: build
	$(BUILD)/bench/images_bench

# OCR of an A4 page through the serving path: pages per second and character
# accuracy (about a minute).
bench-ocr: build
	$(BUILD)/bench/ocr_bench

# Pulling workers against a pushing router on a fleet of models (about seven minutes).
bench-fleet: build
	$(BUILD)/bench/pull_vs_push_bench --out docs/bench/pull-vs-push.json

# The model store: a 100 MB model from push to its first answer, cold and
# cached, and the fetch rate (about a minute; docs/bench/fleet.json).
bench-store: build
	$(BUILD)/bench/model_store_bench --out docs/bench/fleet.json

# What tracing costs the serving path: off, traced, traced to a hung
# collector (about two minutes; docs/bench/traces.json).
bench-traces: build
	$(BUILD)/bench/traces_bench --out docs/bench/traces.json

# The promotion path: a registration through the admin API, without and with
# the shipped evaluations attached, on USE-Lite and a MiniLM-L6 shape; then
# int8 against f32, bf16, ONNX Runtime and llama.cpp Q8_0 (about eight minutes).
bench-self-service: build
	$(BUILD)/bench/self_service_bench --out docs/bench/self-service.json
	$(BUILD)/bench/int8_bench --out docs/bench/self-service.json

bench-residency: build
	$(BUILD)/bench/residency_bench --out docs/bench/residency.json

# Continuous batching against the Python reference's generate loop (about ten minutes).
bench-generation: build
	$(BUILD)/bench/generation_bench --out docs/bench/generation.json

# Admission control at twice the knee for 60 s (issue 7; about two minutes).
bench-overload: build
	$(BUILD)/bench/overload_bench --out docs/bench/overload-chaos.json

# The tuning loop (issue 8): `shoal tune` on USE-Lite and a BERT-base-shaped
# model, 10 minutes' budget each (about 20-25 minutes); writes the tuned entry
# into models/use-lite.yaml. See docs/operations.md "Tuning".
bench-tune: build
	$(BUILD)/bench/tune_bench --out docs/bench/tune.json

bench-lora: build
	$(BUILD)/bench/lora_bench --out docs/bench/lora.json

# The chaos suite (issue 7): a worker SIGKILLed mid-batch, nats-server and a
# gateway restarted, a 3-node JetStream cluster (network namespaces; needs
# root, else skipped) losing a node, all under load; fails if any request is
# lost. About 70 s. See docs/operations.md "Chaos".
chaos: build
	$(BUILD)/tests/shoal_chaos --out docs/bench/overload-chaos.json --fleet-out docs/bench/fleet.json

clean:
	rm -rf $(BUILD)
