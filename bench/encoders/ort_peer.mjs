#!/usr/bin/env node
// onnxruntime-node peer for the encoder benchmark.
//
// usage: node bench/encoders/ort_peer.mjs MODEL.onnx [--seq 128] [--batches 1,8,32]
//            [--seconds S] [--threads 1,2]
//
// The model is export_onnx.py's export of the torch peer's module. First, when
// MODEL.onnx.check.json is there, runs its input and prints the maximum
// absolute difference from the torch module's output (the peers must compute
// the same model). Sessions use graph optimizations "all", sequential
// execution, one inter-op thread. Each intra-op thread count (1, 2) is timed
// at batch 8 for a short while; the faster one runs the measurement proper:
// for each batch size, seeded random ids, one warm-up, repeats for S seconds
// (at least 3), median time -> tokens/s; batch-1 latency is the median
// batch-1 time.
//
// Last line of stdout: {"peer":"ort","threads":..,"b1_tokens_per_s":.., ...,
// "b1_latency_ms":..} plus the 1-minute load average at the start (the machine
// is shared), the check's max abs diff and "tried_at_batch_8".
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const ort = require('onnxruntime-node');

function parseArgs(argv) {
  const opts = { seq: 128, batches: [1, 8, 32], seconds: 5, threads: [1, 2] };
  const rest = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--seq') opts.seq = Number(argv[++i]);
    else if (a === '--batches') opts.batches = argv[++i].split(',').map(Number);
    else if (a === '--seconds') opts.seconds = Number(argv[++i]);
    else if (a === '--threads') opts.threads = argv[++i].split(',').map(Number);
    else rest.push(a);
  }
  if (rest.length !== 1) {
    console.error('usage: ort_peer.mjs MODEL.onnx [--seq 128] [--batches 1,8,32] [--seconds S]'
      + ' [--threads 1,2]');
    process.exit(2);
  }
  opts.model = rest[0];
  return opts;
}

function session(model, threads) {
  return ort.InferenceSession.create(model, {
    graphOptimizationLevel: 'all',
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    executionProviders: ['cpu'],
  });
}

const int64 = (values, dims) => new ort.Tensor('int64', BigInt64Array.from(values, BigInt), dims);

function feeds(ids, mask, types, dims) {
  return {
    input_ids: int64(ids, dims),
    attention_mask: int64(mask, dims),
    token_type_ids: int64(types, dims),
  };
}

// Runs the export's check input; returns the max |ort - torch|.
async function check(model, checkPath) {
  const c = JSON.parse(fs.readFileSync(checkPath, 'utf8'));
  const s = await session(model, 1);
  const out = await s.run(feeds(c.input_ids, c.attention_mask, c.token_type_ids, c.shape));
  const got = out[s.outputNames[0]].data;
  if (got.length !== c.output.length) {
    throw new Error(`check: ${got.length} outputs, torch had ${c.output.length}`);
  }
  let diff = 0;
  for (let i = 0; i < got.length; i++) diff = Math.max(diff, Math.abs(got[i] - c.output[i]));
  return diff;
}

// Small seeded generator (mulberry32), so every run uses the same ids.
function rng(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

async function timeRuns(fn, seconds, minRuns = 3) {
  await fn(); // warm-up
  const times = [];
  const deadline = performance.now() + seconds * 1e3;
  while (times.length < minRuns || performance.now() < deadline) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  return [median(times), times.length];
}

async function measure(opts, threads, batches, seconds, vocabLow, vocabHigh) {
  const s = await session(opts.model, threads);
  const next = rng(1234);
  const label = `ort intra-op ${threads}`;
  const result = { threads: label };
  for (const b of batches) {
    const n = b * opts.seq;
    const ids = Array.from({ length: n },
      () => vocabLow + Math.floor(next() * (vocabHigh - vocabLow)));
    const f = feeds(ids, new Array(n).fill(1), new Array(n).fill(0), [b, opts.seq]);
    const [ms, runs] = await timeRuns(() => s.run(f), seconds);
    result[`b${b}_tokens_per_s`] = Math.round((n / ms) * 1e4) / 10;
    if (b === 1) result.b1_latency_ms = Math.round(ms * 100) / 100;
    console.error(`ort_peer: ${label}: batch ${b}: ${ms.toFixed(1)} ms median of ${runs}`);
  }
  await s.release?.();
  return result;
}

// The vocabulary size from the model directory's config.json when it sits
// beside the export as build-models/onnx/NAME.onnx -> build-models/NAME/;
// else ids below 1000 (valid for every vocabulary here).
function idRange(model) {
  const name = path.basename(model, '.onnx');
  const here = path.dirname(model);
  for (const dir of [path.join(here, '..', name), path.join(here, name)]) {
    try {
      const vocab = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')).vocab_size;
      return [Math.min(1000, vocab >> 1), vocab];
    } catch { /* next */ }
  }
  return [4, 1000];
}

const opts = parseArgs(process.argv.slice(2));
const checkPath = opts.model + '.check.json';
let maxAbsDiff = null;
if (fs.existsSync(checkPath)) {
  maxAbsDiff = await check(opts.model, checkPath);
  console.log(`ort_peer: check against torch: max abs diff ${maxAbsDiff.toExponential(2)}`);
}
const load = Math.round(os.loadavg()[0] * 100) / 100;
const [low, high] = idRange(opts.model);
const tried = {};
let best = null;
for (const t of opts.threads) {
  const r = await measure(opts, t, [8], Math.min(opts.seconds, 3), low, high);
  tried[r.threads] = r;
  if (best === null || r.b8_tokens_per_s > tried[`ort intra-op ${best}`].b8_tokens_per_s) best = t;
}
const result = await measure(opts, best, opts.batches, opts.seconds, low, high);
console.log(JSON.stringify({
  peer: 'ort', ...result, model: path.basename(opts.model, '.onnx'), seq: opts.seq,
  onnxruntime: ort.env.versions?.common ?? null, loadavg_1m: load, check_max_abs_diff: maxAbsDiff,
  tried_at_batch_8: tried,
}));
