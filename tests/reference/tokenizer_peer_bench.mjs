// The peer figure for bench/tokenizer_bench: @lenml/tokenizers encoding the
// same corpus, single-threaded, special tokens on, after a warm-up (so its
// word cache is warm too). Prints one line per tokenizer:
//   NAME MB_PER_S TOKENS_PER_S
//
//   node tokenizer_peer_bench.mjs CORPUS.jsonl [SECONDS]
import { readFileSync } from "node:fs";

const [corpusPath, secondsArg] = process.argv.slice(2);
const seconds = Number(secondsArg ?? 2);
const texts = readFileSync(corpusPath, "utf8")
  .split("\n")
  .filter((l) => l.length > 0)
  .map((l) => JSON.parse(l));
const bytes = texts.reduce((n, s) => n + Buffer.byteLength(s), 0);

for (const name of ["qwen3", "llama3", "gemma3"]) {
  const { fromPreTrained } = await import(`@lenml/tokenizer-${name}`);
  const tokenizer = fromPreTrained();
  for (let i = 0; i < 3; ++i) for (const t of texts) tokenizer.encode(t);
  let tokens = 0;
  let rounds = 0;
  const start = performance.now();
  while (performance.now() - start < seconds * 1000) {
    for (const t of texts) tokens += tokenizer.encode(t).length;
    ++rounds;
  }
  const elapsed = (performance.now() - start) / 1000;
  console.log(`${name} ${((bytes * rounds) / elapsed / 1e6).toFixed(3)} ${(tokens / elapsed).toFixed(0)}`);
}
