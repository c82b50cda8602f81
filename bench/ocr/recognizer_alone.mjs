// The PP-OCRv4 recognizer alone in onnxruntime-node, for bench/ocr.cc: the
// milliseconds per text line of a batch of 8 lines 48 x 1440 (a full A4
// line at 150 dpi, as the pipeline feeds them), 2 intra-op threads as the
// sidecar runs it; one warm-up run, the median of 3.
//
//   node recognizer_alone.mjs MODEL.onnx   (prints {"ms_per_line": x})
import { createRequire } from 'node:module';

const require = createRequire(new URL('../../package.json', import.meta.url));
const ort = require('onnxruntime-node');
const session = await ort.InferenceSession.create(process.argv[2], {
  intraOpNumThreads: 2, interOpNumThreads: 1, graphOptimizationLevel: 'all', executionMode: 'sequential',
  logSeverityLevel: 3,
});
const [n, w] = [8, 1440];
const data = new Float32Array(n * 3 * 48 * w);
for (let i = 0; i < data.length; i++) data[i] = ((i * 2654435761) % 1000) / 500 - 1;
const x = new ort.Tensor('float32', data, [n, 3, 48, w]);
await session.run({ x });
const times = [];
for (let r = 0; r < 3; r++) {
  const t0 = performance.now();
  await session.run({ x });
  times.push((performance.now() - t0) / n);
}
times.sort((a, b) => a - b);
console.log(JSON.stringify({ ms_per_line: times[1] }));
