#!/usr/bin/env node
// onnxruntime-node peer of the image-tower benchmark (bench/images.cc).
//
// usage: node bench/images/ort_peer.mjs MODEL.onnx BATCH REPEATS
//
// The model is bench/images/vit_peer.py's export of the PyTorch peer's module
// (input pixel_values [B, 3, S, S]). Sessions use graph optimizations "all",
// sequential execution, one inter-op thread; intra-op 1 and 2 threads are
// each timed on one batch after a warm-up, and the faster runs the
// measurement: one warm-up, then REPEATS timed batches of seeded random pixel
// values. Last line: {"peer": "ort", "threads": T, "images_per_s": [...]}.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const ort = require('onnxruntime-node');

const [model, batchArg, repeatsArg] = process.argv.slice(2);
if (!model || !batchArg || !repeatsArg) {
  console.error('usage: ort_peer.mjs MODEL.onnx BATCH REPEATS');
  process.exit(2);
}
const batch = Number(batchArg), repeats = Number(repeatsArg);

let seed = 1;
const uniform = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);

async function main() {
  const open = (threads) => ort.InferenceSession.create(model, {
    graphOptimizationLevel: 'all', executionMode: 'sequential', intraOpNumThreads: threads, interOpNumThreads: 1,
  });
  const probe = await open(1);
  const dims = probe.inputMetadata?.[0]?.shape;
  const side = typeof dims?.[2] === 'number' ? dims[2] : 224;
  const data = new Float32Array(batch * 3 * side * side);
  for (let i = 0; i < data.length; i++) data[i] = uniform() * 4 - 2;
  const feeds = { pixel_values: new ort.Tensor('float32', data, [batch, 3, side, side]) };
  const time = async (s) => {
    const t0 = process.hrtime.bigint();
    await s.run(feeds);
    return batch / (Number(process.hrtime.bigint() - t0) / 1e9);
  };
  let best = null;
  for (const threads of [1, 2]) {
    const s = threads === 1 ? probe : await open(threads);
    await s.run(feeds);  // warm-up
    const rate = await time(s);
    if (!best || rate > best.rate) best = { threads, rate, s };
  }
  const rates = [];
  for (let r = 0; r < repeats; r++) rates.push(await time(best.s));
  console.log(JSON.stringify({ peer: 'ort', threads: best.threads, images_per_s: rates }));
}
main().catch((e) => { console.error(e); process.exit(1); });
