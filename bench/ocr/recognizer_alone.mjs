// The PP-OCRv4 recognizer alone in onnxruntime-node, for bench/ocr.cc: the
// milliseconds per text line of a batch of 8 lines 48 x WIDTH (a full A4
// line at 150 dpi, as the pipeline feeds them), 2 intra-op threads as the
// sidecar runs it — the graph as exported, and as the sidecar loads it
// after Shoal's graph passes (src/runtime/onnx/graph_passes.mjs). One
// warm-up run each, then 3 rounds alternated; the medians.
//
//   node recognizer_alone.mjs MODEL.onnx [WIDTH]   (default 1440)
//     prints {"ms_per_line": as exported, "ms_per_line_rewritten": x}
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { optimizeGraph } from '../../src/runtime/onnx/graph_passes.mjs';

const require = createRequire(new URL('../../package.json', import.meta.url));
const ort = require('onnxruntime-node');
const options = {
  intraOpNumThreads: 2, interOpNumThreads: 1, graphOptimizationLevel: 'all', executionMode: 'sequential',
  logSeverityLevel: 3,
};
const exported = new Uint8Array(fs.readFileSync(process.argv[2]));
const sessions = [
  await ort.InferenceSession.create(exported, options),
  await ort.InferenceSession.create(optimizeGraph(exported).bytes ?? exported, options),
];
const [n, w] = [8, Number(process.argv[3] ?? 1440)];
const data = new Float32Array(n * 3 * 48 * w);
for (let i = 0; i < data.length; i++) data[i] = ((i * 2654435761) % 1000) / 500 - 1;
const x = new ort.Tensor('float32', data, [n, 3, 48, w]);
for (const s of sessions) await s.run({ x });
const times = sessions.map(() => []);
for (let r = 0; r < 3; r++) {
  for (let k = 0; k < sessions.length; k++) {
    const t0 = performance.now();
    await sessions[k].run({ x });
    times[k].push((performance.now() - t0) / n);
  }
}
const median = (t) => t.sort((a, b) => a - b)[1];
console.log(JSON.stringify({ ms_per_line: median(times[0]), ms_per_line_rewritten: median(times[1]) }));
