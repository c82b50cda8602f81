// Runs an ONNX graph once with onnxruntime-node itself, for
// tests/integration/onnx_graph_test.cc: what the sidecar's "run" must give.
//
//   node onnx_graph_reference.mjs GRAPH.onnx INPUT_NAME INPUT.f32 D0,D1,... OUT.json
//
// INPUT.f32: little-endian float32 values of that shape. OUT.json: each
// output's {"name", "shape", "values"}.
import fs from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(new URL('../../package.json', import.meta.url));
const ort = require('onnxruntime-node');
const [graph, name, input, dims, out] = process.argv.slice(2);
const shape = dims.split(',').map(Number);
const bytes = fs.readFileSync(input);
const data = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
const session = await ort.InferenceSession.create(graph, { intraOpNumThreads: 1, logSeverityLevel: 3 });
const results = await session.run({ [name]: new ort.Tensor('float32', data, shape) });
fs.writeFileSync(out, JSON.stringify(session.outputNames.map((n) => (
  { name: n, shape: results[n].dims.map(Number), values: Array.from(results[n].data) }))));
